import { describe, expect, it } from 'vitest';

import { arrayLabel, groupWork, IArrayEntry, WorkModel } from '../src/models';
import type { IBlocker } from '../src/types';
import * as build from './builders';
import { FakeService, record } from './fakes';

const LIMIT: IBlocker = {
  kind: 'array-limit',
  flavor: null,
  message: 'array limit: array 12 runs at most 1 tasks at once (1 running, 0 next in line)',
  params: { array: 12, limit: 1, running: 1, next: 0 }
};

describe('groupWork', () => {
  it("shows an array's tasks as one row where its newest task is listed, every other workload as its own", () => {
    const tasks = [
      build.arrayTask(12, 2, { state: 'queued', blockers: [LIMIT], created_at: 1001 }, { limit: 1 }),
      build.arrayTask(12, 1, { state: 'running', created_at: 1001 }, { limit: 1 }),
      build.arrayTask(12, 0, { state: 'succeeded', created_at: 1000 }, { limit: 1 })
    ];
    const rows = groupWork([build.workload({ id: 20 }), ...tasks, build.workload({ id: 5 })]);
    expect(rows.map(row => (row.kind === 'array' ? `array ${row.id}` : `workload ${row.workload.id}`))).toEqual([
      'workload 20',
      'array 12',
      'workload 5'
    ]);
    const array = rows[1] as IArrayEntry;
    expect(array.label).toBe('12[0-2%1]');
    expect(array.name).toBe('shard');
    expect(array.tasks.map(task => task.array?.index)).toEqual([0, 1, 2]);
    expect(array.counts).toEqual([
      ['running', 1],
      ['queued', 1],
      ['succeeded', 1]
    ]);
    expect(array.createdAt).toBe(1000);
    expect(array.blocker).toEqual(LIMIT);
    expect(array.finished).toBe(false);
  });

  it('says an array ended only when every one of its tasks is listed and ended', () => {
    const ended = [build.arrayTask(12, 0, { state: 'succeeded' }), build.arrayTask(12, 1, { state: 'failed' })];
    expect((groupWork(ended)[0] as IArrayEntry).finished).toBe(false); // 2 of 3 listed
    const all = [...ended, build.arrayTask(12, 2, { state: 'cancelled' })];
    const entry = groupWork(all)[0] as IArrayEntry;
    expect(entry.finished).toBe(true);
    expect(entry.blocker).toBeNull();
  });

  it('names an array as Slurm does, its limit after %', () => {
    expect(arrayLabel({ id: 12, index: 0, size: 100, limit: 10, indices: '0-99' })).toBe('12[0-99%10]');
    expect(arrayLabel({ id: 3, index: 1, size: 4, limit: null, indices: '1,3,7-8' })).toBe('3[1,3,7-8]');
  });
});

describe('WorkModel with arrays', () => {
  it("describes only the task whose limit blocker a collapsed array shows, and every task once it is expanded", async () => {
    const service = new FakeService();
    service.workloads = [
      build.arrayTask(12, 2, { state: 'queued', blockers: [LIMIT] }, { limit: 1 }),
      build.arrayTask(12, 1, { state: 'queued', blockers: [LIMIT] }, { limit: 1 }),
      build.arrayTask(12, 0, { state: 'running' }, { limit: 1 }),
      build.workload({ id: 9 })
    ];
    service.details.set(13, { ...service.workloads[1], blockers: [{ ...LIMIT, message: '数组上限：数组 12 ...' }] });
    const work = new WorkModel({ service, lang: 'zh' });
    await work.refresh();
    expect(service.callsOf('getWorkload').map(call => call[1])).toEqual([13, 9]);
    expect((groupWork(work.workloads)[0] as IArrayEntry).blocker?.message).toBe('数组上限：数组 12 ...');

    service.calls.length = 0;
    await work.toggleArray(12); // shown: its tasks are described now, in the UI's language
    expect(work.expandedArrays.has(12)).toBe(true);
    expect(service.callsOf('getWorkload').map(call => call[1])).toEqual([14, 13, 12, 9]);
    service.calls.length = 0;
    await work.toggleArray(12);
    expect(work.expandedArrays.has(12)).toBe(false);
    expect(service.calls).toEqual([]);
  });

  it('reads every task of an array the list cut off', async () => {
    const service = new FakeService();
    const size = { size: 4 };
    service.workloads = [build.arrayTask(12, 3, {}, size), build.arrayTask(12, 2, {}, size)];
    service.arrayTasks = [build.arrayTask(12, 1, {}, size), build.arrayTask(12, 0, {}, size)];
    const work = new WorkModel({ service, lang: 'en' });
    await work.refresh();
    expect(service.callsOf('listArrayTasks')).toEqual([['listArrayTasks', 12, 4]]);
    const entry = groupWork(work.workloads)[0] as IArrayEntry;
    expect(entry.tasks.map(task => task.id)).toEqual([12, 13, 14, 15]);

    service.calls.length = 0;
    service.workloads = [...service.workloads, ...service.arrayTasks];
    await work.refresh();
    expect(service.callsOf('listArrayTasks')).toEqual([]); // listed whole: nothing more to read
  });

  it('cancels an array with DELETE ?array=true, then refreshes', async () => {
    const service = new FakeService();
    service.workloads = [build.arrayTask(12, 1, { state: 'queued' }), build.arrayTask(12, 0, { state: 'running' })];
    const work = new WorkModel({ service, lang: 'en' });
    await expect(work.cancelArray(12)).resolves.toBe(true);
    expect(service.calls[0]).toEqual(['cancelArray', 12]);
    expect(service.callsOf('listWorkloads')).toHaveLength(1);
    expect(work.busy.size).toBe(0);
  });

  it("reports the server's refusal to cancel an array, and changes nothing", async () => {
    const service = new FakeService();
    service.failures.set('cancelArray', FakeService.error('workload 12 belongs to tenant nlp, not to your tenant vision', 403));
    const work = new WorkModel({ service, lang: 'en' });
    const failures = record(work.failed);
    await expect(work.cancelArray(12)).resolves.toBe(false);
    expect(failures).toEqual([{ action: 'cancel', message: 'workload 12 belongs to tenant nlp, not to your tenant vision' }]);
    expect(service.callsOf('listWorkloads')).toHaveLength(0);
  });
});
