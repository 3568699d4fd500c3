import { ServerConnection } from '@jupyterlab/services';
import { describe, expect, it } from 'vitest';

import { HeteroService } from '../src/service';

interface ISeen {
  method: string;
  url: string;
  body: unknown;
  cache: RequestCache;
}

/** A service whose server answers every request with `answer` and logs it. */
function serviceAnswering(answer: unknown = {}): { service: HeteroService; seen: ISeen[] } {
  const seen: ISeen[] = [];
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://localhost:8888/',
    fetch: async (input: RequestInfo | URL) => {
      const request = input as Request;
      const text = await request.text();
      seen.push({
        method: request.method,
        url: request.url.replace('http://localhost:8888/hetero/api/v1/', ''),
        body: text ? JSON.parse(text) : null,
        cache: request.cache
      });
      return new Response(JSON.stringify(answer), { status: 200, headers: { 'Content-Type': 'application/json' } });
    }
  });
  return { service: new HeteroService(settings), seen };
}

describe('HeteroService', () => {
  it.each([
    ['getVersion', [], 'GET', 'version'],
    ['listTemplates', [], 'GET', 'templates?mine=true'],
    ['listQueues', [], 'GET', 'queues'],
    ['getMyTenant', [], 'GET', 'tenants/me'],
    ['listTenants', [], 'GET', 'tenants'],
    ['listNodes', [], 'GET', 'nodes'],
    ['listWorkloads', [], 'GET', 'workloads?mine=true'],
    ['getWorkload', [7, 'zh'], 'GET', 'workloads/7?lang=zh'],
    ['cancelWorkload', [7], 'DELETE', 'workloads/7'],
    ['resubmitWorkload', [7], 'POST', 'workloads/7/resubmit'],
    ['explainWorkload', [7, 'en'], 'GET', 'workloads/7/explain?lang=en'],
    ['getWorkloadEvidence', [7, 'zh'], 'GET', 'workloads/7/evidence?lang=zh'],
    ['getKernelUsage', ['k 1'], 'GET', 'kernels/k%201/usage'],
    ['listSchedules', ['zh'], 'GET', 'schedules?lang=zh'],
    ['pauseSchedule', [3], 'POST', 'schedules/3/pause'],
    ['resumeSchedule', [3], 'POST', 'schedules/3/resume'],
    ['runSchedule', [3], 'POST', 'schedules/3/run'],
    ['deleteSchedule', [3], 'DELETE', 'schedules/3']
  ])('%s calls %s %s', async (name, args, method, url) => {
    const { service, seen } = serviceAnswering();
    await (service as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name](...args);
    expect(seen).toHaveLength(1);
    expect(seen[0].method).toBe(method);
    expect(seen[0].url).toBe(url);
  });

  it('revalidates GETs instead of adding a cache-busting query parameter the API would reject', async () => {
    const { service, seen } = serviceAnswering([]);
    await service.listWorkloads();
    expect(seen[0].url).toBe('workloads?mine=true');
    expect(seen[0].cache).toBe('no-cache');
  });

  it('sends JSON bodies', async () => {
    const { service, seen } = serviceAnswering();
    await service.submitWorkload({ template: 'training', parameters: { devices: 2 }, script: { path: 'train.py' } });
    await service.previewWorkload({ template: 'training', parameters: {}, kind: 'job', lang: 'zh' });
    await service.startKernel('interactive', { devices: 1, flavor: 'a100-80g' });
    const job = { kind: 'job' as const, template: 'training', parameters: {}, notebook: { path: 'r.ipynb' } };
    await service.createSchedule({ name: 'nightly', cron: '0 2 * * *', timezone: 'UTC', missed: 'skip', job });
    expect(seen.map(s => [s.method, s.url, s.body])).toEqual([
      ['POST', 'workloads', { kind: 'job', template: 'training', parameters: { devices: 2 }, script: { path: 'train.py' } }],
      ['POST', 'previews', { template: 'training', parameters: {}, kind: 'job', lang: 'zh' }],
      ['POST', 'kernels', { template: 'interactive', parameters: { devices: 1, flavor: 'a100-80g' }, wait: true }],
      ['POST', 'schedules?lang=en', { name: 'nightly', cron: '0 2 * * *', timezone: 'UTC', missed: 'skip', job }]
    ]);
  });
});
