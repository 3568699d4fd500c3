// Builders of API answers for tests: realistic defaults, override what a test is about.
import type {
  IFlavorPreview,
  IKernelUsage,
  IMyTenant,
  INode,
  IPreview,
  IQueueStatus,
  IQuotaUse,
  ITemplate,
  ITenant,
  IWorkload
} from '../src/types';

export function template(overrides: Partial<ITemplate> = {}): ITemplate {
  return {
    name: 'fine-tuning',
    task_type: 'fine-tuning',
    display: { en: 'Fine-tuning', zh: '模型微调' },
    description: { en: 'Fine-tune a pretrained model.', zh: '对预训练模型做微调。' },
    kinds: ['kernel', 'job'],
    interactive: true,
    request: {
      cpu_milli: 8000,
      memory_mib: 65536,
      devices: 1,
      device_milli: null,
      device_memory_mib: 40960,
      replicas: 1
    },
    flavors: ['a100-80g', 'h100-80g'],
    queue: 'experiment',
    parameters: [
      { name: 'devices', type: 'int', default: 1, min: 1, max: 8, choices: [] },
      { name: 'memory', type: 'memory', default: 65536, min: 8192, max: 524288, choices: [] },
      { name: 'variant', type: 'choice', default: null, min: null, max: null, choices: ['nvidia', 'ascend'] },
      { name: 'flavor', type: 'choice', default: null, min: null, max: null, choices: ['a100-80g', 'h100-80g'] }
    ],
    ...overrides
  };
}

export function flavorPreview(overrides: Partial<IFlavorPreview> = {}): IFlavorPreview {
  return {
    flavor: 'a100-80g',
    display: { en: 'A100-80G', zh: 'A100-80G' },
    devices_total: 2,
    devices_free: 1,
    cpu_free: 64,
    image: 'nvcr.io/nvidia/pytorch:24.10-py3',
    starts_now: true,
    eta_s: 0,
    blockers: [],
    ...overrides
  };
}

export function preview(overrides: Partial<IPreview> = {}): IPreview {
  return {
    template: 'fine-tuning',
    queue: 'experiment',
    request: template().request,
    starts_now: true,
    flavor_now: 'a100-80g',
    eta_s: 0,
    blockers: [],
    flavors: [
      flavorPreview(),
      flavorPreview({
        flavor: 'h100-80g',
        display: { en: 'H100/H200 80G+', zh: 'H100/H200 80G+' },
        devices_total: 0,
        devices_free: 0,
        starts_now: false,
        eta_s: null,
        schedulable: false,
        blockers: ['capacity: no admitted node belongs to flavor h100-80g']
      })
    ],
    ...overrides
  };
}

export function quota(flavor: string, usedDevices = 0, nominalDevices = 8): IQuotaUse {
  return {
    flavor,
    nominal: { cpu_milli: 256000, memory_mib: 2097152, device_milli: nominalDevices * 1000 },
    borrowing_limit: null,
    lending_limit: null,
    used: { cpu_milli: usedDevices * 8000, memory_mib: usedDevices * 65536, device_milli: usedDevices * 1000 }
  };
}

export function queue(overrides: Partial<IQueueStatus> = {}): IQueueStatus {
  return {
    name: 'experiment',
    class: 'experiment',
    display: { en: 'Research experiments', zh: '研究实验' },
    description: { en: 'Interactive kernels.', zh: '交互式内核。' },
    priority: 200,
    max_wait_s: 1800,
    preemption: { may_preempt: [], preemptible: true, grace_s: 60 },
    failure: { retries: 0 },
    pending: 1,
    running: 2,
    wait_p50_s: 90,
    wait_p95_s: 600,
    quota: [quota('a100-80g', 1), quota('t4', 0, 0)],
    ...overrides
  };
}

export function me(overrides: Partial<IMyTenant> = {}): IMyTenant {
  return { user: 'ada', role: 'member', tenant: 'vision', quota: [quota('a100-80g')], ...overrides };
}

export function tenant(overrides: Partial<ITenant> = {}): ITenant {
  return {
    tenant: 'vision',
    display: { en: 'Vision team', zh: '视觉团队' },
    users: ['ada'],
    groups: [],
    admins: ['grace'],
    cost_centre: 'CC-1',
    quota: [quota('a100-80g', 6)],
    ...overrides
  };
}

export function node(overrides: Partial<INode> = {}): INode {
  return {
    name: 'gpu-a100-0',
    cpu_milli: 64000,
    memory_mib: 524288,
    arch: 'x86_64',
    accelerator: {
      vendor: 'nvidia',
      model: 'A100-SXM4-80GB',
      count: 2,
      memory_mib: 81920,
      driver_version: '550.54.15',
      runtime: 'cuda 12.4',
      interconnect: 'nvlink',
      frameworks: ['pytorch']
    },
    emulated: true,
    flavor: 'a100-80g',
    state: 'admitted',
    allocated: { cpu_milli: 8000, memory_mib: 65536, device_milli: 1000, devices: [], workloads: 1 },
    ...overrides
  };
}

export function workload(overrides: Partial<IWorkload> = {}): IWorkload {
  return {
    id: 7,
    kind: 'job',
    name: null,
    tenant: 'vision',
    user: 'ada',
    template: 'data-preprocessing',
    queue: 'batch',
    state: 'queued',
    reason: null,
    placement: null,
    flavor: null,
    node: null,
    position: 1,
    eta: null,
    blockers: [
      {
        kind: 'capacity',
        flavor: 'cpu-standard',
        message: 'capacity: flavor cpu-standard has 34 CPU free, needs 64 CPU'
      }
    ],
    created_at: 1000,
    ...overrides
  };
}

export function kernelUsage(overrides: Partial<IKernelUsage> = {}): IKernelUsage {
  return {
    kernel_id: 'k-1',
    workload_id: 3,
    cpu_percent: 1.5,
    memory_mib: 80,
    node: 'gpu-a100-0',
    flavor: 'a100-80g',
    devices: [0],
    emulated: true,
    queue: 'experiment',
    tenant: 'default',
    template: 'interactive',
    device_utilisation: null,
    device_note: 'emulated devices are not measured',
    ...overrides
  };
}
