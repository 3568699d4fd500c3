import { describe, expect, it } from 'vitest';

import { WorkModel } from '../src/models';
import { METRICS_EVERY_MS } from '../src/models/work';
import { formatFigure, metricView, sparklinePath } from '../src/models/metrics';
import * as build from './builders';
import { FakeService, record } from './fakes';

describe('metricView', () => {
  it('puts the declared metrics with figures first, in the template\'s order, then the others by name', () => {
    const at = 1_700_000_000;
    const answer = build.metrics({
      declared: ['loss', 'cpu_util'],
      series: [
        { name: 'memory_rss', unit: 'MiB', source: 'procfs', points: [[at, 812, 1]] },
        { name: 'cpu_util', unit: '%', source: 'procfs', points: [[at, 40, 1], [at + 10, 97.5, 2]] },
        { name: 'empty', unit: null, source: 'reported', points: [] },
        { name: 'loss', unit: null, source: 'reported', points: [[at, 0.9, 1], [at + 1, 0.31, 1]] },
        { name: 'io_read_bytes', unit: 'bytes', source: 'procfs', points: [[at, 5, 1]] }
      ],
      not_measured: [{ name: 'device_util', why: 'device_util: needs devices' }]
    });
    const view = metricView(answer);
    expect(view.cards.map(c => [c.name, c.declared, c.latest, c.points])).toEqual([
      ['loss', true, 0.31, 2],
      ['cpu_util', true, 97.5, 2],
      ['io_read_bytes', false, 5, 1],
      ['memory_rss', false, 812, 1]
    ]);
    expect(view.cards.find(c => c.name === 'memory_rss')?.path).toBe(''); // one point: no line to draw
    expect(view.missing).toEqual([{ name: 'device_util', why: 'device_util: needs devices' }]);
  });

  it('draws time across and value up, with a flat series along the middle', () => {
    expect(sparklinePath([[0, 1], [1, 0]], 10, 10)).toBe('M0,1 L10,9');
    expect(sparklinePath([[0, 3], [5, 3], [10, 3]], 10, 10)).toBe('M0,5 L5,5 L10,5');
    expect(sparklinePath([[0, 3]], 10, 10)).toBe('');
  });

  it('writes each figure in its unit', () => {
    expect(formatFigure(8_388_608, 'bytes')).toBe('8.39 MB');
    expect(formatFigure(512, 'bytes')).toBe('512 B');
    expect(formatFigure(97.54, '%')).toBe('97.5%');
    expect(formatFigure(812, 'MiB')).toBe('812 MiB');
    expect(formatFigure(0.3141, null)).toBe('0.314');
  });
});

describe('WorkModel metrics', () => {
  it('fetches a workload\'s metrics in the UI language and fetches them again, gently, while it runs', async () => {
    let now = 1_000_000;
    const service = new FakeService();
    service.workloads = [build.workload({ id: 7, state: 'running', blockers: [] })];
    const work = new WorkModel({ service, lang: 'zh', now: () => now });
    await work.refresh();

    const shown = await work.showMetrics(7);
    expect(shown?.series.map(s => s.name)).toEqual(['io_write_bytes', 'loss']);
    expect(work.metrics.get(7)).toBe(shown);
    expect(service.callsOf('getWorkloadMetrics')).toEqual([['getWorkloadMetrics', 7, 'zh']]);

    await work.refresh(); // too soon: the server samples every 10 s
    expect(service.callsOf('getWorkloadMetrics')).toHaveLength(1);
    now += METRICS_EVERY_MS;
    service.metrics.set(7, build.metrics({ series: [] }));
    await work.refresh();
    expect(service.callsOf('getWorkloadMetrics')).toHaveLength(2);
    expect(work.metrics.get(7)?.series).toEqual([]);

    // Once it has ended, its figures are fetched one last time, then no more.
    service.workloads = [build.workload({ id: 7, state: 'succeeded', blockers: [] })];
    for (let i = 0; i < 3; i++) {
      now += METRICS_EVERY_MS;
      await work.refresh();
    }
    expect(service.callsOf('getWorkloadMetrics')).toHaveLength(3);
  });

  it('stops fetching metrics once dismissed, and forgets those of workloads no longer listed', async () => {
    let now = 0;
    const service = new FakeService();
    service.workloads = [build.workload({ id: 7, state: 'running', blockers: [] })];
    const work = new WorkModel({ service, lang: 'en', now: () => now });
    await work.showMetrics(7);
    work.dismissMetrics(7);
    expect(work.metrics.has(7)).toBe(false);
    now += METRICS_EVERY_MS;
    await work.refresh();
    expect(service.callsOf('getWorkloadMetrics')).toHaveLength(1);

    await work.showMetrics(7);
    service.workloads = [];
    await work.refresh();
    expect(work.metrics.size).toBe(0);
  });

  it('reports a refusal once and shows nothing', async () => {
    const service = new FakeService();
    service.failures.set('getWorkloadMetrics', FakeService.error('workload 7 belongs to another tenant', 403));
    const work = new WorkModel({ service, lang: 'en' });
    const failures = record(work.failed);
    await expect(work.showMetrics(7)).resolves.toBeNull();
    expect(work.metrics.has(7)).toBe(false);
    expect(failures).toEqual([{ action: 'metrics', message: 'workload 7 belongs to another tenant' }]);
  });
});
