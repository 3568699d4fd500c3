import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { stateLabel } from '../../format';
import type { IArrayEntry } from '../../models/arrays';
import { ActionButton } from '../common/ActionButton';
import { BlockerList } from './BlockerList';
import { RowConfirm } from '../common/RowConfirm';
import { IWorkloadRowsProps, workloadRow } from './WorkloadRow';

/** Props of `ArrayRow`. */
export interface IArrayRowProps extends IWorkloadRowsProps {
  entry: IArrayEntry;
  /** Its tasks are shown under it. */
  expanded: boolean;
  onToggle: (arrayId: number) => void;
  /** Cancel every unfinished task, once the user confirmed it in the row. */
  onCancelArray: (arrayId: number) => void;
}

/** The array's tasks' states counted, as `jupyter hetero ls` counts them: "running 10, queued 80, succeeded 10". */
export function taskStates(entry: IArrayEntry, trans: TranslationBundle): string {
  const parts = entry.counts.map(([state, count]) => `${stateLabel(state, trans)} ${count}`);
  return parts.reduce((list, part) => trans.__('%1, %2', list, part));
}

/** An array's tasks as one row: its label and name, their states counted, when it was submitted, the blocker of its
 * tasks held by its limit; its tasks below it on demand, each the usual row; Cancel array, confirmed in the row. */
export function ArrayRow(props: IArrayRowProps): JSX.Element {
  const { entry, trans, expanded } = props;
  const [confirming, setConfirming] = React.useState(false);
  const busy = props.busy.has(entry.id);
  const tasksId = `jp-hetero-array-tasks-${entry.id}`;
  return (
    <li className="jp-hetero-workload jp-hetero-array" data-array-id={entry.id}>
      <div className="jp-hetero-row jp-hetero-workload-head">
        <span className="jp-hetero-workload-title" title={entry.name ?? entry.template}>
          {trans.__('Array %1 %2', entry.label, entry.name ?? entry.template)}
        </span>
      </div>
      <div className="jp-hetero-array-states">{taskStates(entry, trans)}</div>
      <div className="jp-hetero-workload-meta">
        {trans.__('Array of %1 tasks · template %2 · queue %3', entry.size, entry.template, entry.queue)}
      </div>
      <div className="jp-hetero-workload-meta jp-hetero-array-submitted">
        {trans.__('Submitted %1', new Date(entry.createdAt * 1000).toLocaleString())}
        {entry.tasks.length < entry.size && ` · ${trans.__('%1 of %2 tasks listed', entry.tasks.length, entry.size)}`}
      </div>
      {entry.blocker && <BlockerList blockers={[entry.blocker]} trans={trans} />}
      <div className="jp-hetero-row jp-hetero-workload-actions">
        <button
          type="button"
          className="jp-hetero-action jp-hetero-array-toggle"
          aria-expanded={expanded}
          aria-controls={expanded ? tasksId : undefined}
          onClick={() => props.onToggle(entry.id)}
        >
          {expanded ? trans.__('Hide tasks') : trans.__('Tasks (%1)', entry.tasks.length)}
        </button>
        {!entry.finished && (
          <ActionButton
            className="jp-hetero-action-cancel-array"
            label={trans.__('Cancel array')}
            ariaLabel={trans.__('Cancel every unfinished task of array %1', entry.label)}
            disabled={busy || confirming}
            onClick={() => setConfirming(true)}
          />
        )}
      </div>
      {confirming && (
        <RowConfirm
          className="jp-hetero-array-confirm"
          title={trans.__('Cancel array %1?', entry.label)}
          question={trans.__(
            'Cancel every unfinished task of array %1? Waiting tasks end at once, running ones within their queue\'s grace period.',
            entry.label
          )}
          confirm={{
            className: 'jp-hetero-action-confirm-cancel-array',
            label: trans.__('Cancel array'),
            ariaLabel: trans.__('Yes, cancel array %1', entry.label)
          }}
          keepLabel={trans.__('Keep')}
          onConfirm={() => {
            setConfirming(false);
            props.onCancelArray(entry.id);
          }}
          onKeep={() => setConfirming(false)}
        />
      )}
      {expanded && (
        <ul className="jp-hetero-workloads jp-hetero-array-tasks" id={tasksId} aria-label={trans.__('Tasks of array %1', entry.label)}>
          {entry.tasks.map(task => workloadRow(props, task))}
        </ul>
      )}
    </li>
  );
}
