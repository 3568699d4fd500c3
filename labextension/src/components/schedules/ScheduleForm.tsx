import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IFormError } from '../../models/schedules';
import {
  CronPreset,
  DraftField,
  DraftProblem,
  IScheduleDraft,
  MissedRule,
  NAME_MAX,
  presetOf,
  SchedulePayload
} from '../../models/scheduleForm';
import type { ITemplate, Lang } from '../../types';
import { ActionButton } from '../common/ActionButton';
import { JobPathPicker } from '../launch/JobPathPicker';
import { TemplatePicker } from '../launch/TemplatePicker';

/** Props of `ScheduleForm`. */
export interface IScheduleFormProps {
  draft: Readonly<IScheduleDraft>;
  problems: Partial<Record<DraftField, DraftProblem>>;
  /** What the server refused of the last draft sent. */
  error: IFormError | null;
  /** The tenant's templates that run jobs. */
  templates: readonly ITemplate[];
  /** IANA zones to suggest; may be empty. */
  timeZones: readonly string[];
  creating: boolean;
  canCreate: boolean;
  /** Whether the form edits a schedule (filled with it; saving sends what changed), not a new one. */
  editing?: boolean;
  /** An edited schedule's job is a notebook cell's code: the form offers to keep it. */
  keepsCode?: boolean;
  lang: Lang;
  trans: TranslationBundle;
  onChange: (change: Partial<IScheduleDraft>) => void;
  onPreset: (preset: CronPreset) => void;
  onUseSelection: () => void;
  onBrowse?: () => void;
  onCreate: () => void;
  onCancel: () => void;
}

/** The server's refusal under the field it names; the field's API name is said unless the message says it. */
function ServerProblem(props: { error: IFormError | null; at: DraftField | null; trans: TranslationBundle }): JSX.Element | null {
  const { error, trans } = props;
  if (error === null || error.at !== props.at) {
    return null;
  }
  const text =
    error.field === null || error.message.includes(error.field)
      ? error.message
      : trans.__('%1: %2', error.field, error.message);
  return (
    <span className="jp-hetero-field-problem jp-hetero-schedule-server-problem" role="alert" data-field={error.field ?? ''}>
      {text}
    </span>
  );
}

/** A problem found before sending, in words. */
function ProblemText(props: { problem: DraftProblem | undefined; trans: TranslationBundle }): JSX.Element | null {
  const { problem, trans } = props;
  let text: string | null = null;
  if (problem === 'too-long') {
    text = trans.__('At most %1 characters.', NAME_MAX);
  } else if (problem === 'unclosed-quote') {
    text = trans.__('A quote is not closed.');
  } else if (problem === 'not-five-fields') {
    text = trans.__('A cron has five fields: minute hour day-of-month month day-of-week.');
  }
  return text === null ? null : (
    <span className="jp-hetero-field-problem" role="alert">
      {text}
    </span>
  );
}

/** The "New schedule" form: name, template, what runs, cadence (presets or cron), time zone and missed runs. */
export function ScheduleForm(props: IScheduleFormProps): JSX.Element {
  const { draft, problems, error, trans } = props;
  const editing = props.editing ?? false;
  const payloads: Array<[SchedulePayload, string]> = [
    ['file', trans.__('Script or notebook')],
    ['command', trans.__('Command')]
  ];
  if (props.keepsCode) {
    payloads.unshift(['code', trans.__('Its notebook cell’s code, as it is')]);
  }
  let saveLabel = props.creating ? trans.__('Creating…') : trans.__('Create schedule');
  if (editing) {
    saveLabel = props.creating ? trans.__('Saving…') : trans.__('Save changes');
  }
  const invalid = (field: DraftField): boolean =>
    (problems[field] !== undefined && problems[field] !== 'empty') || error?.at === field;
  const missedHint =
    draft.missed === 'skip'
      ? trans.__('Runs missed while the server was down are skipped; it runs next at the next due time.')
      : trans.__('Runs missed while the server was down are submitted once, late, when it is back.');
  return (
    <form
      className="jp-hetero-schedule-form"
      data-mode={editing ? 'edit' : 'create'}
      aria-label={editing ? trans.__('Edit schedule') : trans.__('New schedule')}
      onSubmit={event => {
        event.preventDefault();
        if (props.canCreate) {
          props.onCreate();
        }
      }}
    >
      <div className="jp-hetero-field">
        <label className="jp-hetero-field-label" htmlFor="jp-hetero-schedule-name">
          {trans.__('Name')}
        </label>
        <input
          id="jp-hetero-schedule-name"
          className="jp-mod-styled"
          type="text"
          value={draft.name}
          maxLength={NAME_MAX + 20}
          placeholder={trans.__('e.g. nightly-report')}
          aria-invalid={invalid('name')}
          onChange={event => props.onChange({ name: event.target.value })}
        />
        <ProblemText problem={problems.name} trans={trans} />
        <ServerProblem error={error} at="name" trans={trans} />
      </div>
      <TemplatePicker
        templates={props.templates}
        selected={draft.template || null}
        lang={props.lang}
        trans={trans}
        onSelect={template => props.onChange({ template })}
      />
      <ServerProblem error={error} at="template" trans={trans} />
      <fieldset className="jp-hetero-field jp-hetero-schedule-payload">
        <legend className="jp-hetero-field-label">{trans.__('What runs')}</legend>
        {payloads.map(([value, label]) => (
          <label key={value} className="jp-hetero-radio">
            <input
              type="radio"
              name="jp-hetero-schedule-payload"
              value={value}
              checked={draft.payload === value}
              onChange={() => props.onChange({ payload: value })}
            />
            {label}
          </label>
        ))}
      </fieldset>
      {draft.payload === 'code' ? null : draft.payload === 'file' ? (
        <JobPathPicker
          path={draft.path}
          problem={problems.path === 'not-runnable' ? 'not-runnable' : null}
          trans={trans}
          onChange={path => props.onChange({ path })}
          onUseSelection={props.onUseSelection}
          onBrowse={props.onBrowse}
        />
      ) : (
        <div className="jp-hetero-field">
          <label className="jp-hetero-field-label" htmlFor="jp-hetero-schedule-command">
            {trans.__('Command')}
          </label>
          <input
            id="jp-hetero-schedule-command"
            className="jp-mod-styled"
            type="text"
            value={draft.command}
            placeholder={trans.__('e.g. python export.py --day yesterday')}
            aria-invalid={invalid('command')}
            onChange={event => props.onChange({ command: event.target.value })}
          />
          <ProblemText problem={problems.command} trans={trans} />
        </div>
      )}
      <ServerProblem error={error} at={draft.payload === 'file' ? 'path' : 'command'} trans={trans} />
      <div className="jp-hetero-field jp-hetero-schedule-cadence">
        <label className="jp-hetero-field-label" htmlFor="jp-hetero-schedule-preset">
          {trans.__('When it runs')}
        </label>
        <select
          id="jp-hetero-schedule-preset"
          value={presetOf(draft.cron)}
          onChange={event => props.onPreset(event.target.value as CronPreset)}
        >
          <option value="hourly">{trans.__('Every hour')}</option>
          <option value="daily">{trans.__('Every day at 02:00')}</option>
          <option value="weekly">{trans.__('Every Monday at 09:00')}</option>
          <option value="custom">{trans.__('Custom (cron)')}</option>
        </select>
        <label className="jp-hetero-field-label" htmlFor="jp-hetero-schedule-cron">
          {trans.__('Cron')}
        </label>
        <input
          id="jp-hetero-schedule-cron"
          className="jp-mod-styled"
          type="text"
          value={draft.cron}
          aria-invalid={invalid('cron')}
          aria-describedby="jp-hetero-schedule-cron-hint"
          onChange={event => props.onChange({ cron: event.target.value })}
        />
        <span className="jp-hetero-hint" id="jp-hetero-schedule-cron-hint">
          {trans.__('minute hour day-of-month month day-of-week, e.g. 30 6 * * MON-FRI; or @hourly, @daily, @weekly, @monthly')}
        </span>
        <ProblemText problem={problems.cron} trans={trans} />
        <ServerProblem error={error} at="cron" trans={trans} />
      </div>
      <div className="jp-hetero-field">
        <label className="jp-hetero-field-label" htmlFor="jp-hetero-schedule-timezone">
          {trans.__('Time zone')}
        </label>
        <input
          id="jp-hetero-schedule-timezone"
          className="jp-mod-styled"
          type="text"
          value={draft.timezone}
          list={props.timeZones.length > 0 ? 'jp-hetero-schedule-timezones' : undefined}
          aria-invalid={invalid('timezone')}
          onChange={event => props.onChange({ timezone: event.target.value })}
        />
        {props.timeZones.length > 0 && (
          <datalist id="jp-hetero-schedule-timezones">
            {props.timeZones.map(zone => (
              <option key={zone} value={zone} />
            ))}
          </datalist>
        )}
        <ServerProblem error={error} at="timezone" trans={trans} />
      </div>
      <fieldset className="jp-hetero-field jp-hetero-schedule-missed">
        <legend className="jp-hetero-field-label">{trans.__('Missed runs')}</legend>
        {(
          [
            ['run-once', trans.__('Run once, late')],
            ['skip', trans.__('Skip')]
          ] as Array<[MissedRule, string]>
        ).map(([value, label]) => (
          <label key={value} className="jp-hetero-radio">
            <input
              type="radio"
              name="jp-hetero-schedule-missed"
              value={value}
              checked={draft.missed === value}
              onChange={() => props.onChange({ missed: value })}
            />
            {label}
          </label>
        ))}
        <span className="jp-hetero-hint jp-hetero-schedule-missed-hint">{missedHint}</span>
        <ServerProblem error={error} at="missed" trans={trans} />
      </fieldset>
      <ServerProblem error={error} at={null} trans={trans} />
      <div className="jp-hetero-actions">
        <ActionButton
          primary
          className="jp-hetero-create-schedule"
          label={saveLabel}
          disabled={!props.canCreate}
          onClick={props.onCreate}
        />
        <ActionButton className="jp-hetero-cancel-schedule" label={trans.__('Cancel')} onClick={props.onCancel} />
      </div>
    </form>
  );
}
