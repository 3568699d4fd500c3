import * as React from 'react';

import { groupWork } from '../../models/arrays';
import type { IWorkload } from '../../types';
import { Section } from '../common/Section';
import { ArrayRow } from './ArrayRow';
import { IWorkloadRowsProps, workloadRow } from './WorkloadRow';

/** Props of `MyWorkSection`. */
export interface IMyWorkSectionProps extends IWorkloadRowsProps {
  workloads: readonly IWorkload[];
  /** The arrays whose tasks are shown under their row, by array id. */
  expandedArrays: ReadonlySet<number>;
  /** Show an array's tasks, or hide them again. */
  onToggleArray: (arrayId: number) => void;
  /** Cancel every unfinished task of an array (the user confirmed it). */
  onCancelArray: (arrayId: number) => void;
}

/** The caller's kernels and jobs, newest first; an array's tasks as one row, expandable to its tasks. */
export function MyWorkSection(props: IMyWorkSectionProps): JSX.Element {
  const { trans, workloads } = props;
  return (
    <Section id="work" title={trans.__('My work')}>
      {workloads.length === 0 ? (
        <div className="jp-hetero-empty">{trans.__('Nothing submitted yet.')}</div>
      ) : (
        <ul className="jp-hetero-workloads">
          {groupWork(workloads).map(entry =>
            entry.kind === 'array' ? (
              <ArrayRow
                {...props}
                key={`array-${entry.id}`}
                entry={entry}
                expanded={props.expandedArrays.has(entry.id)}
                onToggle={props.onToggleArray}
              />
            ) : (
              workloadRow(props, entry.workload)
            )
          )}
        </ul>
      )}
    </Section>
  );
}
