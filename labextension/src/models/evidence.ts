import type { IWorkloadEvidence } from '../types';

/** The parts of a workload's evidence chain, in the order the server gives them. */
export type EvidenceSectionKey =
  | 'request'
  | 'attempts'
  | 'wait'
  | 'utilisation'
  | 'alerts'
  | 'preemptions'
  | 'release'
  | 'events'
  | 'audit';

/** Every section, in order. */
export const EVIDENCE_SECTIONS: readonly EvidenceSectionKey[] = [
  'request',
  'attempts',
  'wait',
  'utilisation',
  'alerts',
  'preemptions',
  'release',
  'events',
  'audit'
];

/** One collapsible block of the evidence view: how many entries it holds, and whether it starts open. */
export interface IEvidenceSection {
  key: EvidenceSectionKey;
  count: number;
  open: boolean;
}

/** One recorded change of what a workload waited on. */
export interface IBlockersAt {
  attempt: number;
  at: number;
  messages: string[];
}

/**
 * The sections of a chain, in order: each with its number of entries, open when it is where a reader
 * starts (the release) or what needs their eye (a broken audit chain, a preemption).
 *
 * ```ts
 * evidenceSections(chain).map(s => s.key);   // ['request', 'attempts', ..., 'audit']
 * ```
 */
export function evidenceSections(evidence: IWorkloadEvidence): IEvidenceSection[] {
  const counts: Record<EvidenceSectionKey, number> = {
    request: 1,
    attempts: evidence.attempts.length,
    wait: evidence.wait.length,
    utilisation: evidence.utilisation.attempts.length,
    alerts: evidence.alerts.length,
    preemptions: evidence.preemptions.length,
    release: 1,
    events: evidence.events.length,
    audit: evidence.audit.entries.length
  };
  const broken = !evidence.audit.verification.intact;
  return EVIDENCE_SECTIONS.map(key => ({
    key,
    count: counts[key],
    open: key === 'release' || (key === 'audit' && broken) || (key === 'preemptions' && counts[key] > 0)
  }));
}

/** What the workload waited on over time, every wait's recorded blockers in order. */
export function blockersOverTime(evidence: IWorkloadEvidence): IBlockersAt[] {
  return evidence.wait.flatMap(wait =>
    wait.blockers.map(step => ({
      attempt: wait.attempt,
      at: step.at,
      messages: step.blockers.map(blocker => blocker.message)
    }))
  );
}

/** Seconds it waited to be admitted, over all its waits that ended in an admission. */
export function totalWaitSeconds(evidence: IWorkloadEvidence): number {
  return evidence.wait.reduce((sum, wait) => sum + (wait.waited_s ?? 0), 0);
}
