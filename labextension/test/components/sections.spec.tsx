import * as React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import {
  AdminSection,
  HeteroPanelView,
  ISectionTab,
  MyWorkSection,
  NodesSection,
  PlacementStatus,
  QueuesSection
} from '../../src/components';
import type { IExplanation, IWorkload } from '../../src/types';
import * as build from '../builders';
import { click, IRendered, press, render, trans } from '../render';
import { myWorkSectionProps } from './myWork';

let rendered: IRendered | null = null;
afterEach(() => rendered?.unmount());

describe('QueuesSection', () => {
  it('shows class, counts, waits, rules and quota bars per flavor', () => {
    const queue = build.queue({
      preemption: build.preemption({ may_preempt: ['batch'] }),
      failure: build.failure({ retries: 3 }),
      wait_p50_s: 45
    });
    rendered = render(<QueuesSection queues={[queue]} tenant="vision" lang="zh" trans={trans} />);
    const card = rendered.host.querySelector('.jp-hetero-queue[data-queue="experiment"]');
    expect(card?.querySelector('h4')?.textContent).toBe('研究实验');
    expect(card?.querySelector('.jp-hetero-badge')?.textContent).toBe('experiment');
    expect(card?.querySelector('.jp-hetero-queue-pending')?.textContent).toBe('1');
    expect(card?.querySelector('.jp-hetero-queue-running')?.textContent).toBe('2');
    expect(card?.querySelector('.jp-hetero-queue-wait')?.textContent).toBe('45 s / 10 min');
    expect(card?.textContent).toContain('batch');
    expect(card?.textContent).toContain('Quota of tenant vision in this queue');
    const a100 = card?.querySelector('.jp-hetero-quota-flavor[data-flavor="a100-80g"]');
    const devices = a100?.querySelector('[role="progressbar"]');
    expect(devices?.getAttribute('aria-valuenow')).toBe('1000');
    expect(devices?.getAttribute('aria-valuemax')).toBe('8000');
    expect(devices?.getAttribute('aria-label')).toBe('Devices: 1 / 8');
  });

  it('says "no data" when nothing was admitted in the last day', () => {
    const queue = build.queue({ wait_p50_s: null, wait_p95_s: null });
    rendered = render(<QueuesSection queues={[queue]} tenant={null} lang="en" trans={trans} />);
    expect(rendered.host.querySelector('.jp-hetero-queue-wait')?.textContent).toBe('no data / no data');
  });
});

describe('NodesSection', () => {
  it('marks emulated nodes and shows capability, state and allocation', () => {
    const real = build.node({
      name: 'vm',
      emulated: false,
      accelerator: null,
      flavor: 'cpu-standard',
      notes: ['nvml: not available'],
      utilisation: { cpu_pct: 37.5, memory_used_mib: 262144 }
    });
    rendered = render(<NodesSection nodes={[build.node(), real]} trans={trans} />);
    const cards = [...rendered.host.querySelectorAll('.jp-hetero-node')];
    expect(cards.map(c => c.getAttribute('data-node'))).toEqual(['vm', 'gpu-a100-0']);
    const gpu = cards[1];
    expect(gpu.classList.contains('jp-hetero-mod-emulated')).toBe(true);
    expect(gpu.querySelector('.jp-hetero-mod-emulated.jp-hetero-badge')?.textContent).toBe('emulated');
    expect(gpu.querySelector('.jp-hetero-node-accelerator')?.textContent).toBe('2× A100-SXM4-80GB, 80 GiB each');
    expect(gpu.textContent).toContain('550.54.15 / cuda 12.4');
    expect(gpu.textContent).toContain('nvlink');
    expect(gpu.querySelector('[role="progressbar"]')?.getAttribute('aria-label')).toBe('Devices: 1 / 2');
    expect(cards[0].textContent).toContain('this machine');
    expect(cards[0].textContent).toContain('nvml: not available');
    const inUse = cards[0].querySelector('.jp-hetero-node-utilisation');
    expect([...(inUse?.querySelectorAll('[role="progressbar"]') ?? [])].map(bar => bar.getAttribute('aria-label'))).toEqual([
      'CPU: 37.5%',
      'Memory: 256 GiB / 512 GiB'
    ]);
    expect(gpu.querySelector('.jp-hetero-node-utilisation')?.textContent).toContain(
      'Not measured: an emulated node uses nothing real.'
    );
    expect(rendered.host.textContent).toContain('2 nodes, 1 of them emulated');
  });

  it('marks cluster nodes, a cordoned one, and what other pods hold of a node', () => {
    const held = build.node({
      name: 'dgx-a100-01',
      emulated: false,
      source: 'kubernetes',
      state: 'cordoned',
      held_by_others: { cpu_milli: 4000, memory_mib: 1024, devices: 2 }
    });
    const free = build.node({ name: 'cpu-worker-21', emulated: false, source: 'kubernetes', accelerator: null });
    rendered = render(<NodesSection nodes={[held, free]} trans={trans} />);
    const [cpu, gpu] = [...rendered.host.querySelectorAll('.jp-hetero-node')];
    expect(gpu.querySelector('.jp-hetero-mod-cluster.jp-hetero-badge')?.textContent).toBe('cluster node');
    expect(gpu.querySelector('.jp-hetero-node-state')?.textContent).toBe('cordoned: takes no new work');
    expect(gpu.querySelector('.jp-hetero-node-held')?.textContent).toBe('2 devices, 4 cores, 1 GiB');
    expect(cpu.querySelector('.jp-hetero-node-held')).toBeNull();
    expect(cpu.textContent).not.toContain('this machine');
  });

  it("shows a vendor node's firmware, link domains, device health, engines, network and device memory in use", () => {
    const base = build.node();
    const devices = [0, 1, 2, 3].map(index => ({
      index,
      link_domain: index < 3 ? 'hccs-0' : 'hccs-1',
      numa_node: 0,
      pci_bus: null,
      health: index === 2 ? 'Alarm' : null
    }));
    const ascend = build.node({
      name: 'atlas-0',
      emulated: false,
      accelerator: base.accelerator && {
        ...base.accelerator,
        vendor: 'ascend',
        model: '910B4',
        count: 4,
        memory_mib: 32768,
        interconnect: 'hccs',
        firmware_version: '7.5.0.3.220',
        inference_engines: ['mindie', 'vllm-ascend'],
        devices
      },
      network: { rdma: true, bandwidth_gbps: 200 },
      utilisation: { cpu_pct: 10, memory_used_mib: 1024, device_util_pct: 43.5, device_memory_used_mib: 65536 }
    });
    rendered = render(<NodesSection nodes={[ascend]} trans={trans} />);
    const card = rendered.host.querySelector('.jp-hetero-node');
    expect(card?.querySelector('.jp-hetero-node-interconnect')?.textContent).toBe('hccs · hccs-0: 0-2 · hccs-1: 3');
    expect(card?.querySelector('.jp-hetero-node-health')?.textContent).toBe('device 2: Alarm');
    expect(card?.querySelector('.jp-hetero-node-network')?.textContent).toBe('RDMA, 200 Gb/s');
    expect(card?.textContent).toContain('7.5.0.3.220');
    expect(card?.textContent).toContain('mindie, vllm-ascend');
    const bars = [...(card?.querySelectorAll('.jp-hetero-node-utilisation [role="progressbar"]') ?? [])];
    expect(bars.map(bar => bar.getAttribute('aria-label'))).toContain('Device memory: 64 GiB / 128 GiB');
    expect(bars.map(bar => bar.getAttribute('aria-label'))).toContain('Device utilisation: 43.5%');
  });

  it('shows plain Ethernet and no health line for a node whose devices are all well', () => {
    rendered = render(<NodesSection nodes={[build.node()]} trans={trans} />);
    const card = rendered.host.querySelector('.jp-hetero-node');
    expect(card?.querySelector('.jp-hetero-node-network')?.textContent).toBe('Ethernet, 10 Gb/s');
    expect(card?.querySelector('.jp-hetero-node-health')).toBeNull();
    expect(card?.querySelector('.jp-hetero-node-interconnect')?.textContent).toBe('nvlink');
  });

  it('says "unknown" for a driver or runtime the node does not report', () => {
    const base = build.node();
    const accelerator = base.accelerator ? { ...base.accelerator, driver_version: null, runtime: null } : null;
    rendered = render(<NodesSection nodes={[build.node({ accelerator })]} trans={trans} />);
    expect(rendered.host.textContent).toContain('unknown / unknown');
    expect(rendered.host.textContent).not.toContain('?');
  });
});

describe('MyWorkSection', () => {
  const section = myWorkSectionProps;

  it('asks for a workload\'s evidence and shows its chain as collapsible sections, in order', () => {
    const onEvidence = vi.fn();
    const workload = build.workload({ state: 'succeeded', blockers: [] });
    rendered = render(<MyWorkSection {...section({ workloads: [workload], onEvidence })} />);
    click(rendered.host.querySelector('.jp-hetero-action-evidence'));
    expect(onEvidence).toHaveBeenCalledWith(7);
    rendered.unmount();

    const onDismissEvidence = vi.fn();
    const chain = build.evidence();
    rendered = render(
      <MyWorkSection {...section({ workloads: [workload], evidences: new Map([[7, chain]]), onDismissEvidence })} />
    );
    const view = rendered.host.querySelector('.jp-hetero-evidence');
    const sections = [...(view?.querySelectorAll('details.jp-hetero-evidence-section') ?? [])];
    expect(sections.map(s => s.getAttribute('data-section'))).toEqual([
      'request', 'attempts', 'wait', 'utilisation', 'alerts', 'preemptions', 'release', 'events', 'audit'
    ]);
    expect(sections.map(s => s.querySelector('summary')?.textContent)).toContain('Attempts (2)');
    const open = sections.filter(s => (s as HTMLDetailsElement).open).map(s => s.getAttribute('data-section'));
    expect(open).toEqual(['preemptions', 'release']);
    const text = view?.textContent ?? '';
    expect(text).toContain('Attempt 2 on gpu-a100-0: succeeded');
    expect(text).toContain('gpu-a100-0: A100-SXM4-80GB, driver 550.54, runtime 12.4');
    expect(text).toContain('quota: tenant vision uses 2/2 devices');
    expect(text).toContain('preempted by workload 8 (priority)');
    expect(text).toContain('Audit chain intact: 5 entries checked');
    expect(view?.querySelector('a.jp-hetero-evidence-page')?.getAttribute('href')).toBe(
      '/hetero/api/v1/workloads/7/evidence?format=html&lang=en'
    );
    click(view?.querySelector('.jp-hetero-dismiss') ?? null);
    expect(onDismissEvidence).toHaveBeenCalledWith(7);
  });

  it('asks for a workload\'s metrics and shows each as a sparkline with its latest figure, then what is not measured', () => {
    const onMetrics = vi.fn();
    const workload = build.workload({ state: 'running', blockers: [] });
    rendered = render(<MyWorkSection {...section({ workloads: [workload], onMetrics })} />);
    click(rendered.host.querySelector('.jp-hetero-action-metrics'));
    expect(onMetrics).toHaveBeenCalledWith(7);
    rendered.unmount();

    const onDismissMetrics = vi.fn();
    rendered = render(
      <MyWorkSection {...section({ workloads: [workload], metrics: new Map([[7, build.metrics()]]), onDismissMetrics })} />
    );
    const view = rendered.host.querySelector('.jp-hetero-metrics');
    const cards = [...(view?.querySelectorAll('li.jp-hetero-metric') ?? [])];
    expect(cards.map(c => c.getAttribute('data-metric'))).toEqual(['loss', 'io_write_bytes']);
    expect(cards.map(c => c.querySelector('.jp-hetero-metric-latest')?.textContent)).toEqual(['0.31', '8.39 MB']);
    expect(cards.map(c => c.querySelector('.jp-hetero-metric-source')?.textContent)).toEqual(['reported', 'procfs']);
    expect(cards[0].querySelector('svg.jp-hetero-sparkline path')?.getAttribute('d')).toMatch(/^M0,1 L60,[\d.]+ L120,27$/);
    const missing = [...(view?.querySelectorAll('.jp-hetero-metric-missing li') ?? [])].map(li => li.textContent);
    expect(missing[0]).toBe('not measured: device_util: needs NVIDIA, AMD, Ascend or Intel devices with their tool; this workload was given none');
    click(view?.querySelector('.jp-hetero-dismiss') ?? null);
    expect(onDismissMetrics).toHaveBeenCalledWith(7);
  });

  it('shows a waiting workload with its position, ETA and ranked blockers', () => {
    rendered = render(<MyWorkSection {...section()} />);
    const row = rendered.host.querySelector('.jp-hetero-workload[data-workload-id="7"]');
    expect(row?.getAttribute('data-state')).toBe('queued');
    expect(row?.querySelector('.jp-hetero-state')?.textContent).toBe('queued');
    expect(row?.querySelector('.jp-hetero-workload-wait')?.textContent).toBe('Position 1 in queue · ETA unknown');
    expect(row?.querySelector('.jp-hetero-blocker')?.textContent).toBe(
      'capacity: flavor cpu-standard has 34 CPU free, needs 64 CPU'
    );
  });

  it('shows an inadmissible workload with its badge and why no node can hold it, and lets it be cancelled', () => {
    const blocker = {
      kind: 'device-count',
      flavor: 'a100-80g',
      message: 'capacity: a replica needs 8 devices on one node, nodes of flavor a100-80g have 2',
      params: {}
    };
    const reason = `no node in the inventory can ever hold it: ${blocker.message}`;
    const waiting = build.workload({ state: 'inadmissible', reason, blockers: [blocker] });
    // Before the scheduler examined it again (a restart), only the stored reason is known.
    const restarted = build.workload({ id: 8, state: 'inadmissible', reason, blockers: [] });
    const p = section({ workloads: [waiting, restarted] });
    rendered = render(<MyWorkSection {...p} />);
    const row = rendered.host.querySelector('.jp-hetero-workload[data-workload-id="7"]');
    const badge = row?.querySelector('.jp-hetero-state');
    expect(badge?.textContent).toBe('inadmissible');
    expect(badge?.classList.contains('jp-hetero-mod-inadmissible')).toBe(true);
    expect(row?.querySelector('.jp-hetero-workload-wait')?.textContent).toBe(
      'No node can ever hold it; it is queued again when the inventory changes.'
    );
    expect(row?.querySelector('.jp-hetero-blocker[data-kind="device-count"]')?.textContent).toBe(blocker.message);
    expect(row?.querySelector('.jp-hetero-workload-reason')).toBeNull(); // the blockers say it, in the user's language
    const other = rendered.host.querySelector('.jp-hetero-workload[data-workload-id="8"]');
    expect(other?.querySelector('.jp-hetero-blocker[data-kind="inadmissible"]')?.textContent).toBe(reason);
    click(row?.querySelector('.jp-hetero-action-cancel') ?? null);
    expect(p.onCancel).toHaveBeenCalledWith(7);
  });

  it('says a request beyond its quota can never run as asked, and work on lost nodes waits for them', () => {
    const beyond = {
      kind: 'exceeds-quota',
      flavor: 'a100-80g',
      message:
        "request exceeds the tenant's quota: it can never run as asked (it asks 2 devices of flavor a100-80g; tenant " +
        'vision has a quota of 1 and could borrow 0 more)',
      params: {}
    };
    const lost = { kind: 'node-lost', flavor: 't4', message: 'node lost: the nodes of flavor t4 left the inventory', params: {} };
    const workloads = [
      build.workload({ state: 'inadmissible', reason: '', blockers: [beyond] }),
      build.workload({ id: 8, state: 'inadmissible', reason: '', blockers: [lost] })
    ];
    rendered = render(<MyWorkSection {...section({ workloads })} />);
    const wait = (id: number) =>
      rendered?.host.querySelector(`.jp-hetero-workload[data-workload-id="${id}"] .jp-hetero-workload-wait`)?.textContent;
    expect(wait(7)).toBe(
      "Request exceeds the tenant's quota: it can never run as asked; it is queued again when the catalog's quota grows."
    );
    expect(wait(8)).toBe(
      'The nodes of its flavor were lost; it waits until one is back or another node joins the flavor.'
    );
  });

  it('shows a running job that Kueue still holds with its place in the LocalQueue and Kueue\'s reason', () => {
    const blocker = {
      kind: 'kueue-pending',
      flavor: null,
      message: 'Kueue: LocalQueue batch has not reserved quota (Pending): insufficient quota for cpu',
      params: { queue: 'batch', reason: 'Pending' }
    };
    const held = build.workload({ state: 'running', held_by: 'kueue', position: 2, eta: null, blockers: [blocker] });
    const unplaced = build.workload({ id: 8, state: 'running', held_by: 'kueue', position: null, blockers: [blocker] });
    rendered = render(<MyWorkSection {...section({ workloads: [held, unplaced] })} />);
    const row = rendered.host.querySelector('.jp-hetero-workload[data-workload-id="7"]');
    expect(row?.querySelector('.jp-hetero-state')?.textContent).toBe('running');
    expect(row?.querySelector('.jp-hetero-mod-held')?.textContent).toBe(
      'Waiting for Kueue to admit it: position 2 in its LocalQueue'
    );
    expect(row?.querySelector('.jp-hetero-blocker[data-kind="kueue-pending"]')?.textContent).toBe(blocker.message);
    const other = rendered.host.querySelector('.jp-hetero-workload[data-workload-id="8"]');
    expect(other?.querySelector('.jp-hetero-mod-held')?.textContent).toBe('Waiting for Kueue to admit it');
  });

  it('shows placement and usage of a finished job, and offers logs, explain and re-submit', () => {
    const done = build.workload({
      state: 'succeeded',
      blockers: [],
      reason: 'exit code 0',
      placement: null,
      attempts: [
        build.attempt({
          node: 'gpu-a100-0',
          exit_code: 0,
          outcome: 'succeeded',
          metrics: { peak_rss_mib: 2048, device_util_pct_mean: 87.5 },
          placement: build.placement('a100-80g', 'gpu-a100-0', [1])
        })
      ]
    });
    const p = section({ workloads: [done] });
    rendered = render(<MyWorkSection {...p} />);
    const row = rendered.host.querySelector('.jp-hetero-workload');
    expect(row?.querySelector('.jp-hetero-workload-placement')?.textContent).toBe('Placement: a100-80g on gpu-a100-0 [1]');
    expect(row?.querySelector('.jp-hetero-workload-usage')?.textContent).toBe('peak memory 2 GiB · device utilisation 87.5%');
    expect(row?.querySelector('.jp-hetero-action-cancel')).toBeNull();
    click(row?.querySelector('.jp-hetero-action-logs') ?? null);
    click(row?.querySelector('.jp-hetero-action-explain') ?? null);
    click(row?.querySelector('.jp-hetero-action-resubmit') ?? null);
    expect(p.onLogs).toHaveBeenCalledWith(7);
    expect(p.onExplain).toHaveBeenCalledWith(7);
    expect(p.onResubmit).toHaveBeenCalledWith(7);
  });

  it('counts failures apart from preemptions and lost nodes, and says only failures use up retries', () => {
    const requeued = build.workload({ attempt_count: 3, failures: 1, preemptions: 1, node_losses: 1 });
    rendered = render(<MyWorkSection {...section({ workloads: [requeued, build.workload({ id: 8 })] })} />);
    const counts = rendered.host.querySelector('[data-workload-id="7"] .jp-hetero-workload-attempts');
    expect(counts?.textContent).toBe('Attempts 3: 1 failed, 1 preempted, 1 lost with their node');
    expect(counts?.getAttribute('title')).toBe(
      'Only failures use up the retries of the queue; preemptions and lost nodes do not.'
    );
    expect(rendered.host.querySelector('[data-workload-id="8"] .jp-hetero-workload-attempts')).toBeNull();
  });

  it('cancels with an accessible button and disables actions while one runs', () => {
    const p = section();
    rendered = render(<MyWorkSection {...p} />);
    const cancel = rendered.host.querySelector('.jp-hetero-action-cancel');
    expect(cancel?.getAttribute('aria-label')).toBe('Cancel workload 7');
    click(cancel);
    expect(p.onCancel).toHaveBeenCalledWith(7);
    rendered.rerender(<MyWorkSection {...section({ busy: new Set([7]) })} />);
    expect(rendered.host.querySelector<HTMLButtonElement>('.jp-hetero-action-cancel')?.disabled).toBe(true);
  });

  it('names every action with its visible label first, then the workload', () => {
    const names = (workload: IWorkload): string[][] => {
      rendered?.unmount();
      rendered = render(<MyWorkSection {...section({ workloads: [workload] })} />);
      return [...rendered.host.querySelectorAll('.jp-hetero-workload-actions button')].map(button => [
        button.textContent ?? '',
        button.getAttribute('aria-label') ?? ''
      ]);
    };
    const queued = names(build.workload());
    const finished = names(build.workload({ state: 'failed', blockers: [] }));
    expect(queued).toEqual([
      ['Logs', 'Logs of workload 7'],
      ['Explain', 'Explain workload 7'],
      ['Metrics', 'Metrics of workload 7'],
      ['Evidence', 'Evidence of workload 7'],
      ['Cancel', 'Cancel workload 7']
    ]);
    expect(finished).toEqual([
      ['Logs', 'Logs of workload 7'],
      ['Explain', 'Explain workload 7'],
      ['Metrics', 'Metrics of workload 7'],
      ['Evidence', 'Evidence of workload 7'],
      ['Re-submit', 'Re-submit workload 7']
    ]);
    for (const [label, name] of [...queued, ...finished]) {
      expect(name.startsWith(label)).toBe(true);
    }
  });

  it('shows the ETA of a waiting workload from its absolute time', () => {
    rendered = render(<MyWorkSection {...section({ workloads: [build.workload({ eta: Date.now() / 1000 + 600 })] })} />);
    expect(rendered.host.querySelector('.jp-hetero-workload-wait')?.textContent).toMatch(/^Position 1 in queue · ETA ~(9|10) min/);
  });

  it('shows an explanation until dismissed', () => {
    const explanation: IExplanation = build.explanation({ lines: ['1. quota: ...'] });
    const p = section({ explanations: new Map([[7, explanation]]) });
    rendered = render(<MyWorkSection {...p} />);
    expect(rendered.host.querySelector('.jp-hetero-explanation')?.textContent).toContain('1. quota: ...');
    click(rendered.host.querySelector('.jp-hetero-dismiss'));
    expect(p.onDismissExplanation).toHaveBeenCalledWith(7);
  });

  it('says when there is nothing yet', () => {
    rendered = render(<MyWorkSection {...section({ workloads: [] })} />);
    expect(rendered.host.textContent).toContain('Nothing submitted yet.');
  });
});

describe('AdminSection', () => {
  it('lists tenants with members and quota use', () => {
    rendered = render(<AdminSection tenants={[build.tenant()]} role="platform-admin" lang="en" trans={trans} />);
    const card = rendered.host.querySelector('.jp-hetero-tenant[data-tenant="vision"]');
    expect(card?.querySelector('h4')?.textContent).toBe('Vision team');
    expect(card?.textContent).toContain('grace');
    expect(card?.textContent).toContain('CC-1');
    const facts = [...(card?.querySelectorAll('.jp-hetero-facts dd') ?? [])].map(dd => dd.textContent);
    expect(facts).toEqual(['ada', 'none', 'grace', 'CC-1']);
    expect(card?.querySelector('[role="progressbar"]')?.getAttribute('aria-label')).toBe('Devices: 6 / 8');
  });

  it('shows platform admins each onboarding with its state, failed step and evidence', () => {
    const entries = [build.onboarding(), build.onboarding({ kind: 'tenant', name: 'vision', state: 'accepted', failed_step: null, steps: [] })];
    rendered = render(<AdminSection tenants={[]} role="platform-admin" lang="en" trans={trans} onboarding={entries} />);
    const shown = [...rendered.host.querySelectorAll('.jp-hetero-onboarding > li')];
    expect(shown.map(li => li.querySelector('summary')?.textContent)).toEqual([
      'node gpu-t4-0: rejected (driver)',
      'tenant vision: accepted'
    ]);
    expect([...shown[0].querySelectorAll('ol li')].map(li => li.textContent)).toEqual([
      '✓ capability: 1 x T4 (nvidia), 16384 MiB each',
      "✗ driver: driver 535.161.08 is below the catalog's minimum 540"
    ]);
  });

  it('links platform admins, and only them, to the acceptance report in a new tab', () => {
    const url = '/hetero/api/v1/report?format=html&lang=en';
    rendered = render(<AdminSection tenants={[]} role="platform-admin" lang="en" trans={trans} reportUrl={url} />);
    const link = rendered.host.querySelector<HTMLAnchorElement>('.jp-hetero-report-link a');
    expect([link?.getAttribute('href'), link?.target, link?.textContent]).toEqual([
      url,
      '_blank',
      'Acceptance report (last 30 days)'
    ]);
    rendered.unmount();
    rendered = render(<AdminSection tenants={[]} role="tenant-admin" lang="en" trans={trans} reportUrl={url} />);
    expect(rendered.host.querySelector('.jp-hetero-report-link')).toBeNull();
  });
});

describe('PlacementStatus', () => {
  it('reads flavor, devices, queue and tenant, and utilisation when measured', () => {
    rendered = render(<PlacementStatus usage={build.kernelUsage()} flavorLabel="A100-80G" trans={trans} />);
    const status = (): Element | null => rendered?.host.querySelector('.jp-hetero-placement') ?? null;
    expect(status()?.textContent).toBe('A100-80G ×1 · experiment · default');
    expect(status()?.getAttribute('data-kernel-id')).toBe('k-1');
    rendered.rerender(
      <PlacementStatus usage={build.kernelUsage({ device_utilisation: { device_util_pct: 42.4 } })} flavorLabel="A100-80G" trans={trans} />
    );
    expect(status()?.textContent).toBe('A100-80G ×1 · experiment · default · device utilisation 42%');
    expect(status()?.getAttribute('title')).toContain('Node: gpu-a100-0 (emulated)');
  });

  it('gives the keyboard and screen readers the details, not only a tooltip', () => {
    rendered = render(<PlacementStatus usage={build.kernelUsage()} flavorLabel="A100-80G" trans={trans} />);
    const status = rendered.host.querySelector<HTMLElement>('.jp-hetero-placement');
    expect(status?.tabIndex).toBe(0);
    expect(status?.getAttribute('role')).toBe('group');
    // The accessible name is the visible text; the description is the tooltip's text.
    expect(status?.getAttribute('aria-label')).toBe(status?.textContent);
    const details = document.getElementById(status?.getAttribute('aria-describedby') ?? '');
    expect(details?.hidden).toBe(true);
    expect(details?.textContent).toBe(status?.getAttribute('title'));
    expect(details?.textContent).toBe(
      [
        'Hetero kernel of template interactive',
        'Node: gpu-a100-0 (emulated)',
        'Devices: 0',
        'Kernel CPU 1.5%, memory 80 MiB',
        'emulated devices are not measured'
      ].join('\n')
    );
  });

  it('words an unknown template and a real node as whole messages', () => {
    const usage = build.kernelUsage({ template: undefined, emulated: false, devices: [], device_note: undefined });
    rendered = render(<PlacementStatus usage={usage} flavorLabel="CPU" trans={trans} />);
    const status = rendered.host.querySelector('.jp-hetero-placement');
    expect(status?.textContent).toBe('CPU · experiment · default');
    expect(status?.getAttribute('title')).toBe(
      ['Hetero kernel of template unknown', 'Node: gpu-a100-0', 'Devices: none', 'Kernel CPU 1.5%, memory 80 MiB'].join('\n')
    );
  });

  it('shows nothing for a kernel that is not a hetero kernel', () => {
    rendered = render(<PlacementStatus usage={null} flavorLabel="" trans={trans} />);
    expect(rendered.host.innerHTML).toBe('');
  });
});

describe('HeteroPanelView', () => {
  const tabs: ISectionTab[] = [
    { id: 'launch', label: 'Launch' },
    { id: 'queues', label: 'Queues' },
    { id: 'work', label: 'My work' }
  ];

  it('shows the error, the version and the current section as a tab panel', () => {
    rendered = render(
      <HeteroPanelView version="0.1.0" error="Forbidden" loading={false} trans={trans} onRefresh={vi.fn()} tabs={tabs} current="queues" onSelect={vi.fn()}>
        <p className="content">queues here</p>
      </HeteroPanelView>
    );
    expect(rendered.host.querySelector('.jp-hetero-error')?.textContent).toContain('Forbidden');
    expect(rendered.host.querySelector('.jp-hetero-version')?.textContent).toBe('jupyter-hetero 0.1.0');
    const panel = rendered.host.querySelector('[role="tabpanel"]');
    expect(panel?.getAttribute('aria-labelledby')).toBe('jp-hetero-tab-queues');
    expect(panel?.querySelector('.content')).not.toBeNull();
    const current = rendered.host.querySelector('[role="tab"][aria-selected="true"]');
    expect(current?.textContent).toBe('Queues');
    expect(current?.getAttribute('tabindex')).toBe('0');
    // Only the current tab controls a panel: the others' panels are not rendered.
    expect(current?.getAttribute('aria-controls')).toBe(panel?.id);
    const controlling = [...rendered.host.querySelectorAll('[role="tab"][aria-controls]')].map(tab => tab.textContent);
    expect(controlling).toEqual(['Queues']);
  });

  it('says the shared service is not answering and retries, in place of the error, while it is unreachable', () => {
    const said = 'The shared hetero service is not answering: it is restarting or down (tried for 10 s).';
    rendered = render(
      <HeteroPanelView version="0.1.0" error={said} unreachable={true} loading={false} trans={trans} onRefresh={vi.fn()} tabs={tabs} current="queues" onSelect={vi.fn()} />
    );
    const banner = rendered.host.querySelector('.jp-hetero-unreachable');
    expect(banner?.textContent).toBe('The shared hetero service is not answering; retrying…');
    expect(banner?.getAttribute('role')).toBe('status');
    expect(banner?.getAttribute('title')).toBe(said);
    expect(rendered.host.querySelector('.jp-hetero-error')).toBeNull();
    rendered.unmount();
    rendered = render(
      <HeteroPanelView version="0.1.0" error={null} unreachable={false} loading={false} trans={trans} onRefresh={vi.fn()} tabs={tabs} current="queues" onSelect={vi.fn()} />
    );
    expect(rendered.host.querySelector('.jp-hetero-unreachable')).toBeNull();
  });

  it('shows the alerts firing above the sections, critical ones as alerts, none when none fires', () => {
    const alerts = [
      build.alert(),
      build.alert({ id: 2, rule: 'node-lost', severity: 'critical', message: 'node gpu-1 is lost' })
    ];
    rendered = render(
      <HeteroPanelView version="0.1.0" error={null} loading={false} trans={trans} onRefresh={vi.fn()} tabs={tabs} current="queues" onSelect={vi.fn()} alerts={alerts} alertMessage={alert => alert.message} />
    );
    // One closed line; opened, each alert (test/components/alerts.spec.tsx has the rest).
    expect(rendered.host.querySelector('.jp-hetero-alerts-toggle')?.textContent).toBe('2 alerts ▸');
    click(rendered.host.querySelector('.jp-hetero-alerts-toggle'));
    const shown = [...rendered.host.querySelectorAll('.jp-hetero-alert')];
    expect(shown.map(li => [li.getAttribute('data-severity'), li.getAttribute('role'), li.textContent])).toEqual([
      ['warning', 'alert', 'Warning queue batch: workload 7 has waited 90 s, past its max wait of 60 s'],
      ['critical', 'alert', 'Critical node gpu-1 is lost']
    ]);
    rendered.unmount();
    rendered = render(
      <HeteroPanelView version="0.1.0" error={null} loading={false} trans={trans} onRefresh={vi.fn()} tabs={tabs} current="queues" onSelect={vi.fn()} alerts={[]} />
    );
    expect(rendered.host.querySelector('.jp-hetero-alerts')).toBeNull();
  });

  it('switches sections with clicks and arrow keys', () => {
    const onSelect = vi.fn();
    rendered = render(
      <HeteroPanelView version={null} error={null} loading={true} trans={trans} onRefresh={vi.fn()} tabs={tabs} current="launch" onSelect={onSelect} />
    );
    expect(rendered.host.querySelector('.jp-hetero-loading')).not.toBeNull();
    expect(rendered.host.querySelector<HTMLButtonElement>('.jp-hetero-refresh')?.disabled).toBe(true);
    const launch = rendered.host.querySelector('#jp-hetero-tab-launch');
    press(launch, 'ArrowRight');
    press(launch, 'ArrowLeft');
    press(launch, 'End');
    click(rendered.host.querySelector('#jp-hetero-tab-queues'));
    expect(onSelect.mock.calls.map(c => c[0])).toEqual(['queues', 'work', 'work', 'queues']);
  });
});
