import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import {
  formatEta,
  formatMemory,
  formatPlacement,
  inadmissibleText,
  isFinished,
  kindLabel,
  num,
  secondsUntil
} from '../../format';
import type { IAttempt, IBlocker, IExplanation, IWorkload, IWorkloadEvidence, IWorkloadMetrics } from '../../types';
import { ActionButton } from '../common/ActionButton';
import { BlockerList } from './BlockerList';
import { EvidenceView } from './EvidenceView';
import { ExplanationView } from './ExplanationView';
import { MetricsView } from './MetricsView';
import { StateBadge } from './StateBadge';

/** What the user can do with a workload. */
export interface IWorkloadActions {
  onLogs: (id: number) => void;
  onCancel: (id: number) => void;
  onExplain: (id: number) => void;
  onResubmit: (id: number) => void;
  onDismissExplanation: (id: number) => void;
  onEvidence: (id: number) => void;
  onDismissEvidence: (id: number) => void;
  onMetrics: (id: number) => void;
  onDismissMetrics: (id: number) => void;
  /** Where a workload's evidence chain is as one HTML page. */
  evidencePageUrl: (id: number) => string;
}

/** Props of `WorkloadRow`. */
export interface IWorkloadRowProps extends IWorkloadActions {
  workload: IWorkload;
  explanation: IExplanation | null;
  evidence: IWorkloadEvidence | null;
  metrics: IWorkloadMetrics | null;
  busy: boolean;
  trans: TranslationBundle;
}

/** What a list of workload rows shares: the actions, and what the model holds of each workload by its id. */
export interface IWorkloadRowsProps extends IWorkloadActions {
  explanations: ReadonlyMap<number, IExplanation>;
  evidences: ReadonlyMap<number, IWorkloadEvidence>;
  metrics: ReadonlyMap<number, IWorkloadMetrics>;
  busy: ReadonlySet<number>;
  trans: TranslationBundle;
}

/** One workload's row in a list: what the list holds of it, and its actions. */
export function workloadRow(props: IWorkloadRowsProps, workload: IWorkload): JSX.Element {
  const id = workload.id;
  return (
    <WorkloadRow
      key={id}
      workload={workload}
      explanation={props.explanations.get(id) ?? null}
      evidence={props.evidences.get(id) ?? null}
      metrics={props.metrics.get(id) ?? null}
      busy={props.busy.has(id)}
      trans={props.trans}
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
  );
}

/** The latest attempt, if the workload was described with its attempts. */
function lastAttempt(workload: IWorkload): IAttempt | null {
  const attempts = workload.attempts ?? [];
  return attempts.length > 0 ? attempts[attempts.length - 1] : null;
}

/** Usage of the latest attempt in words: peak memory and, where measured, device utilisation. */
function usage(workload: IWorkload, trans: TranslationBundle): string | null {
  const metrics = lastAttempt(workload)?.metrics ?? {};
  const parts: string[] = [];
  if (typeof metrics.peak_rss_mib === 'number') {
    parts.push(trans.__('peak memory %1', formatMemory(metrics.peak_rss_mib)));
  }
  if (typeof metrics.device_util_pct_mean === 'number') {
    parts.push(trans.__('device utilisation %1%', num(metrics.device_util_pct_mean)));
  }
  return parts.length > 0 ? parts.join(' · ') : null;
}

/** Why earlier attempts ended, when any did: failures apart from preemptions and lost nodes. */
function endedAttempts(workload: IWorkload, trans: TranslationBundle): string | null {
  const failures = workload.failures ?? 0;
  const preemptions = workload.preemptions ?? 0;
  const losses = workload.node_losses ?? 0;
  if (failures + preemptions + losses === 0) {
    return null;
  }
  return trans.__(
    'Attempts %1: %2 failed, %3 preempted, %4 lost with their node',
    workload.attempt_count ?? 0,
    failures,
    preemptions,
    losses
  );
}

/**
 * Why an inadmissible workload waits: its blockers (in the user's language), or else its stored
 * reason, shown like a blocker.
 */
function inadmissibleBlockers(workload: IWorkload): IBlocker[] {
  if (workload.blockers && workload.blockers.length > 0) {
    return workload.blockers;
  }
  return workload.reason ? [{ kind: 'inadmissible', flavor: null, message: workload.reason, params: {} }] : [];
}

/** One of the caller's workloads: state, place in the queue, blockers, placement, usage and actions. */
export function WorkloadRow(props: IWorkloadRowProps): JSX.Element {
  const { workload: w, trans, busy } = props;
  const finished = isFinished(w.state);
  const inadmissible = w.state === 'inadmissible';
  // A finished workload no longer holds a placement; its last attempt says where it ran.
  const where = w.placement ?? lastAttempt(w)?.placement ?? null;
  const placement = formatPlacement(where);
  const used = usage(w, trans);
  const ended = endedAttempts(w, trans);
  return (
    <li className="jp-hetero-workload" data-workload-id={w.id} data-state={w.state}>
      <div className="jp-hetero-row jp-hetero-workload-head">
        <span className="jp-hetero-workload-title" title={w.name ?? w.template}>
          {trans.__('#%1 %2', w.id, w.name ?? w.template)}
        </span>
        <StateBadge state={w.state} trans={trans} />
      </div>
      <div className="jp-hetero-workload-meta">
        {trans.__('%1 · template %2 · queue %3', kindLabel(w.kind, trans), w.template, w.queue)}
      </div>
      {w.state === 'queued' && (
        <div className="jp-hetero-workload-wait">
          {typeof w.position === 'number' && trans.__('Position %1 in queue', w.position)}
          {typeof w.position === 'number' && ' · '}
          {formatEta(secondsUntil(w.eta), trans)}
        </div>
      )}
      {w.held_by === 'kueue' && (
        <div className="jp-hetero-workload-wait jp-hetero-mod-held">
          {typeof w.position === 'number'
            ? trans.__('Waiting for Kueue to admit it: position %1 in its LocalQueue', w.position)
            : trans.__('Waiting for Kueue to admit it')}
        </div>
      )}
      {inadmissible && (
        <div className="jp-hetero-workload-wait jp-hetero-mod-inadmissible">
          {inadmissibleText(w, trans)}
        </div>
      )}
      {!finished && <BlockerList blockers={inadmissible ? inadmissibleBlockers(w) : w.blockers ?? []} trans={trans} />}
      {placement && (
        <div className="jp-hetero-workload-placement">
          {trans.__('Placement: %1 on %2', where?.flavor ?? w.flavor ?? '', placement)}
        </div>
      )}
      {used && <div className="jp-hetero-workload-usage">{used}</div>}
      {ended && (
        <div
          className="jp-hetero-workload-attempts"
          title={trans.__('Only failures use up the retries of the queue; preemptions and lost nodes do not.')}
        >
          {ended}
        </div>
      )}
      {w.reason && !inadmissible && <div className="jp-hetero-workload-reason">{w.reason}</div>}
      {props.explanation && (
        <ExplanationView
          explanation={props.explanation}
          trans={trans}
          onDismiss={() => props.onDismissExplanation(w.id)}
        />
      )}
      {props.metrics && (
        <MetricsView metrics={props.metrics} trans={trans} onDismiss={() => props.onDismissMetrics(w.id)} />
      )}
      {props.evidence && (
        <EvidenceView
          evidence={props.evidence}
          pageUrl={props.evidencePageUrl(w.id)}
          trans={trans}
          onDismiss={() => props.onDismissEvidence(w.id)}
        />
      )}
      <div className="jp-hetero-row jp-hetero-workload-actions">
        <ActionButton
          className="jp-hetero-action-logs"
          label={trans.__('Logs')}
          ariaLabel={trans.__('Logs of workload %1', w.id)}
          onClick={() => props.onLogs(w.id)}
        />
        <ActionButton
          className="jp-hetero-action-explain"
          label={trans.__('Explain')}
          ariaLabel={trans.__('Explain workload %1', w.id)}
          disabled={busy}
          onClick={() => props.onExplain(w.id)}
        />
        <ActionButton
          className="jp-hetero-action-metrics"
          label={trans.__('Metrics')}
          ariaLabel={trans.__('Metrics of workload %1', w.id)}
          disabled={busy}
          onClick={() => props.onMetrics(w.id)}
        />
        <ActionButton
          className="jp-hetero-action-evidence"
          label={trans.__('Evidence')}
          ariaLabel={trans.__('Evidence of workload %1', w.id)}
          disabled={busy}
          onClick={() => props.onEvidence(w.id)}
        />
        {!finished && (
          <ActionButton
            className="jp-hetero-action-cancel"
            label={trans.__('Cancel')}
            ariaLabel={trans.__('Cancel workload %1', w.id)}
            disabled={busy}
            onClick={() => props.onCancel(w.id)}
          />
        )}
        {w.kind === 'job' && finished && (
          <ActionButton
            className="jp-hetero-action-resubmit"
            label={trans.__('Re-submit')}
            ariaLabel={trans.__('Re-submit workload %1', w.id)}
            disabled={busy}
            onClick={() => props.onResubmit(w.id)}
          />
        )}
      </div>
    </li>
  );
}
