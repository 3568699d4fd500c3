import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IExplanation, IWorkload, IWorkloadEvidence, IWorkloadMetrics } from '../../types';
import { Section } from '../common/Section';
import { IWorkloadActions, WorkloadRow } from './WorkloadRow';

/** Props of `MyWorkSection`. */
export interface IMyWorkSectionProps extends IWorkloadActions {
  workloads: readonly IWorkload[];
  explanations: ReadonlyMap<number, IExplanation>;
  evidences: ReadonlyMap<number, IWorkloadEvidence>;
  metrics: ReadonlyMap<number, IWorkloadMetrics>;
  busy: ReadonlySet<number>;
  trans: TranslationBundle;
}

/** The caller's kernels and jobs, newest first. */
export function MyWorkSection(props: IMyWorkSectionProps): JSX.Element {
  const { trans, workloads } = props;
  return (
    <Section id="work" title={trans.__('My work')}>
      {workloads.length === 0 ? (
        <div className="jp-hetero-empty">{trans.__('Nothing submitted yet.')}</div>
      ) : (
        <ul className="jp-hetero-workloads">
          {workloads.map(workload => (
            <WorkloadRow
              key={workload.id}
              workload={workload}
              explanation={props.explanations.get(workload.id) ?? null}
              evidence={props.evidences.get(workload.id) ?? null}
              metrics={props.metrics.get(workload.id) ?? null}
              busy={props.busy.has(workload.id)}
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
          ))}
        </ul>
      )}
    </Section>
  );
}
