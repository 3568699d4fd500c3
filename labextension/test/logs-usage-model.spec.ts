import { describe, expect, it } from 'vitest';

import { KernelUsageModel, LogModel, MAX_LOG_CHARS } from '../src/models';
import * as build from './builders';
import { FakeService, record } from './fakes';

const noPause = (): Promise<void> => Promise.resolve();

describe('LogModel', () => {
  it('streams a finished workload once and stops', async () => {
    const service = new FakeService();
    service.workloads = [build.workload({ id: 7, state: 'succeeded' })];
    service.logFollows = [['hel', 'lo\n']];
    const log = new LogModel({ service, workloadId: 7, delay: noPause });
    await log.follow();
    expect(log.text).toBe('hello\n');
    expect(log.done).toBe(true);
    expect(log.state).toBe('succeeded');
    expect(service.callsOf('getWorkloadLogs')).toHaveLength(1);
  });

  it('follows again, with growing pauses, while the workload is not finished', async () => {
    const service = new FakeService();
    const pauses: number[] = [];
    service.logFollows = [[], ['attempt 1\n'], ['attempt 1\nmore\n']];
    const states = ['queued', 'running', 'succeeded'];
    service.getWorkload = async id => build.workload({ id, state: states.shift() as 'queued' });
    const log = new LogModel({
      service,
      workloadId: 7,
      delay: async ms => {
        pauses.push(ms);
      },
      firstDelayMs: 100,
      maxDelayMs: 300
    });
    await log.follow();
    expect(log.text).toBe('attempt 1\nmore\n');
    expect(pauses).toEqual([100, 200]);
  });

  it('reports a failed follow with the server message, once while it repeats', async () => {
    const service = new FakeService();
    service.failures.set('getWorkloadLogs', FakeService.error('workload 7 belongs to bob', 403));
    let follows = 0;
    const log = new LogModel({
      service,
      workloadId: 7,
      delay: async () => {
        if (++follows === 2) {
          log.dispose();
        }
      }
    });
    const failures = record(log.failed);
    await log.follow();
    expect(failures).toEqual([{ action: 'logs', message: 'workload 7 belongs to bob' }]);
  });

  it('keeps only the end of a very long log', async () => {
    const service = new FakeService();
    service.workloads = [build.workload({ id: 7, state: 'failed' })];
    service.logFollows = [['x'.repeat(MAX_LOG_CHARS), 'tail']];
    const log = new LogModel({ service, workloadId: 7, delay: noPause });
    await log.follow();
    expect(log.text.length).toBe(MAX_LOG_CHARS);
    expect(log.text.endsWith('tail')).toBe(true);
  });
});

describe('KernelUsageModel', () => {
  it('follows the kernel it is pointed at', async () => {
    const service = new FakeService();
    const usage = new KernelUsageModel({ service });
    usage.kernelId = 'k-9';
    await usage.refresh();
    expect(usage.usage?.kernel_id).toBe('k-9');
    usage.kernelId = null;
    expect(usage.usage).toBeNull();
  });

  it('shows nothing for a kernel that is not a hetero kernel (404), without an error', async () => {
    const service = new FakeService();
    service.failures.set('getKernelUsage', FakeService.error("no running hetero kernel 'k-2'", 404));
    const usage = new KernelUsageModel({ service });
    const failures = record(usage.failed);
    usage.kernelId = 'k-2';
    await expect(usage.refresh()).resolves.toBe(true);
    expect(usage.usage).toBeNull();
    expect(usage.error).toBeNull();
    expect(failures).toHaveLength(0);
    await usage.refresh();
    expect(service.callsOf('getKernelUsage')).toHaveLength(1);
  });

  it('lets no stale answer land when the kernel changes and comes back', async () => {
    const service = new FakeService();
    service.usage = build.kernelUsage({ node: 'before' });
    const usage = new KernelUsageModel({ service });
    const release = service.hold('getKernelUsage');
    usage.kernelId = 'k-a';
    usage.kernelId = 'k-b';
    await usage.refresh();
    service.usage = build.kernelUsage({ node: 'after' });
    usage.kernelId = 'k-a';
    await usage.refresh();
    release();
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(usage.usage?.node).toBe('after');
  });

  it('reports other errors', async () => {
    const service = new FakeService();
    service.failures.set('getKernelUsage', FakeService.error('database is locked', 500));
    const usage = new KernelUsageModel({ service });
    const failures = record(usage.failed);
    usage.kernelId = 'k-2';
    await expect(usage.refresh()).resolves.toBe(false);
    expect(usage.error).toBe('database is locked');
    expect(failures.length).toBe(1);
  });
});
