import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { type ParameterProblem, type PathProblem, runsJobs, runsKernels } from '../../models/parameters';
import type { IPreview, ITemplate, Lang } from '../../types';
import { ActionButton } from '../common/ActionButton';
import { Section } from '../common/Section';
import { AdvancedParameters } from './AdvancedParameters';
import { FlavorChoices } from './FlavorChoices';
import { JobPathPicker } from './JobPathPicker';
import { RunAfterField } from './RunAfterField';
import { TemplatePicker } from './TemplatePicker';
import { TemplateSummary } from './TemplateSummary';

/** Props of `LaunchSection`. */
export interface ILaunchSectionProps {
  templates: readonly ITemplate[];
  template: ITemplate | null;
  values: Readonly<Record<string, string>>;
  problems: Readonly<Record<string, ParameterProblem>>;
  preview: IPreview | null;
  previewError: string | null;
  path: string;
  pathProblem: PathProblem | null;
  /** The "Run after" field as typed, and whether it cannot be sent. */
  after: string;
  afterMalformed: boolean;
  canStartKernel: boolean;
  canSubmitJob: boolean;
  starting: boolean;
  submitting: boolean;
  lang: Lang;
  trans: TranslationBundle;
  onSelect: (name: string) => void;
  onValue: (name: string, value: string) => void;
  onPath: (path: string) => void;
  onAfter: (after: string) => void;
  onUseSelection: () => void;
  /** Choose the path in a file dialog; absent when the application has none. */
  onBrowse?: () => void;
  onStartKernel: () => void;
  onSubmitJob: () => void;
}

/** Choose a template, see where it would run and when, then start a kernel or submit a job. */
export function LaunchSection(props: ILaunchSectionProps): JSX.Element {
  const { template, trans, lang } = props;
  const flavorParameter = template?.parameters.find(p => p.name === 'flavor');
  return (
    <Section id="launch" title={trans.__('Launch')}>
      <TemplatePicker
        templates={props.templates}
        selected={template?.name ?? null}
        lang={lang}
        trans={trans}
        onSelect={props.onSelect}
      />
      {template === null ? (
        <div className="jp-hetero-empty">{trans.__('No templates yet.')}</div>
      ) : (
        <>
          <TemplateSummary template={template} lang={lang} trans={trans} />
          <FlavorChoices
            preview={props.preview}
            error={props.previewError}
            selectable={flavorParameter !== undefined}
            chosen={props.values.flavor ?? ''}
            lang={lang}
            trans={trans}
            onChoose={flavor => props.onValue('flavor', flavor)}
          />
          <AdvancedParameters
            parameters={template.parameters}
            values={props.values}
            problems={props.problems}
            trans={trans}
            onChange={props.onValue}
          />
          <div className="jp-hetero-actions">
            <ActionButton
              primary
              className="jp-hetero-start-kernel"
              label={props.starting ? trans.__('Starting kernel…') : trans.__('Start kernel')}
              title={
                runsKernels(template)
                  ? trans.__('Start a kernel of this template and open a notebook on it')
                  : trans.__('This template does not run kernels')
              }
              disabled={!props.canStartKernel}
              onClick={props.onStartKernel}
            />
          </div>
          <JobPathPicker
            path={props.path}
            problem={props.pathProblem}
            trans={trans}
            onChange={props.onPath}
            onUseSelection={props.onUseSelection}
            onBrowse={props.onBrowse}
          />
          <RunAfterField
            value={props.after}
            malformed={props.afterMalformed}
            trans={trans}
            onChange={props.onAfter}
          />
          <div className="jp-hetero-actions">
            <ActionButton
              primary
              className="jp-hetero-submit-job"
              label={props.submitting ? trans.__('Submitting…') : trans.__('Submit job')}
              title={
                runsJobs(template)
                  ? trans.__('Submit the script or notebook as a job of this template')
                  : trans.__('This template does not run jobs')
              }
              disabled={!props.canSubmitJob}
              onClick={props.onSubmitJob}
            />
          </div>
        </>
      )}
    </Section>
  );
}
