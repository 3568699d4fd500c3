// Builders of API answers for tests: realistic defaults, override what a test is about.
import type {
  IAlert,
  IOnboarding,
  IAttempt,
  IExplanation,
  IFailurePolicy,
  IFlavorPreview,
  IKernelUsage,
  IMyTenant,
  INode,
  IPlacement,
  IPreemptionPolicy,
  IPreview,
  IQueueStatus,
  IQuotaUse,
  ISchedule,
  IScheduleRun,
  IService,
  ITemplate,
  ITenantSummary,
  IVersion,
  IWorkloadEvidence,
  IWorkloadMetrics,
  IWorkload
} from '../src/types';

export function version(overrides: Partial<IVersion> = {}): IVersion {
  return {
    version: '0.1.0',
    api: 'v1',
    mode: 'single-server',
    backend: 'local',
    schema_version: 4,
    database: 'sqlite',
    ...overrides
  };
}

/** A placement of one replica on `node`, holding the devices with these indexes. */
export function placement(flavor: string, node: string, indexes: number[] = []): IPlacement {
  return {
    flavor,
    on_reservation: false,
    borrowing: false,
    slots: [{ node, devices: indexes.map(index => ({ index })) }]
  };
}

export function attempt(overrides: Partial<IAttempt> = {}): IAttempt {
  return {
    number: 1,
    node: 'cpu-0',
    started_at: 1000,
    ended_at: null,
    exit_code: null,
    outcome: null,
    reason: null,
    metrics: {},
    archive: null,
    placement: null,
    ...overrides
  };
}

export function explanation(overrides: Partial<IExplanation> = {}): IExplanation {
  return {
    id: 7,
    state: 'queued',
    summary: 'waiting',
    lines: [],
    position: 1,
    eta: null,
    eta_because: null,
    blockers: [],
    placement: null,
    ...overrides
  };
}

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
      replicas: 1,
      placement: 'any'
    },
    flavors: ['a100-80g', 'h100-80g'],
    canary: { replicas: 1, traffic: 0.2, window_s: 60, min_requests: 20 },
    variants: [
      {
        family: 'nvidia',
        image: 'nvcr.io/nvidia/pytorch:24.10-py3',
        env: {},
        min_driver: null,
        min_runtime: null,
        min_firmware: null,
        frameworks: ['pytorch'],
        requires: [],
        python: null
      }
    ],
    metrics: [],
    queue: 'experiment',
    parameters: [
      { name: 'devices', type: 'int', default: 1, min: 1, max: 8, choices: [], description: null },
      { name: 'memory', type: 'memory', default: 65536, min: 8192, max: 524288, choices: [], description: null },
      { name: 'variant', type: 'choice', default: null, min: null, max: null, choices: ['nvidia', 'ascend'], description: null },
      { name: 'flavor', type: 'choice', default: null, min: null, max: null, choices: ['a100-80g', 'h100-80g'], description: null }
    ],
    labels: [],
    interconnect: [],
    frameworks: [],
    inference_engines: [],
    network: { rdma: false, min_bandwidth_gbps: 0 },
    time_limit_s: null,
    typical_runtime_s: 3600,
    idle_timeout_s: null,
    ...overrides
  };
}

export function flavorPreview(overrides: Partial<IFlavorPreview> = {}): IFlavorPreview {
  return {
    flavor: 'a100-80g',
    display: { en: 'A100-80G', zh: 'A100-80G' },
    family: 'nvidia',
    devices_total: 2,
    devices_free: 1,
    cpu_free: 64,
    image: 'nvcr.io/nvidia/pytorch:24.10-py3',
    starts_now: true,
    flavor_now: 'a100-80g',
    eta: 1000,
    eta_s: 0,
    blockers: [],
    victims: [],
    ...overrides
  };
}

export function preview(overrides: Partial<IPreview> = {}): IPreview {
  return {
    template: 'fine-tuning',
    queue: 'experiment',
    request: template().request,
    time_limit_s: null,
    starts_now: true,
    flavor_now: 'a100-80g',
    eta: 1000,
    eta_s: 0,
    blockers: [],
    victims: [],
    flavors: [
      flavorPreview(),
      flavorPreview({
        flavor: 'h100-80g',
        display: { en: 'H100/H200 80G+', zh: 'H100/H200 80G+' },
        devices_total: 0,
        devices_free: 0,
        starts_now: false,
        flavor_now: null,
        eta: null,
        eta_s: null,
        schedulable: false,
        blockers: ['capacity: no ready node belongs to flavor h100-80g']
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
    escalation: { action: 'notify', priority_boost: 0 },
    preemption: preemption(),
    failure: failure(),
    borrowing: true,
    reserved: {},
    lend_reserved: true,
    priority_class: null,
    kueue_queue: null,
    allowed: true,
    pending: 1,
    running: 2,
    wait_p50_s: 90,
    wait_p95_s: 600,
    admitted_last_day: 3,
    quota: [quota('a100-80g', 1), quota('t4', 0, 0)],
    status_at: 1000,
    ...overrides
  };
}

export function preemption(overrides: Partial<IPreemptionPolicy> = {}): IPreemptionPolicy {
  return { may_preempt: [], preemptible: true, idle_kernels_only: false, grace_s: 60, ...overrides };
}

export function failure(overrides: Partial<IFailurePolicy> = {}): IFailurePolicy {
  return {
    retries: 0,
    backoff_s: 10,
    backoff_factor: 2,
    requeue_on_node_loss: true,
    resume_from_checkpoint: false,
    ...overrides
  };
}

export function me(overrides: Partial<IMyTenant> = {}): IMyTenant {
  return {
    user: 'ada',
    role: 'member',
    tenant: 'vision',
    display: { en: 'Vision team', zh: '视觉团队' },
    cohort: 'default',
    cost_centre: 'CC-1',
    queues: ['*'],
    templates: ['*'],
    quota: [quota('a100-80g')],
    ...overrides
  };
}

export function tenant(overrides: Partial<ITenantSummary> = {}): ITenantSummary {
  return {
    tenant: 'vision',
    display: { en: 'Vision team', zh: '视觉团队' },
    users: ['ada'],
    groups: [],
    admins: ['grace'],
    cohort: 'default',
    weight: 1,
    cost_centre: 'CC-1',
    queues: ['*'],
    templates: ['*'],
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
    labels: {},
    accelerator: {
      vendor: 'nvidia',
      model: 'A100-SXM4-80GB',
      count: 2,
      memory_mib: 81920,
      driver_version: '550.54.15',
      runtime: 'cuda 12.4',
      interconnect: 'nvlink',
      sharing: 'whole',
      resource: null,
      frameworks: ['pytorch'],
      inference_engines: [],
      firmware_version: null,
      devices: []
    },
    network: { rdma: false, bandwidth_gbps: 10 },
    frameworks: ['pytorch'],
    emulated: true,
    source: 'emulated',
    notes: [],
    family: 'nvidia',
    flavor: 'a100-80g',
    state: 'ready',
    schedulable: true,
    first_seen: 1000,
    last_seen: 1000,
    held_by_others: { cpu_milli: 0, memory_mib: 0, devices: 0 },
    allocated: { cpu_milli: 8000, memory_mib: 65536, device_milli: 1000, devices: [], workloads: 1 },
    utilisation: null,
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
    request: {
      request: { ...template().request, devices: 0, device_memory_mib: null },
      flavors: ['cpu-standard'],
      variant_families: ['cpu'],
      time_limit_s: null,
      parameters: {}
    },
    spec: { payload: 'command', command: ['python', 'prep.py'] },
    placement: null,
    flavor: null,
    node: null,
    attempt_count: 0,
    failures: 0,
    preemptions: 0,
    node_losses: 0,
    updated_at: 1000,
    admitted_at: null,
    started_at: null,
    finished_at: null,
    time_limit_s: null,
    priority_boost: 0,
    escalated: false,
    stopping: null,
    not_before: null,
    active: false,
    position: 1,
    eta: null,
    blockers: [
      {
        kind: 'capacity',
        flavor: 'cpu-standard',
        message: 'capacity: flavor cpu-standard has 34 CPU free, needs 64 CPU',
        params: {}
      }
    ],
    created_at: 1000,
    ...overrides
  };
}

/**
 * Task `index` of array `arrayId` (`0-{size-1}`, `%limit`), named `shard[index]`, its id the array's plus its index,
 * as a submission with `array` stores them; `overrides` as `workload`'s.
 */
export function arrayTask(
  arrayId: number,
  index: number,
  overrides: Partial<IWorkload> = {},
  array: { size?: number; limit?: number | null } = {}
): IWorkload {
  const size = array.size ?? 3;
  return workload({
    id: arrayId + index,
    name: `shard[${index}]`,
    array: { id: arrayId, index, size, limit: array.limit ?? null, indices: `0-${size - 1}` },
    blockers: [],
    ...overrides
  });
}

export function kernelUsage(overrides: Partial<IKernelUsage> = {}): IKernelUsage {
  return {
    kernel_id: 'k-1',
    workload_id: 3,
    pid: 4242,
    cpu_percent: 1.5,
    memory_mib: 80,
    node: 'gpu-a100-0',
    flavor: 'a100-80g',
    devices: [0],
    emulated: true,
    queue: 'experiment',
    tenant: 'default',
    template: 'interactive',
    execution_state: 'idle',
    idle: true,
    device_utilisation: null,
    device_note: 'emulated devices are not measured',
    ...overrides
  };
}

export function alert(overrides: Partial<IAlert> = {}): IAlert {
  return {
    id: 1,
    rule: 'queue-wait',
    kind: 'queue-wait',
    subject: 'queue/batch',
    tenant: null,
    severity: 'warning',
    state: 'firing',
    message: 'queue batch: workload 7 has waited 90 s, past its max wait of 60 s',
    message_zh: '队列 batch：作业 7 已等待 90 秒，超过其最长等待时间 60 秒',
    figures: { queue: 'batch', workload: 7, waited_s: 90, max_wait_s: 60 },
    fired_at: 0,
    resolved_at: null,
    deliveries: [],
    ...overrides
  };
}

export function onboarding(overrides: Partial<IOnboarding> = {}): IOnboarding {
  return {
    kind: 'node',
    name: 'gpu-t4-0',
    state: 'rejected',
    failed_step: 'driver',
    steps: [
      { name: 'capability', ok: true, status: 'passed', evidence: '1 x T4 (nvidia), 16384 MiB each', at: 0 },
      { name: 'driver', ok: false, status: 'failed', evidence: "driver 535.161.08 is below the catalog's minimum 540", at: 1 }
    ],
    by: 'server',
    updated_at: 1,
    ...overrides
  };
}

export function traffic(overrides: Partial<IService['traffic']> = {}): IService['traffic'] {
  return {
    window_s: 60,
    requests: 120,
    requests_per_s: 2,
    error_rate: 0.01,
    latency_ms: { p50: 4, p95: 9.5, p99: 14 },
    ...overrides
  };
}

export function service(overrides: Partial<IService> = {}): IService {
  const spec = { command: ['python', 'serve.py'], code: null, env: {}, parameters: {}, readiness_path: '/health' };
  return {
    name: 'resnet',
    tenant: 'vision',
    user: 'alice',
    template: 'online-inference',
    queue: 'inference',
    state: 'active',
    revision: 1,
    replicas: 2,
    min_replicas: 1,
    max_replicas: 4,
    command: spec.command,
    code: null,
    env: {},
    parameters: {},
    readiness_path: '/health',
    target_in_flight: null,
    in_flight: 0,
    endpoint: '/hetero/endpoints/vision/resnet/',
    ready_replicas: 2,
    device_utilisation: null,
    traffic: traffic(),
    replica_workloads: [],
    rollout: null,
    revisions: [{ revision: 1, spec, outcome: 'created', at: 0, by: 'alice' }],
    created_at: 0,
    updated_at: 0,
    ...overrides
  };
}

/** A job preempted once, then run to success: two attempts, two waits, an intact audit chain. */
export function evidence(overrides: Partial<IWorkloadEvidence> = {}): IWorkloadEvidence {
  const started = 1_700_000_000;
  const labels = { 'nvidia.com/gpu.product': 'A100-SXM4-80GB', zone: 'a' };
  const attempt = (number: number, outcome: string, endedAt: number): IWorkloadEvidence['attempts'][number] => ({
    number,
    nodes: ['gpu-a100-0'],
    placement: null,
    node_labels: { 'gpu-a100-0': { flavor: 'a100-80g', chip: 'A100-SXM4-80GB', driver: '550.54', runtime: '12.4', labels } },
    image: 'nvcr.io/nvidia/pytorch:24.05-py3',
    runtime: { family: 'nvidia' },
    started_at: started + number * 100,
    ended_at: endedAt,
    outcome,
    exit_code: outcome === 'succeeded' ? 0 : null,
    reason: outcome === 'preempted' ? 'preempted by urgent workload 8' : null,
    metrics: { peak_rss_mib: 512 },
    log_tail: { lines: [`attempt ${number}`], truncated: false }
  });
  const event = { id: 20, at: started + 400, type: 'succeeded', reason: 'exit code 0', data: {} };
  return {
    id: 7,
    name: 'train',
    state: 'succeeded',
    request: {
      kind: 'job',
      name: 'train',
      template: 'training',
      queue: 'batch',
      parameters: { devices: 2 },
      flavors: ['a100-80g'],
      resolved: {},
      payload: 'script',
      submitter: 'alice',
      tenant: 'vision',
      submitted_at: started,
      idempotency_key: null
    },
    attempts: [attempt(1, 'preempted', started + 150), attempt(2, 'succeeded', started + 400)],
    wait: [
      { attempt: 1, from: started, from_event: 'submitted', admitted_at: started + 2, waited_s: 2, blockers: [] },
      {
        attempt: 2,
        from: started + 150,
        from_event: 'requeued',
        admitted_at: started + 200,
        waited_s: 50,
        blockers: [
          {
            at: started + 151,
            event: 'waiting',
            blockers: [{ kind: 'quota', flavor: 'a100-80g', message: 'quota: tenant vision uses 2/2 devices', params: {} }]
          }
        ]
      }
    ],
    utilisation: {
      attempts: [
        { attempt: 1, device_util_pct_mean: null },
        { attempt: 2, device_util_pct_mean: 71.5, device_memory_peak_mib: 2048 }
      ],
      series_recorded: false,
      series: []
    },
    alerts: [],
    preemptions: [
      {
        at: started + 140,
        attempt: 1,
        by_workload: 8,
        by_admin: null,
        why: 'priority',
        message: 'preempted by urgent workload 8',
        grace_deadline: started + 170
      }
    ],
    release: {
      final: true,
      state: 'succeeded',
      reason: 'exit code 0',
      finished_at: started + 400,
      event,
      attempts: 2,
      failures: 0,
      preemptions: 1,
      node_losses: 0
    },
    events: [event],
    audit: {
      entries: [
        {
          id: 3,
          at: started + 140,
          actor: 'scheduler',
          action: 'workload.preempt',
          target: 'workload/7',
          outcome: 'done',
          detail: {},
          prev_hash: '0'.repeat(64),
          hash: 'b'.repeat(64)
        }
      ],
      verification: { intact: true, entries: 5, first_break: null, problem: null }
    },
    ...overrides
  };
}

/** A training job's metrics: a reported loss over three points, measured bytes written, device figures not measured. */
export function metrics(overrides: Partial<IWorkloadMetrics> = {}): IWorkloadMetrics {
  const at = 1_700_000_000;
  return {
    workload: 7,
    declared: ['device_util', 'device_memory', 'loss'],
    series: [
      { name: 'io_write_bytes', unit: 'bytes', source: 'procfs', points: [[at, 0, 1], [at + 10, 8_388_608, 1]] },
      { name: 'loss', unit: null, source: 'reported', points: [[at, 0.9, 1], [at + 1, 0.5, 1], [at + 2, 0.31, 1]] }
    ],
    not_measured: [
      { name: 'device_util', why: 'device_util: needs NVIDIA, AMD, Ascend or Intel devices with their tool; this workload was given none' },
      { name: 'device_memory', why: 'device_memory: needs NVIDIA, AMD, Ascend or Intel devices with their tool; this workload was given none' }
    ],
    ...overrides
  };
}

/** One run of a schedule: workload 41, due and submitted at 02:00 UTC on 2026-12-07, succeeded, on time. */
export function scheduleRun(overrides: Partial<IScheduleRun> = {}): IScheduleRun {
  return { workload: 41, due_at: 1_796_608_800, submitted_at: 1_796_608_801, state: 'succeeded', late: false, ...overrides };
}

/** Ada's nightly report at 02:00 Shanghai time, active, run once so far, next due at 02:00 on 2026-12-08 there. */
export function schedule(overrides: Partial<ISchedule> = {}): ISchedule {
  return {
    id: 3,
    name: 'nightly-report',
    user: 'ada',
    tenant: 'vision',
    cron: '0 2 * * *',
    timezone: 'Asia/Shanghai',
    missed: 'run-once',
    state: 'active',
    // 2026-12-08 02:00 in Shanghai (18:00 UTC the day before)
    next_run_at: 1_796_666_400,
    last_run_at: 1_796_580_001,
    created_at: 1_796_500_000,
    updated_at: 1_796_500_000,
    job: {
      template: 'data-preprocessing',
      queue: null,
      payload: 'notebook',
      parameters: {},
      name: null,
      notebook: { path: 'reports/daily.ipynb', parameters: {} },
      cwd: null,
      python: null
    },
    description: 'every day at 02:00 (Asia/Shanghai)',
    runs: [scheduleRun({ due_at: 1_796_580_000, submitted_at: 1_796_580_001 })],
    last_error: null,
    ...overrides
  };
}
