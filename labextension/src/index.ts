import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { FileDialog, IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator, nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';

import { addCommands, CommandIDs, openNotebookOnKernel, syncLauncherItems } from './commands';
import { apiLang } from './format';
import { HeteroModel, KernelUsageModel, messageOf, RUNNABLE } from './models';
import { FailureNotifier } from './notify';
import { HeteroPanel } from './panel';
import { RefreshPoll } from './poll';
import { HeteroService } from './service';
import { PlacementStatusItem } from './statusItem';

export { CommandIDs } from './commands';

/** The plugin id, also the key of its settings schema. */
const PLUGIN_ID = 'jupyter-hetero:plugin';

/** Gettext domain of every user-facing string of this extension. */
export const TRANSLATION_DOMAIN = 'jupyter_hetero';

/** Seconds between refreshes until the settings say otherwise. */
const DEFAULT_REFRESH_INTERVAL_S = 10;

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'A left-sidebar panel, status bar item, commands and launcher items for heterogeneous AI compute.',
  autoStart: true,
  optional: [
    ITranslator,
    ISettingRegistry,
    ICommandPalette,
    ILayoutRestorer,
    ILauncher,
    IStatusBar,
    INotebookTracker,
    IDefaultFileBrowser,
    IDocumentManager
  ],
  activate: (
    app: JupyterFrontEnd,
    translator: ITranslator | null,
    settingRegistry: ISettingRegistry | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    launcher: ILauncher | null,
    statusBar: IStatusBar | null,
    notebooks: INotebookTracker | null,
    fileBrowser: IDefaultFileBrowser | null,
    documents: IDocumentManager | null
  ): void => {
    const trans = (translator ?? nullTranslator).load(TRANSLATION_DOMAIN);
    const lang = apiLang(translator?.languageCode);
    const service = new HeteroService(undefined, lang);
    const model = new HeteroModel({ service, lang });
    const notifier = new FailureNotifier(trans, message =>
      Notification.error(message, { autoClose: 10000 })
    );
    model.failed.connect((_, failure) => notifier.notify(failure));
    model.alertFired.connect((_, alert) => {
      const text = trans.__('Hetero alert: %1', model.alertMessage(alert));
      if (alert.severity === 'info') {
        Notification.info(text, { autoClose: 10000 });
      } else {
        Notification.warning(text, { autoClose: false });
      }
    });
    let defaultTemplate = 'interactive';

    const panel = new HeteroPanel({
      model,
      trans,
      actions: {
        openLogs: id =>
          void app.commands
            .execute(CommandIDs.openLogs, { id })
            .catch(error => notifier.notify({ action: 'logs', message: messageOf(error) })),
        selectedPath: () => selectedFile(fileBrowser, trans),
        browsePath: documents
          ? () =>
              chooseJobFile(documents, translator ?? nullTranslator, trans).catch(error => {
                Notification.error(trans.__('Could not open the file dialog: %1', messageOf(error)));
                return null;
              })
          : undefined
      }
    });
    app.shell.add(panel, 'left', { rank: 600 });
    restorer?.add(panel, 'jupyter-hetero');
    // A job launched from the panel runs in the folder the file browser shows.
    model.launch.currentFolder = () => fileBrowser?.model.path ?? '';

    model.launch.kernelStarted.connect((_, kernel) => {
      Notification.success(trans.__('Kernel placed; opening a notebook on it.'), { autoClose: 4000 });
      openNotebookOnKernel(app, fileBrowser?.model.path ?? '', kernel.kernel_id).catch(error =>
        notifier.notify({ action: 'start-kernel', message: String(error?.message ?? error) })
      );
      void model.work.refresh();
    });
    model.launch.submitted.connect((_, workload) => {
      Notification.success(
        trans.__('Submitted workload %1 to queue %2.', workload.id, workload.queue),
        { autoClose: 5000 }
      );
      void model.work.refresh();
    });

    model.schedules.ran.connect((_, { schedule, workload }) => {
      Notification.success(trans.__('Schedule %1 submitted workload %2.', schedule.name, workload.id), {
        autoClose: 5000
      });
      void model.work.refresh();
    });
    model.schedules.created.connect((_, schedule) => {
      Notification.success(trans.__('Created schedule %1: %2.', schedule.name, schedule.description), {
        autoClose: 5000
      });
    });

    const overviewPoll = new RefreshPoll({
      name: 'jupyter-hetero:overview',
      refresh: () => model.refresh(),
      intervalS: DEFAULT_REFRESH_INTERVAL_S,
      retrySoon: () => model.unreachable
    });
    panel.disposed.connect(() => {
      overviewPoll.dispose();
      model.dispose();
    });

    addCommands({
      app,
      model,
      panel,
      service,
      trans,
      notebooks,
      fileBrowser,
      defaultTemplate: () => defaultTemplate,
      notify: failure => notifier.notify(failure)
    });
    if (palette) {
      const category = trans.__('Hetero');
      for (const command of [CommandIDs.openPanel, CommandIDs.refresh, CommandIDs.submitCurrentNotebook]) {
        palette.addItem({ command, category });
      }
    }
    if (launcher) {
      const items = new Map<string, IDisposable>();
      model.changed.connect(() => syncLauncherItems(launcher, model, trans, items));
    }

    let usagePoll: RefreshPoll | null = null;
    if (statusBar && notebooks) {
      const usage = new KernelUsageModel({ service });
      usage.failed.connect((_, failure) => notifier.notify(failure));
      trackNotebookKernel(notebooks, usage);
      const item = new PlacementStatusItem({ model: usage, trans, flavorLabel: f => model.flavorLabel(f) });
      const registered = statusBar.registerStatusItem('jupyter-hetero:placement', {
        item,
        align: 'left',
        rank: 5,
        isActive: () => usage.usage !== null,
        activeStateChanged: usage.changed
      });
      const poll = (usagePoll = new RefreshPoll({
        name: 'jupyter-hetero:kernel-usage',
        refresh: () => usage.refresh(),
        intervalS: DEFAULT_REFRESH_INTERVAL_S
      }));
      panel.disposed.connect(() => {
        poll.dispose();
        registered.dispose();
        usage.dispose();
      });
    }

    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          const apply = (): void => {
            const seconds = settings.get('refreshInterval').composite as number;
            overviewPoll.intervalS = seconds;
            if (usagePoll) {
              usagePoll.intervalS = seconds;
            }
            defaultTemplate = settings.get('defaultTemplate').composite as string;
            model.launch.defaultTemplate = defaultTemplate;
          };
          apply();
          settings.changed.connect(apply);
        })
        .catch(reason => {
          Notification.warning(
            trans.__('Could not load the Hetero settings; using the defaults: %1', messageOf(reason)),
            { autoClose: 8000 }
          );
        });
    }
  }
};

/** Point `usage` at the current notebook's kernel, following notebook and kernel changes. */
function trackNotebookKernel(notebooks: INotebookTracker, usage: KernelUsageModel): void {
  let watched: NotebookPanel | null = null;
  const follow = (): void => {
    usage.kernelId = watched?.sessionContext.session?.kernel?.id ?? null;
  };
  const watch = (panel: NotebookPanel | null): void => {
    watched?.sessionContext.kernelChanged.disconnect(follow);
    watched = panel;
    watched?.sessionContext.kernelChanged.connect(follow);
    follow();
  };
  notebooks.currentChanged.connect((_, panel) => watch(panel));
  watch(notebooks.currentWidget); // a notebook restored before the plugin activated
}

/** A job's script or notebook chosen in JupyterLab's file dialog; null when cancelled. */
async function chooseJobFile(
  manager: IDocumentManager,
  translator: ITranslator,
  trans: TranslationBundle
): Promise<string | null> {
  const result = await FileDialog.getOpenFiles({
    manager,
    translator,
    title: trans.__('Choose a script or notebook'),
    filter: item => (item.type === 'directory' || RUNNABLE.test(item.name) ? {} : null)
  });
  const file = result.button.accept ? result.value?.find(item => item.type !== 'directory') : undefined;
  return file?.path ?? null;
}

/** The path of the one file selected in the file browser; warns and gives null otherwise. */
function selectedFile(fileBrowser: IDefaultFileBrowser | null, trans: TranslationBundle): string | null {
  const first = fileBrowser?.selectedItems().next();
  if (!first || first.done || first.value.type === 'directory') {
    Notification.warning(trans.__('Select a .py script or .ipynb notebook in the file browser first.'), {
      autoClose: 5000
    });
    return null;
  }
  return first.value.path;
}

export default plugin;
