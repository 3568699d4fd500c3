import { ServerConnection } from '@jupyterlab/services';

import type { components } from './api.gen';
import { apiPageUrl, requestAPI, streamAPI } from './handler';
import type {
  IAfter,
  IAlert,
  ICreateSchedule,
  IExplanation,
  IKernelUsage,
  IMyTenant,
  INode,
  IOnboarding,
  IPreview,
  IQueueStatus,
  ISchedule,
  IUpdateSchedule,
  IService,
  IStartedKernel,
  ITemplate,
  ITenantSummary,
  IVersion,
  IWorkload,
  IWorkloadEvidence,
  IWorkloadMetrics,
  JobPayload,
  Lang,
  ParameterValues
} from './types';

/**
 * Revalidate every GET with the server. JupyterLab's default (`no-store`) appends
 * a bare timestamp to the query string as a cache buster, which the API's strict
 * query parsing rejects as an unknown parameter.
 */
export const NO_CACHE: RequestCache = 'no-cache';

/** What `previewWorkload` asks about. */
export interface IPreviewWorkload {
  template: string;
  parameters: ParameterValues;
  kind: 'job' | 'kernel';
  lang: Lang;
}

/**
 * A job submission from the panel (`SubmitWorkload` of kind job, the kind added on sending): a template, its
 * parameters, the file to run, what it runs after and the folder it runs in (relative to the server's root).
 */
export type SubmitJob = { template: string; parameters: ParameterValues; after?: IAfter[]; cwd?: string } & JobPayload;

/** `Sent`, which compiles only while it is a body the API accepts (`Body`, generated from its schema). */
type Accepted<Sent extends Body, Body> = Sent;

/** The panel's two request bodies, checked against the API's: a change on either side that breaks them fails the build. */
export type PreviewBody = Accepted<IPreviewWorkload, components['schemas']['PreviewWorkload']>;
export type SubmitBody = Accepted<SubmitJob, components['schemas']['SubmitWorkload']>;

/** The typed operations of the jupyter-hetero REST API that the UI uses, one per endpoint, each named by its operationId. */
export interface IHeteroService {
  getVersion(): Promise<IVersion>;
  listTemplates(): Promise<ITemplate[]>;
  listQueues(): Promise<IQueueStatus[]>;
  getMyTenant(): Promise<IMyTenant>;
  listTenants(): Promise<ITenantSummary[]>;
  listNodes(): Promise<INode[]>;
  listServices(): Promise<IService[]>;
  listAlerts(): Promise<IAlert[]>;
  listOnboarding(): Promise<IOnboarding[]>;
  rollBackService(name: string, tenant: string): Promise<IService>;
  listWorkloads(): Promise<IWorkload[]>;
  getWorkload(id: number, lang: Lang): Promise<IWorkload>;
  submitWorkload(job: SubmitJob): Promise<IWorkload>;
  cancelWorkload(id: number): Promise<IWorkload>;
  /** Every unfinished task of the array workload `id` is one of (`DELETE ...?array=true`); answers that task. */
  cancelArray(id: number): Promise<IWorkload>;
  /** An array's tasks (`GET /workloads?array=`), at most `limit`: for an array the list cut off. */
  listArrayTasks(arrayId: number, limit: number): Promise<IWorkload[]>;
  resubmitWorkload(id: number): Promise<IWorkload>;
  explainWorkload(id: number, lang: Lang): Promise<IExplanation>;
  getWorkloadEvidence(id: number, lang: Lang): Promise<IWorkloadEvidence>;
  getWorkloadMetrics(id: number, lang: Lang): Promise<IWorkloadMetrics>;
  /** Where the evidence chain is as one self-contained HTML page (to open in a browser tab). */
  evidencePageUrl(id: number, lang: Lang): string;
  /** A workload's log, followed (`follow=true`): each chunk to `onChunk` as it comes, until the workload ends or `signal` aborts. */
  getWorkloadLogs(id: number, onChunk: (text: string) => void, signal?: AbortSignal): Promise<void>;
  previewWorkload(request: IPreviewWorkload): Promise<IPreview>;
  startKernel(template: string, parameters: ParameterValues): Promise<IStartedKernel>;
  getKernelUsage(kernelId: string): Promise<IKernelUsage>;
  /** The schedules the caller may see, each described in `lang`. */
  listSchedules(lang: Lang): Promise<ISchedule[]>;
  createSchedule(schedule: ICreateSchedule): Promise<ISchedule>;
  /** Change a schedule: only the fields given; the answer describes it in the UI's language. */
  updateSchedule(id: number, changes: IUpdateSchedule): Promise<ISchedule>;
  pauseSchedule(id: number): Promise<ISchedule>;
  resumeSchedule(id: number): Promise<ISchedule>;
  /** Submit the schedule's job now, out of its cadence; resolves the submitted workload. */
  runSchedule(id: number): Promise<IWorkload>;
  deleteSchedule(id: number): Promise<ISchedule>;
}

/** The jupyter-hetero REST API, reached through the Jupyter server connection. */
export class HeteroService implements IHeteroService {
  /** `lang`: the language the server's error messages are shown in (the UI's). */
  constructor(
    private readonly _settings: ServerConnection.ISettings = ServerConnection.makeSettings(),
    private readonly _lang: Lang = 'en'
  ) {}

  getVersion(): Promise<IVersion> {
    return this._get('version');
  }

  /** The templates the caller's tenant may use: the panel never offers one the server would refuse (403). */
  listTemplates(): Promise<ITemplate[]> {
    return this._get('templates?mine=true');
  }

  listQueues(): Promise<IQueueStatus[]> {
    return this._get('queues');
  }

  getMyTenant(): Promise<IMyTenant> {
    return this._get('tenants/me');
  }

  listTenants(): Promise<ITenantSummary[]> {
    return this._get('tenants');
  }

  listNodes(): Promise<INode[]> {
    return this._get('nodes');
  }

  listServices(): Promise<IService[]> {
    return this._get('services');
  }

  /** Every node's and tenant's onboarding checklist (platform admins). */
  listOnboarding(): Promise<IOnboarding[]> {
    return this._get('onboarding');
  }

  /** Alerts firing now that the caller may see: the platform's and their tenant's. */
  listAlerts(): Promise<IAlert[]> {
    return this._get('alerts?state=firing');
  }

  /** End a service's canary under trial (or, with none, go back to the previous stable revision). */
  rollBackService(name: string, tenant: string): Promise<IService> {
    // A name is unique per tenant only: the tenant says whose (a platform admin sees every tenant's services).
    return this._send(`services/${encodeURIComponent(name)}/rollback?tenant=${encodeURIComponent(tenant)}`, 'POST', {});
  }

  /** The caller's own workloads (`mine=true`). */
  listWorkloads(): Promise<IWorkload[]> {
    return this._get('workloads?mine=true');
  }

  getWorkload(id: number, lang: Lang): Promise<IWorkload> {
    return this._get(`workloads/${id}?lang=${lang}`);
  }

  submitWorkload(job: SubmitJob): Promise<IWorkload> {
    return this._send('workloads', 'POST', { kind: 'job', ...job });
  }

  cancelWorkload(id: number): Promise<IWorkload> {
    return this._send(`workloads/${id}`, 'DELETE');
  }

  cancelArray(id: number): Promise<IWorkload> {
    return this._send(`workloads/${id}?array=true`, 'DELETE');
  }

  listArrayTasks(arrayId: number, limit: number): Promise<IWorkload[]> {
    return this._get(`workloads?array=${arrayId}&limit=${limit}`);
  }

  resubmitWorkload(id: number): Promise<IWorkload> {
    return this._send(`workloads/${id}/resubmit`, 'POST');
  }

  explainWorkload(id: number, lang: Lang): Promise<IExplanation> {
    return this._get(`workloads/${id}/explain?lang=${lang}`);
  }

  getWorkloadEvidence(id: number, lang: Lang): Promise<IWorkloadEvidence> {
    return this._get(`workloads/${id}/evidence?lang=${lang}`);
  }

  getWorkloadMetrics(id: number, lang: Lang): Promise<IWorkloadMetrics> {
    return this._get(`workloads/${id}/metrics?lang=${lang}`);
  }

  evidencePageUrl(id: number, lang: Lang): string {
    return apiPageUrl(`workloads/${id}/evidence?format=html&lang=${lang}`, this._settings);
  }

  getWorkloadLogs(id: number, onChunk: (text: string) => void, signal?: AbortSignal): Promise<void> {
    return streamAPI(`workloads/${id}/logs?follow=true`, onChunk, signal, this._settings);
  }

  previewWorkload(request: IPreviewWorkload): Promise<IPreview> {
    return this._send('previews', 'POST', request);
  }

  startKernel(template: string, parameters: ParameterValues): Promise<IStartedKernel> {
    // The panel shows the start as it happens and opens the kernel once it runs: it asks the server to hold the
    // request until then (API callers that do not get a 202 with the waiting workload after a few seconds).
    return this._send('kernels', 'POST', { template, parameters, wait: true });
  }

  getKernelUsage(kernelId: string): Promise<IKernelUsage> {
    return this._get(`kernels/${encodeURIComponent(kernelId)}/usage`);
  }

  listSchedules(lang: Lang): Promise<ISchedule[]> {
    return this._get(`schedules?lang=${lang}`);
  }

  /** Create a schedule; the answer describes it in the UI's language. */
  createSchedule(schedule: ICreateSchedule): Promise<ISchedule> {
    return this._send(`schedules?lang=${this._lang}`, 'POST', schedule);
  }

  updateSchedule(id: number, changes: IUpdateSchedule): Promise<ISchedule> {
    return this._send(`schedules/${id}?lang=${this._lang}`, 'PATCH', changes);
  }

  pauseSchedule(id: number): Promise<ISchedule> {
    return this._send(`schedules/${id}/pause`, 'POST', {});
  }

  resumeSchedule(id: number): Promise<ISchedule> {
    return this._send(`schedules/${id}/resume`, 'POST', {});
  }

  runSchedule(id: number): Promise<IWorkload> {
    return this._send(`schedules/${id}/run`, 'POST', {});
  }

  deleteSchedule(id: number): Promise<ISchedule> {
    return this._send(`schedules/${id}`, 'DELETE');
  }

  private _get<T>(endPoint: string): Promise<T> {
    return requestAPI<T>(endPoint, { method: 'GET', cache: NO_CACHE }, this._settings, this._lang);
  }

  private _send<T>(endPoint: string, method: string, body?: unknown): Promise<T> {
    const init: RequestInit = { method, cache: NO_CACHE };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'Content-Type': 'application/json' };
    }
    return requestAPI<T>(endPoint, init, this._settings, this._lang);
  }
}
