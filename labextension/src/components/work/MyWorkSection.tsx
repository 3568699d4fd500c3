import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { groupWork } from '../../models/arrays';
import type { IExplanation, IWorkload, IWorkloadEvidence, IWorkloadMetrics } from '../../types';
import { Section } from '../common/Section';
import { ArrayRow } from './ArrayRow';
import { IWorkloadActions, WorkloadRow } from './WorkloadRow';

/** Props of `MyWorkSection`. */
export interface IMyWorkSectionProps extends IWorkloadActions {
  workloads: readonly IWorkload[];
  explanations: ReadonlyMap<number, IExplanation>;
  evidences: ReadonlyMap<number, IWorkloadEvidence>;
  metrics: ReadonlyMap<number, IWorkloadMetrics>;
  busy: ReadonlySet<number>;
  /** The arrays whose tasks are shown under their row, by array id. */
  expandedArrays: ReadonlySet<number>;
  trans: TranslationBundle;
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
                key={`array-${entry.id}`}
                entry={entry}
                expanded={props.expandedArrays.has(entry.id)}
                explanations={props.explanations}
                evidences={props.evidences}
                metrics={props.metrics}
                busy={props.busy}
                trans={trans}
                onToggle={props.onToggleArray}
                onCancelArray={props.onCancelArray}
                onLogs={props.onLogs}
                onCancel={props.onCancel}
                onExplain={props.onExplain}
                onResubmit={props.onResubmit}
                onDismissExplanation={props.onDismissExplanation}
                onEvidence={props.onEvidence}
                onDismissEvidence={props.onDismissEvidence}
                onMetrics={props.onMetrics}
                onDismissMetrics={props.onDismissMetrics}
                evidencePageUrl={props.evidencePageUrl}
              />
            ) : (
              <WorkloadRow
                key={entry.workload.id}
                workload={entry.workload}
                explanation={props.explanations.get(entry.workload.id) ?? null}
                evidence={props.evidences.get(entry.workload.id) ?? null}
                metrics={props.metrics.get(entry.workload.id) ?? null}
                busy={props.busy.has(entry.workload.id)}
                trans={trans}
                onLogs={props.onLogs}
                onCancel={props.onCancel}
                onExplain={props.onExplain}
                onResubmit={props.onResubmit}
                onDismissExplanation={props.onDismissExplanation}
                onEvidence={props.onEvidence}
                onDismissEvidence={props.onDismissEvidence}
                onMetrics={props.onMetrics}
                onDismissMetrics={props.onDismissMetrics}
                evidencePageUrl={props.evidencePageUrl}
              />
            )
          )}
        </ul>
      )}
    </Section>
  );
}
