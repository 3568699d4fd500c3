import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatDuration } from '../../format';
import { formatWhen } from '../../models/scheduleForm';
import type { ISchedule, IScheduleRun } from '../../types';
import { ActionButton } from '../common/ActionButton';
import { RowConfirm } from '../common/RowConfirm';
import { StateBadge } from '../work/StateBadge';

/** What the user can do with a schedule. */
export interface IScheduleActions {
  onToggleRuns: (id: number) => void;
  onPause: (id: number) => void;
  onResume: (id: number) => void;
  onRunNow: (id: number) => void;
  /** Open the form filled with the schedule, to change it. */
  onEdit: (id: number) => void;
  /** Delete, once the user confirmed it in the row. */
  onDelete: (id: number) => void;
  /** Open a run's workload log. */
  onLogs: (workloadId: number) => void;
}

/** Props of `ScheduleRow`. */
export interface IScheduleRowProps extends IScheduleActions {
  schedule: ISchedule;
  expanded: boolean;
  busy: boolean;
  /** Now, in epoch milliseconds: "in 3 h" is counted from it. */
  now: number;
  /** The caller: someone else's schedule (an admin sees their tenant's) says whose it is. */
  me: string | null;
  trans: TranslationBundle;
}

/** What a schedule runs, in a few words: the file, the command or "notebook cell code". */
function payloadText(schedule: ISchedule, trans: TranslationBundle): string {
  const job = schedule.job;
  switch (job.payload) {
    case 'script':
      return job.script?.path ?? trans.__('a script');
    case 'notebook':
      return job.notebook?.path ?? trans.__('a notebook');
    case 'command':
      return (job.command ?? []).join(' ');
    default:
      return trans.__('code from a notebook cell');
  }
}

/** The translated name of a schedule state. */
function scheduleStateLabel(state: string, trans: TranslationBundle): string {
  return state === 'paused' ? trans.__('paused') : state === 'active' ? trans.__('active') : state;
}

/** When the next run is due: its time in the schedule's zone and how soon; or why there is none. */
function nextRun(schedule: ISchedule, now: number, trans: TranslationBundle): string {
  if (schedule.next_run_at === null) {
    return schedule.state === 'paused' ? trans.__('Next run: none while paused') : trans.__('Next run: none');
  }
  const inS = Math.max(0, schedule.next_run_at - now / 1000);
  return trans.__(
    'Next run: %1 (in %2)',
    formatWhen(schedule.next_run_at, schedule.timezone),
    formatDuration(inS, trans)
  );
}

/** One run in the expanded list: its workload, when it was due, its state, and "late" when it was made up. */
function RunItem(props: { run: IScheduleRun; timezone: string; trans: TranslationBundle; onLogs: (id: number) => void }): JSX.Element {
  const { run, trans } = props;
  return (
    <li className="jp-hetero-schedule-run" data-workload-id={run.workload} data-state={run.state}>
      <button
        type="button"
        className="jp-hetero-link jp-hetero-schedule-run-workload"
        title={trans.__('Open the log of workload %1', run.workload)}
        onClick={() => props.onLogs(run.workload)}
      >
        {trans.__('#%1', run.workload)}
      </button>
      <span className="jp-hetero-schedule-run-due">{trans.__('due %1', formatWhen(run.due_at, props.timezone))}</span>
      <StateBadge state={run.state} trans={trans} />
      {run.late && (
        <span
          className="jp-hetero-badge jp-hetero-schedule-run-late"
          title={trans.__('Submitted late: it was due while the server was down.')}
        >
          {trans.__('late')}
        </span>
      )}
    </li>
  );
}

/** One schedule: its cadence in words, zone, next and last run, the last error, its runs and its actions. */
export function ScheduleRow(props: IScheduleRowProps): JSX.Element {
  const { schedule: s, trans, busy, expanded } = props;
  const [confirming, setConfirming] = React.useState(false);
  const last = s.runs.length > 0 ? s.runs[0] : null;
  const runsId = `jp-hetero-schedule-runs-${s.id}`;
  return (
    <li className="jp-hetero-schedule" data-schedule-id={s.id} data-state={s.state}>
      <div className="jp-hetero-row jp-hetero-schedule-head">
        <span className="jp-hetero-schedule-name" title={s.cron}>
          {s.name}
        </span>
        <span className={`jp-hetero-badge jp-hetero-schedule-state jp-hetero-mod-${s.state}`} data-state={s.state}>
          {scheduleStateLabel(s.state, trans)}
        </span>
      </div>
      <div className="jp-hetero-schedule-description" title={s.cron}>
        {s.description}
      </div>
      <div className="jp-hetero-schedule-meta">
        {trans.__('%1 · template %2 · time zone %3', payloadText(s, trans), s.job.template, s.timezone)}
      </div>
      {props.me !== null && s.user !== props.me && (
        <div className="jp-hetero-schedule-owner">{trans.__('Owner %1, tenant %2', s.user, s.tenant)}</div>
      )}
      <div className="jp-hetero-schedule-next">{nextRun(s, props.now, trans)}</div>
      <div className="jp-hetero-schedule-last">
        {last !== null
          ? trans.__('Last run: %1, workload %2', formatWhen(last.submitted_at, s.timezone), last.workload)
          : s.last_run_at !== null
            ? trans.__('Last run: %1', formatWhen(s.last_run_at, s.timezone))
            : trans.__('Last run: none yet')}
        {last !== null && <StateBadge state={last.state} trans={trans} />}
      </div>
      {s.last_error && (
        <div className="jp-hetero-schedule-error" role="status">
          {trans.__('The last due run could not be submitted: %1', s.last_error)}
        </div>
      )}
      <div className="jp-hetero-actions jp-hetero-schedule-actions">
        {s.state === 'paused' ? (
          <ActionButton
            className="jp-hetero-action-resume"
            label={trans.__('Resume')}
            ariaLabel={trans.__('Resume schedule %1', s.name)}
            title={trans.__('Runs again from the next due time; runs due while paused are not made up.')}
            disabled={busy}
            onClick={() => props.onResume(s.id)}
          />
        ) : (
          <ActionButton
            className="jp-hetero-action-pause"
            label={trans.__('Pause')}
            ariaLabel={trans.__('Pause schedule %1', s.name)}
            disabled={busy}
            onClick={() => props.onPause(s.id)}
          />
        )}
        <ActionButton
          className="jp-hetero-action-run-now"
          label={trans.__('Run now')}
          ariaLabel={trans.__('Run schedule %1 now', s.name)}
          title={trans.__('Submit its job now, out of its cadence; the cadence stays as it is.')}
          disabled={busy}
          onClick={() => props.onRunNow(s.id)}
        />
        <ActionButton
          className="jp-hetero-action-edit"
          label={trans.__('Edit')}
          ariaLabel={trans.__('Edit schedule %1', s.name)}
          disabled={busy}
          onClick={() => props.onEdit(s.id)}
        />
        <ActionButton
          className="jp-hetero-action-delete"
          label={trans.__('Delete')}
          ariaLabel={trans.__('Delete schedule %1', s.name)}
          disabled={busy || confirming}
          onClick={() => setConfirming(true)}
        />
        <button
          type="button"
          className="jp-hetero-action jp-hetero-schedule-toggle-runs"
          aria-expanded={expanded}
          aria-controls={expanded ? runsId : undefined}
          onClick={() => props.onToggleRuns(s.id)}
        >
          {expanded ? trans.__('Hide runs') : trans.__('Runs (%1)', s.runs.length)}
        </button>
      </div>
      {confirming && (
        <RowConfirm
          className="jp-hetero-schedule-confirm"
          title={trans.__('Delete schedule %1?', s.name)}
          question={trans.__('Delete schedule %1? The workloads it submitted stay.', s.name)}
          confirm={{
            className: 'jp-hetero-action-confirm-delete',
            label: trans.__('Delete'),
            ariaLabel: trans.__('Yes, delete schedule %1', s.name)
          }}
          keepLabel={trans.__('Keep')}
          onConfirm={() => {
            setConfirming(false);
            props.onDelete(s.id);
          }}
          onKeep={() => setConfirming(false)}
        />
      )}
      {expanded && (
        <ul className="jp-hetero-schedule-runs" id={runsId} aria-label={trans.__('Recent runs of %1', s.name)}>
          {s.runs.length === 0 ? (
            <li className="jp-hetero-hint">{trans.__('No run yet.')}</li>
          ) : (
            s.runs.map(run => (
              <RunItem key={run.workload} run={run} timezone={s.timezone} trans={trans} onLogs={props.onLogs} />
            ))
          )}
        </ul>
      )}
    </li>
  );
}
