/**
 * The shapes of the jupyter-hetero REST API under the names the panel uses. They are aliases of
 * `api.gen.ts`, which `npm run generate:types` builds from the OpenAPI document, itself built from
 * the server's models: change the models, never these. Each is named `I` and the schema's own name (the
 * JupyterLab convention for interfaces), never another word.
 */

import type { components } from './api.gen';

type Schemas = components['schemas'];

/** A text in English and Simplified Chinese, as the catalog writes it. */
export type ILocalized = Schemas['Localized'];

/** The UI languages the API can answer in. */
export type Lang = keyof ILocalized;

/** What `GET /version` answers. */
export type IVersion = Schemas['Version'];

/** Resource amounts in the API's normalised units. */
export type IResources = Schemas['Resources'];

/** A tenant's quota and use of one flavor. */
export type IQuotaUse = Schemas['QuotaUse'];

/** A template's default resource request. */
export type IResourceRequest = Schemas['ResourceRequest'];

/** The kinds of work a template can run. */
export type WorkloadKind = Schemas['WorkloadKind'];

/** One bounded advanced parameter of a template. */
export type IAdvancedParameter = Schemas['AdvancedParameter'];

/** A task template of the catalog. */
export type ITemplate = Schemas['Template'];

/** Which queues a queue may evict, and how its own work is evicted. */
export type IPreemptionPolicy = Schemas['PreemptionPolicy'];

/** How a queue retries failed work. */
export type IFailurePolicy = Schemas['FailurePolicy'];

/** A queue with its rules, counts and the caller's tenant quota use. */
export type IQueueStatus = Schemas['QueueStatus'];

/** The caller's role in the platform. */
export type Role = Schemas['Role'];

/** What `GET /tenants/me` answers. */
export type IMyTenant = Schemas['MyTenant'];

/** A tenant as `GET /tenants` lists it. */
export type ITenantSummary = Schemas['TenantSummary'];

/** A node's accelerator group. */
export type IAccelerator = Schemas['Accelerator'];

/** A node of the inventory. */
export type INode = Schemas['Node'];

/** One device of a node's accelerator group: index, link domain, NUMA node, PCI bus, health. */
export type IDeviceInfo = Schemas['DeviceInfo'];

/** A node's network: RDMA or not, and its bandwidth. */
export type INetwork = Schemas['Network'];

/** What `GET /services` answers, one each. */
export type IService = Schemas['Service'];

/** A node's or tenant's onboarding checklist with the evidence of each step (`GET /onboarding`). */
export type IOnboarding = Schemas['Onboarding'];

/** A rule that found something wrong, from firing to resolved (`GET /alerts`). */
export type IAlert = Schemas['Alert'];

/** A node's measured use: CPU and memory, and its devices' where measured. */
export type INodeUtilisation = Schemas['NodeUtilisation'];

/** One reason a workload cannot start yet, already in the asked language. */
export type IBlocker = Schemas['Blocker'];

/** Where a workload runs: a flavor and, per replica, a node and device indexes. */
export type IPlacement = Schemas['Placement'];

/** One run of a workload. */
export type IAttempt = Schemas['Attempt'];

/** A submitted kernel, job or service. */
export type IWorkload = Schemas['Workload'];

/** Lifecycle states of a workload; inadmissible: waiting, but no node could ever hold it. */
export type WorkloadState = IWorkload['state'];

/** A job's place in its array (`POST /workloads` with `array`): the array's id (its first task's), index, size, limit. */
export type IArrayTask = Schemas['ArrayTask'];

/** What `GET /workloads/{id}/explain` answers. */
export type IExplanation = Schemas['Explanation'];

/** What `GET /workloads/{id}/evidence` answers: one workload's evidence chain, from its request to its release. */
export type IWorkloadEvidence = Schemas['WorkloadEvidence'];

/** What `GET /workloads/{id}/metrics` answers: its declared metrics, every series recorded, and what is not measured and why. */
export type IWorkloadMetrics = Schemas['WorkloadMetrics'];

/** One metric of a workload over its attempts: `points` are `[at, value, attempt]`, oldest first. */
export type IMetricSeries = Schemas['MetricSeries'];

/** One eligible flavor of a preview. */
export type IFlavorPreview = Schemas['FlavorPreview'];

/** What `POST /previews` answers. */
export type IPreview = Schemas['Preview'];

/** Values of a template's advanced parameters, as the API takes them. */
export type ParameterValues = Record<string, number | string>;

/** The file a job runs. */
export type JobPayload = { script: { path: string } } | { notebook: { path: string } };

/** One workload a job waits for, and how it must end (`after` of a submission; `--after ID:condition`). */
export interface IAfter {
  workload: number;
  condition: 'ok' | 'any' | 'failed';
}

/** What `POST /kernels` answers. */
export type IStartedKernel = Schemas['StartedKernel'];

/** What `GET /kernels/{kernel_id}/usage` answers. */
export type IKernelUsage = Schemas['KernelUsage'];

/** One run a schedule submitted: its workload, when it was due and submitted, its state, and whether it came late. */
export type IScheduleRun = Schemas['ScheduleRun'];

/** The job a schedule submits at each due time, as stored. */
export type IScheduleJob = Schemas['ScheduleJob'];

/** A recurring schedule (`GET /schedules`): its cadence in cron and in words, its next run, its latest runs. */
export type ISchedule = Schemas['Schedule'];

/** What `POST /schedules` takes: a name, a cron in a time zone, the missed-runs rule and the job of each run. */
export type ICreateSchedule = Schemas['CreateSchedule'];

/** What `PATCH /schedules/{id}` takes: only what changes (a job's field given replaces the stored one). */
export type IUpdateSchedule = Schemas['UpdateSchedule'];
