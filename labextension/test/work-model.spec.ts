import { describe, expect, it } from 'vitest';

import { WorkModel } from '../src/models';
import * as build from './builders';
import { FakeService, record } from './fakes';

describe('WorkModel', () => {
  it('lists my work and describes waiting workloads in the UI language', async () => {
    const service = new FakeService();
    service.workloads = [build.workload({ id: 7 }), build.workload({ id: 6, state: 'succeeded', blockers: [] })];
    service.details.set(7, build.workload({ id: 7, blockers: [{ kind: 'capacity', flavor: 'cpu-standard', message: '容量：规格 cpu-standard 空闲 34 CPU，需要 64 CPU', params: {} }] }));
    const work = new WorkModel({ service, lang: 'zh' });

    await expect(work.refresh()).resolves.toBe(true);

    expect(work.workloads.map(w => w.id)).toEqual([7, 6]);
    expect(work.workloads[0].blockers?.[0].message).toContain('容量');
    expect(service.callsOf('getWorkload')).toContainEqual(['getWorkload', 7, 'zh']);
  });

  it('describes a finished workload once, then reuses that description', async () => {
    const service = new FakeService();
    service.workloads = [build.workload({ id: 6, state: 'succeeded', blockers: [] })];
    const work = new WorkModel({ service, lang: 'en' });
    await work.refresh();
    await work.refresh();
    expect(service.callsOf('getWorkload')).toHaveLength(1);
  });

  it('reports a workload it could not describe once, and still lists it', async () => {
    const service = new FakeService();
    service.workloads = [build.workload({ id: 7 })];
    service.failures.set('getWorkload', FakeService.error('database is locked', 500));
    const work = new WorkModel({ service, lang: 'en' });
    const failures = record(work.failed);
    await expect(work.refresh()).resolves.toBe(false);
    await work.refresh();
    expect(work.workloads.map(w => w.id)).toEqual([7]);
    expect(failures).toEqual([{ action: 'refresh', message: 'database is locked' }]);
    expect(work.error).toBe('database is locked');
    service.failures.clear();
    await expect(work.refresh()).resolves.toBe(true);
    expect(work.error).toBeNull();
  });

  it('forgets explanations of workloads no longer listed', async () => {
    const service = new FakeService();
    service.workloads = [build.workload({ id: 7 })];
    const work = new WorkModel({ service, lang: 'en' });
    await work.explain(7);
    service.workloads = [build.workload({ id: 8 })];
    await work.refresh();
    expect(work.explanations.has(7)).toBe(false);
  });

  it('cancels, then refreshes', async () => {
    const service = new FakeService();
    const work = new WorkModel({ service, lang: 'en' });
    await expect(work.cancel(7)).resolves.toBe(true);
    expect(service.calls.map(c => c[0])).toEqual(['cancelWorkload', 'listWorkloads', 'getWorkload']);
    expect(work.busy.size).toBe(0);
  });

  it('reports a failed action with the server message and leaves the list alone', async () => {
    const service = new FakeService();
    service.failures.set('cancelWorkload', FakeService.error('workload 7 belongs to bob', 403));
    const work = new WorkModel({ service, lang: 'en' });
    const failures = record(work.failed);
    await expect(work.cancel(7)).resolves.toBe(false);
    expect(failures).toEqual([{ action: 'cancel', message: 'workload 7 belongs to bob' }]);
    expect(service.callsOf('listWorkloads')).toHaveLength(0);
  });

  it('keeps explanations per workload until dismissed', async () => {
    const service = new FakeService();
    const work = new WorkModel({ service, lang: 'zh' });
    const explanation = await work.explain(7);
    expect(explanation?.summary).toBe('waiting');
    expect(service.callsOf('explainWorkload')).toEqual([['explainWorkload', 7, 'zh']]);
    expect(work.explanations.get(7)?.lines).toHaveLength(1);
    work.dismissExplanation(7);
    expect(work.explanations.size).toBe(0);
  });

  it('resubmits and answers the new workload', async () => {
    const work = new WorkModel({ service: new FakeService(), lang: 'en' });
    const created = await work.resubmit(7);
    expect(created?.id).toBe(107);
  });
});
