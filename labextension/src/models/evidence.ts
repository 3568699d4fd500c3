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

/** One recorded metric of the workload, summed up: how many samples, the last and the largest value. */
export interface ISeriesSummary {
  name: string;
  unit: string;
  count: number;
  last: number | null;
  peak: number | null;
}

/**
 * The metric series the chain carries (`utilisation.series`: name, unit, count and `[at, value, attempt]` points),
 * each as its name, unit, sample count, last and peak value; entries of another shape are left out.
 */
export function seriesSummaries(evidence: IWorkloadEvidence): ISeriesSummary[] {
  const summaries: ISeriesSummary[] = [];
  for (const series of evidence.utilisation.series) {
    const { name, unit, count, points } = series as { name?: unknown; unit?: unknown; count?: unknown; points?: unknown };
    if (typeof name !== 'string' || !Array.isArray(points)) {
      continue;
    }
    const values = points
      .map(point => (Array.isArray(point) ? point[1] : null))
      .filter((value): value is number => typeof value === 'number');
    summaries.push({
      name,
      unit: typeof unit === 'string' ? unit : '',
      count: typeof count === 'number' ? count : values.length,
      last: values.length > 0 ? values[values.length - 1] : null,
      peak: values.length > 0 ? Math.max(...values) : null
    });
  }
  return summaries;
}
