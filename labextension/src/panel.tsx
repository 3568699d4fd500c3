import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import {
  AdminSection,
  HeteroPanelView,
  ISectionTab,
  LaunchSection,
  MyWorkSection,
  NodesSection,
  QueuesSection,
  SchedulesSection,
  SectionId,
  ServicesSection
} from './components';
import { apiPageUrl } from './handler';
import { heteroIcon } from './icons';
import { HeteroModel, knownTimeZones } from './models';

/** DOM id of the Hetero sidebar panel; also what `shell.activateById` takes. */
export const PANEL_ID = 'jp-hetero-panel';

/** What the panel asks of the application, outside the model. */
export interface IPanelActions {
  /** Open a workload's log in the main area. */
  openLogs: (workloadId: number) => void;
  /** The path of the file selected in the file browser, or null. */
  selectedPath: () => string | null;
  /** Ask for a script or notebook in a file dialog; null when cancelled. Absent without a document manager. */
  browsePath?: () => Promise<string | null>;
}

/** The Hetero left-sidebar panel: maps the model to presentational components. */
export class HeteroPanel extends ReactWidget {
  constructor(options: HeteroPanel.IOptions) {
    super();
    this._model = options.model;
    this._trans = options.trans;
    this._actions = options.actions;
    this.id = PANEL_ID;
    this.addClass('jp-hetero-panel');
    this.title.icon = heteroIcon;
    this.title.label = this._trans.__('Hetero');
    this.title.caption = this._trans.__('Hetero');
  }

  /** The section shown. */
  get section(): SectionId {
    return this._section;
  }

  set section(id: SectionId) {
    this._section = id;
    this.update();
  }

  protected render(): JSX.Element {
    const model = this._model;
    return (
      <UseSignal signal={model.changed}>
        {() => {
          const tabs = this._tabs();
          const current = tabs.some(tab => tab.id === this._section) ? this._section : 'launch';
          return (
            <HeteroPanelView
              version={model.version}
              error={model.error}
              unreachable={model.unreachable}
              loading={model.loading}
              trans={this._trans}
              onRefresh={() => void model.refresh()}
              tabs={tabs}
              current={current}
              onSelect={id => (this.section = id)}
              alerts={model.alerts}
              alertMessage={alert => model.alertMessage(alert)}
            >
              {this._renderSection(current)}
            </HeteroPanelView>
          );
        }}
      </UseSignal>
    );
  }

  private _tabs(): ISectionTab[] {
    const trans = this._trans;
    const tabs: ISectionTab[] = [
      { id: 'launch', label: trans.__('Launch') },
      { id: 'queues', label: trans.__('Queues') },
      { id: 'work', label: trans.__('My work') },
      { id: 'schedules', label: trans.__('Schedules') },
      { id: 'services', label: trans.__('Services') },
      { id: 'nodes', label: trans.__('Nodes') }
    ];
    if (this._model.isAdmin) {
      tabs.push({ id: 'admin', label: trans.__('Admin') });
    }
    return tabs;
  }

  private _renderSection(id: SectionId): JSX.Element {
    const model = this._model;
    const trans = this._trans;
    const lang = model.lang;
    switch (id) {
      case 'queues':
        return <QueuesSection queues={model.queues} tenant={model.me?.tenant ?? null} lang={lang} trans={trans} />;
      case 'work': {
        const work = model.work;
        return (
          <MyWorkSection
            workloads={work.workloads}
            explanations={work.explanations}
            evidences={work.evidences}
            metrics={work.metrics}
            busy={work.busy}
            expandedArrays={work.expandedArrays}
            trans={trans}
            onToggleArray={id => void work.toggleArray(id)}
            onCancelArray={id => void work.cancelArray(id)}
            onLogs={this._actions.openLogs}
            onCancel={wid => void work.cancel(wid)}
            onExplain={wid => void work.explain(wid)}
            onResubmit={wid => void work.resubmit(wid)}
            onDismissExplanation={wid => work.dismissExplanation(wid)}
            onEvidence={wid => void work.showEvidence(wid)}
            onDismissEvidence={wid => work.dismissEvidence(wid)}
            onMetrics={wid => void work.showMetrics(wid)}
            onDismissMetrics={wid => work.dismissMetrics(wid)}
            evidencePageUrl={wid => work.evidencePageUrl(wid)}
          />
        );
      }
      case 'services':
        return (
          <ServicesSection
            services={model.services}
            history={model.serviceHistory}
            trans={trans}
            onRollBack={service => void model.rollBackService(service.name, service.tenant)}
          />
        );
      case 'schedules':
        return this._renderSchedules();
      case 'nodes':
        return <NodesSection nodes={model.nodes} trans={trans} />;
      case 'admin':
        return (
          <AdminSection
            tenants={model.tenants}
            role={model.me?.role ?? 'member'}
            lang={lang}
            trans={trans}
            reportUrl={apiPageUrl(`report?format=html&lang=${lang}`)}
            onboarding={model.onboarding}
          />
        );
      default: {
        const launch = model.launch;
        const { problems } = launch.parameters;
        const browse = this._actions.browsePath;
        return (
          <LaunchSection
            templates={launch.templates}
            template={launch.template}
            values={launch.raw}
            problems={problems}
            preview={launch.preview}
            previewError={launch.previewError}
            path={launch.path}
            pathProblem={launch.pathProblem}
            after={launch.after}
            afterMalformed={launch.afterMalformed}
            canStartKernel={launch.canStartKernel}
            canSubmitJob={launch.canSubmitJob}
            starting={launch.starting}
            submitting={launch.submitting}
            lang={lang}
            trans={trans}
            onSelect={name => launch.select(name)}
            onValue={(name, value) => launch.setValue(name, value)}
            onPath={path => launch.setPath(path)}
            onAfter={after => launch.setAfter(after)}
            onUseSelection={() => {
              const path = this._actions.selectedPath();
              if (path !== null) {
                launch.setPath(path);
              }
            }}
            onBrowse={browse && (() => void browse().then(path => path !== null && launch.setPath(path)))}
            onStartKernel={() => void launch.startKernel()}
            onSubmitJob={() => void launch.submitJob()}
          />
        );
      }
    }
  }

  private _renderSchedules(): JSX.Element {
    const schedules = this._model.schedules;
    const browse = this._actions.browsePath;
    const form = schedules.formOpen
      ? {
          draft: schedules.draft,
          problems: schedules.problems,
          error: schedules.formError,
          templates: schedules.templates,
          timeZones: (this._timeZones ??= knownTimeZones()),
          creating: schedules.creating,
          canCreate: schedules.canCreate,
          editing: schedules.editing !== null,
          keepsCode: schedules.editing?.original.payload === 'code',
          lang: this._model.lang,
          onChange: (change: Parameters<typeof schedules.setDraft>[0]) => schedules.setDraft(change),
          onPreset: (preset: Parameters<typeof schedules.setPreset>[0]) => schedules.setPreset(preset),
          onUseSelection: () => {
            const path = this._actions.selectedPath();
            if (path !== null) {
              schedules.setDraft({ path });
            }
          },
          onBrowse: browse && (() => void browse().then(path => path !== null && schedules.setDraft({ path }))),
          onCreate: () => void schedules.create(),
          onCancel: () => schedules.closeForm()
        }
      : null;
    return (
      <SchedulesSection
        schedules={schedules.schedules}
        expanded={schedules.expanded}
        busy={schedules.busy}
        now={Date.now()}
        me={this._model.me?.user ?? null}
        trans={this._trans}
        form={form}
        onNew={() => schedules.openForm()}
        onToggleRuns={id => schedules.toggleRuns(id)}
        onPause={id => void schedules.pause(id)}
        onResume={id => void schedules.resume(id)}
        onRunNow={id => void schedules.runNow(id)}
        onEdit={id => schedules.edit(id)}
        onDelete={id => void schedules.remove(id)}
        onLogs={this._actions.openLogs}
      />
    );
  }

  private readonly _model: HeteroModel;
  private readonly _trans: TranslationBundle;
  private readonly _actions: IPanelActions;
  private _section: SectionId = 'launch';
  private _timeZones: string[] | null = null;
}

/** Types belonging to `HeteroPanel`. */
export namespace HeteroPanel {
  export interface IOptions {
    model: HeteroModel;
    trans: TranslationBundle;
    actions: IPanelActions;
  }
}
