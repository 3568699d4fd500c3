import { describe, expect, it } from 'vitest';

import { HeteroAPIError } from '../src/handler';
import { HeteroModel } from '../src/models';
import * as build from './builders';
import { FakeService, record } from './fakes';

describe('HeteroModel', () => {
  it('starts empty', () => {
    const model = new HeteroModel({ service: new FakeService() });
    expect(model.version).toBeNull();
    expect(model.error).toBeNull();
    expect(model.loading).toBe(false);
    expect(model.templates).toEqual([]);
    expect(model.isAdmin).toBe(false);
  });

  it('loads version, tenant, templates, queues, nodes and my work in one refresh', async () => {
    const service = new FakeService();
    const model = new HeteroModel({ service, previewDelayMs: 0 });
    const changes = record(model.changed);

    await expect(model.refresh()).resolves.toBe(true);

    expect(model.version).toBe('0.1.0');
    expect(model.me?.tenant).toBe('vision');
    expect(model.templates.map(t => t.name)).toEqual(['fine-tuning', 'training']);
    expect(model.queues[0].name).toBe('experiment');
    expect(model.nodes[0].name).toBe('gpu-a100-0');
    expect(model.work.workloads[0].id).toBe(7);
    expect(model.launch.template?.name).toBe('fine-tuning');
    expect(model.loading).toBe(false);
    expect(changes.length).toBeGreaterThan(1);
  });

  it('keeps the alerts firing and tells each new one once, in its language', async () => {
    const service = new FakeService();
    service.alerts = [build.alert()];
    const model = new HeteroModel({ service, lang: 'zh', previewDelayMs: 0 });
    const fired = record(model.alertFired);

    await model.refresh();
    await model.refresh(); // still firing: not told again
    expect(model.alerts.map(a => a.id)).toEqual([1]);
    expect(fired.map(alert => alert.id)).toEqual([1]);
    expect(model.alertMessage(model.alerts[0])).toBe('队列 batch：作业 7 已等待 90 秒，超过其最长等待时间 60 秒');

    service.alerts = [build.alert({ id: 2, rule: 'node-lost', severity: 'critical' })];
    await model.refresh();
    expect(model.alerts.map(a => a.id)).toEqual([2]); // the first resolved
    expect(fired.map(alert => alert.id)).toEqual([1, 2]);
  });

  it('lists onboarding for platform admins only', async () => {
    const tenantAdmin = new FakeService();
    tenantAdmin.me = build.me({ role: 'tenant-admin' });
    await new HeteroModel({ service: tenantAdmin }).refresh();
    expect(tenantAdmin.callsOf('listOnboarding')).toHaveLength(0);

    const platformAdmin = new FakeService();
    platformAdmin.me = build.me({ role: 'platform-admin' });
    platformAdmin.onboarding = [build.onboarding()];
    const model = new HeteroModel({ service: platformAdmin });
    await model.refresh();
    expect(model.onboarding.map(entry => entry.name)).toEqual(['gpu-t4-0']);
  });

  it('lists tenants only for admins', async () => {
    const member = new FakeService();
    await new HeteroModel({ service: member }).refresh();
    expect(member.callsOf('listTenants')).toHaveLength(0);

    const admin = new FakeService();
    admin.me = build.me({ role: 'platform-admin' });
    const model = new HeteroModel({ service: admin });
    await model.refresh();
    expect(model.isAdmin).toBe(true);
    expect(model.tenants.map(t => t.tenant)).toEqual(['vision']);
  });

  it('keeps what it knew, shows the server message and reports it once while it repeats', async () => {
    const service = new FakeService();
    const model = new HeteroModel({ service });
    const failures = record(model.failed);
    await model.refresh();

    service.failures.set('listQueues', FakeService.error('scheduler is restarting', 503));
    await expect(model.refresh()).resolves.toBe(false);
    await model.refresh();

    expect(model.error).toBe('scheduler is restarting');
    expect(model.queues).toHaveLength(1);
    expect(model.version).toBe('0.1.0');
    expect(failures).toEqual([{ action: 'refresh', message: 'scheduler is restarting' }]);

    service.failures.clear();
    await expect(model.refresh()).resolves.toBe(true);
    expect(model.error).toBeNull();
  });

  it('says the shared service is not answering while refreshes fail with service-unreachable, until one succeeds', async () => {
    const service = new FakeService();
    const model = new HeteroModel({ service });
    await model.refresh();
    expect(model.unreachable).toBe(false);

    const down = new HeteroAPIError('The shared hetero service is not answering', 502, 'service-unreachable');
    service.failures.set('listQueues', down);
    await expect(model.refresh()).resolves.toBe(false);
    expect(model.unreachable).toBe(true);
    expect(model.error).toBe('The shared hetero service is not answering');

    service.failures.set('listQueues', FakeService.error('scheduler is restarting', 503)); // another failure
    await model.refresh();
    expect(model.unreachable).toBe(false);

    service.failures.set('listQueues', down);
    await model.refresh();
    service.failures.clear();
    await expect(model.refresh()).resolves.toBe(true);
    expect(model.unreachable).toBe(false);
    expect(model.error).toBeNull();
  });

  it('ignores a slow answer that arrives after a newer one', async () => {
    const service = new FakeService();
    const model = new HeteroModel({ service });
    let release: () => void = () => undefined;
    const gate = new Promise<void>(resolve => (release = resolve));
    const original = service.getVersion.bind(service);
    let first = true;
    service.getVersion = async () => {
      if (first) {
        first = false;
        await gate;
        return build.version({ version: '0.1.0-old' });
      }
      return original();
    };
    const older = model.refresh();
    await model.refresh();
    release();
    // Superseded is not failed: the poll must not back off for it.
    await expect(older).resolves.toBe(true);
    expect(model.version).toBe('0.1.0');
  });

  it('learns flavor display names from previews, falling back to the flavor name', async () => {
    const service = new FakeService();
    const model = new HeteroModel({ service, lang: 'zh', previewDelayMs: 0 });
    expect(model.flavorLabel('a100-80g')).toBe('a100-80g');
    service.preview = build.preview({ flavors: [build.flavorPreview({ flavor: 'ascend-910b', display: { en: 'Ascend 910B', zh: '昇腾 910B' } })] });
    await model.refresh();
    expect(model.flavorLabel('ascend-910b')).toBe('昇腾 910B');
  });

  it('stops signalling once disposed', async () => {
    const model = new HeteroModel({ service: new FakeService() });
    const changes = record(model.changed);
    model.dispose();
    await model.refresh();
    expect(model.isDisposed).toBe(true);
    expect(changes).toHaveLength(0);
  });
});
