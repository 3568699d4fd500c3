/**
 * The shapes of the jupyter-hetero REST API (`jupyter_hetero/handlers/openapi.yaml`),
 * limited to the fields the panel reads. Names follow the API's domain words.
 */

/** A text in English and Simplified Chinese, as the catalog writes it. */
export interface ILocalized {
  en: string;
  zh: string;
}

/** The UI languages the API can answer in. */
export type Lang = 'en' | 'zh';

/** What `GET /version` answers. */
export interface IVersionInfo {
  version: string;
  mode?: string;
  backend?: string;
}

/** Resource amounts in the API's normalised units. */
export interface IResources {
  cpu_milli: number;
  memory_mib: number;
  device_milli: number;
}

/** A tenant's quota and use of one flavor. */
export interface IQuotaUse {
  flavor: string;
  nominal: IResources;
  borrowing_limit: IResources | null;
  lending_limit: IResources | null;
  used: IResources;
}

/** A template's default resource request. */
export interface IResourceRequest {
  cpu_milli: number;
  memory_mib: number;
  devices: number;
  device_milli: number | null;
  device_memory_mib: number | null;
  replicas: number;
  placement?: string;
}

/** The kinds of work a template can run. */
export type WorkloadKind = 'kernel' | 'job' | 'service';

/** One bounded advanced parameter of a template. */
export interface ITemplateParameter {
  name: string;
  type: 'int' | 'float' | 'memory' | 'duration' | 'choice';
  default: number | string | null;
  min: number | null;
  max: number | null;
  choices: string[];
  description?: string | null;
}

/** A task template of the catalog. */
export interface ITemplate {
  name: string;
  task_type: string;
  display: ILocalized;
  description: ILocalized;
  kinds: WorkloadKind[];
  interactive?: boolean;
  request: IResourceRequest;
  flavors: string[];
  queue: string;
  parameters: ITemplateParameter[];
  time_limit_s?: number | null;
  typical_runtime_s?: number;
  idle_timeout_s?: number | null;
}

/** A queue with its rules, counts and the caller's tenant quota use. */
export interface IQueueStatus {
  name: string;
  class: string;
  display?: ILocalized;
  description?: ILocalized;
  priority: number;
  max_wait_s: number;
  preemption?: { may_preempt?: string[]; preemptible?: boolean; grace_s?: number };
  failure?: { retries?: number; backoff_s?: number; requeue_on_node_loss?: boolean };
  reserved?: Record<string, number>;
  allowed?: boolean;
  pending: number;
  running: number;
  wait_p50_s: number | null;
  wait_p95_s: number | null;
  admitted_last_day?: number;
  quota: IQuotaUse[];
}

/** The caller's role in the platform. */
export type Role = 'member' | 'tenant-admin' | 'platform-admin';

/** What `GET /tenants/me` answers. */
export interface IMyTenant {
  user: string;
  role: Role;
  tenant: string;
  display?: ILocalized;
  quota: IQuotaUse[];
}

/** A tenant as `GET /tenants` lists it. */
export interface ITenant {
  tenant: string;
  display?: ILocalized;
  users?: string[];
  groups?: string[];
  admins?: string[];
  cost_centre?: string | null;
  quota: IQuotaUse[];
}

/** A node's accelerator group. */
export interface IAccelerator {
  vendor: string;
  model: string;
  count: number;
  memory_mib: number;
  driver_version: string | null;
  runtime: string | null;
  interconnect?: string;
  frameworks?: string[];
}

/** A node of the inventory. */
export interface INode {
  name: string;
  cpu_milli: number;
  memory_mib: number;
  arch?: string;
  accelerator: IAccelerator | null;
  frameworks?: string[];
  family?: string;
  emulated: boolean;
  source?: string;
  notes?: string[];
  flavor: string | null;
  state: 'admitted' | 'pending' | 'lost';
  schedulable?: boolean;
  allocated?: {
    cpu_milli: number;
    memory_mib: number;
    device_milli: number;
    devices: unknown[];
    workloads: number;
  };
  /** What the node uses now; null where it cannot be measured (emulated nodes). */
  utilisation?: INodeUtilisation | null;
}

/** A node's measured use: CPU and memory, and its GPUs' where NVML measures them. */
export interface INodeUtilisation {
  cpu_pct: number;
  memory_used_mib: number;
  gpu_util_pct?: number;
  gpu_memory_mib?: number;
}

/** One reason a workload cannot start yet, already in the asked language. */
export interface IBlocker {
  kind: string;
  flavor?: string | null;
  message: string;
}

/** Where a workload runs: a flavor and, per replica, a node and device indexes. */
export interface IPlacement {
  flavor: string;
  slots: Array<{
    node: string;
    devices: Array<{ index: number; milli?: number; memory_mib?: number }>;
  }>;
}

/** One run of a workload. */
export interface IAttempt {
  number: number;
  node: string | null;
  exit_code: number | null;
  outcome: string | null;
  reason?: string | null;
  metrics?: Record<string, unknown>;
  /** Where this attempt ran; kept after the workload has finished. */
  placement?: IPlacement | null;
}

/** Lifecycle states of a workload. */
export type WorkloadState =
  | 'queued'
  /** Waiting, but no node of the inventory could ever hold it; queued again when the inventory changes. */
  | 'inadmissible'
  | 'admitted'
  | 'starting'
  | 'running'
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'preempted'
  | 'lost';

/** A submitted kernel, job or service. */
export interface IWorkload {
  id: number;
  kind: WorkloadKind;
  name: string | null;
  tenant: string;
  user: string;
  template: string;
  queue: string;
  state: WorkloadState;
  reason: string | null;
  placement: IPlacement | null;
  flavor: string | null;
  node: string | null;
  attempt_count?: number;
  /** Attempts that failed by the job's own doing; only these use up the queue's retries. */
  failures?: number;
  /** Attempts ended by a preemption. */
  preemptions?: number;
  /** Attempts ended because their node (or a device of it) was lost. */
  node_losses?: number;
  attempts?: IAttempt[];
  position?: number | null;
  eta?: number | null;
  blockers?: IBlocker[];
  created_at: number;
  started_at?: number | null;
  finished_at?: number | null;
}

/** What `GET /workloads/{id}/explain` answers. */
export interface IExplanation {
  id: number;
  state: string;
  summary: string;
  lines: string[];
  position: number | null;
  eta: number | null;
}

/** One eligible flavor of a preview. */
export interface IFlavorPreview {
  flavor: string;
  display?: ILocalized;
  family?: string;
  devices_total: number;
  devices_free: number;
  cpu_free?: number;
  /** The template's runtime image on this flavor's accelerators. */
  image?: string | null;
  starts_now: boolean;
  eta_s: number | null;
  schedulable?: boolean;
  blockers: string[];
}

/** What `POST /previews` answers. */
export interface IPreview {
  template: string;
  queue: string;
  request: IResourceRequest;
  starts_now: boolean;
  flavor_now: string | null;
  eta_s: number | null;
  blockers: string[];
  flavors: IFlavorPreview[];
}

/** Values of a template's advanced parameters, as the API takes them. */
export type ParameterValues = Record<string, number | string>;

/** The file a job runs. */
export type JobPayload = { script: { path: string } } | { notebook: { path: string } };

/** What `POST /kernels` answers. */
export interface IStartedKernel {
  kernel_id: string;
  workload_id: number;
  placement?: IPlacement | null;
}

/** What `GET /kernels/{kernel_id}/usage` answers. */
export interface IKernelUsage {
  kernel_id: string;
  workload_id: number;
  cpu_percent: number;
  memory_mib: number;
  node: string;
  flavor: string;
  devices: number[];
  emulated: boolean;
  queue?: string;
  tenant?: string;
  template?: string;
  device_utilisation: { gpu_util_pct?: number; gpu_memory_mib?: number } | null;
  device_note?: string | null;
}
