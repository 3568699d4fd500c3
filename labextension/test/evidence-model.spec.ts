import { describe, expect, it } from 'vitest';

import {
  EVIDENCE_SECTIONS,
  WorkModel,
  blockersOverTime,
  evidenceSections,
  seriesSummaries,
  totalWaitSeconds
} from '../src/models';
import * as build from './builders';
import { FakeService, record } from './fakes';

describe('evidenceSections', () => {
  it('lists every section in the server\'s order with its entries, the release and preemptions open', () => {
    const sections = evidenceSections(build.evidence());
    expect(sections.map(s => s.key)).toEqual([...EVIDENCE_SECTIONS]);
    expect(Object.fromEntries(sections.map(s => [s.key, s.count]))).toEqual({
      request: 1, attempts: 2, wait: 2, utilisation: 2, alerts: 0, preemptions: 1, release: 1, events: 1, audit: 1
    });
    expect(sections.filter(s => s.open).map(s => s.key)).toEqual(['preemptions', 'release']);
  });

  it('opens the audit section when the audit chain is broken', () => {
    const chain = build.evidence();
    chain.audit.verification = { intact: false, entries: 3, first_break: 3, problem: 'entry 3 was changed' };
    chain.preemptions = [];
    expect(evidenceSections(chain).filter(s => s.open).map(s => s.key)).toEqual(['release', 'audit']);
  });

  it('reads the blockers over time and the time waited from the waits', () => {
    const chain = build.evidence();
    expect(blockersOverTime(chain)).toEqual([
      { attempt: 2, at: 1_700_000_151, messages: ['quota: tenant vision uses 2/2 devices'] }
    ]);
    expect(totalWaitSeconds(chain)).toBe(52);
  });
});

describe('seriesSummaries', () => {
  it('sums each recorded metric up as its samples, last and peak value, and skips what it cannot read', () => {
    const chain = build.evidence();
    chain.utilisation.series_recorded = true;
    chain.utilisation.series = [
      { name: 'device_util_pct', unit: '%', source: 'measured', count: 3, points: [[1, 40, 1], [2, 90, 1], [3, 70.5, 2]] },
      { name: 'loss', unit: null, source: 'reported', count: 0, points: [] },
      { unexpected: true }
    ];
    expect(seriesSummaries(chain)).toEqual([
      { name: 'device_util_pct', unit: '%', count: 3, last: 70.5, peak: 90 },
      { name: 'loss', unit: '', count: 0, last: null, peak: null }
    ]);
  });
});

describe('WorkModel evidence', () => {
  it('fetches a workload\'s evidence in the UI language, keeps it until dismissed, and names its page', async () => {
    const service = new FakeService();
    const work = new WorkModel({ service, lang: 'zh' });
    const chain = await work.showEvidence(7);
    expect(chain?.id).toBe(7);
    expect(service.callsOf('getWorkloadEvidence')).toEqual([['getWorkloadEvidence', 7, 'zh']]);
    expect(work.evidences.get(7)).toBe(chain);
    expect(work.evidencePageUrl(7)).toBe('/hetero/api/v1/workloads/7/evidence?format=html&lang=zh');
    work.dismissEvidence(7);
    expect(work.evidences.size).toBe(0);
  });

  it('reports a refusal with the server\'s message and shows nothing', async () => {
    const service = new FakeService();
    service.failures.set('getWorkloadEvidence', FakeService.error('workload 7 is not your tenant\'s', 403));
    const work = new WorkModel({ service, lang: 'en' });
    const failures = record(work.failed);
    await expect(work.showEvidence(7)).resolves.toBeNull();
    expect(failures).toEqual([{ action: 'evidence', message: 'workload 7 is not your tenant\'s' }]);
    expect(work.evidences.size).toBe(0);
  });

  it('forgets the evidence of a workload no longer listed', async () => {
    const service = new FakeService();
    const work = new WorkModel({ service, lang: 'en' });
    await work.showEvidence(7);
    service.workloads = [build.workload({ id: 9 })];
    await work.refresh();
    expect(work.evidences.size).toBe(0);
  });
});
