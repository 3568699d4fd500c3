// A fake of the REST service for model tests: canned answers, a log of calls, injectable failures.
import { HeteroAPIError } from '../src/handler';
import type { IHeteroService, IPreviewWorkload, SubmitJob } from '../src/service';
import type {
  IAlert,
  ICreateSchedule,
  IOnboarding,
  IExplanation,
  IWorkloadEvidence,
  IWorkloadMetrics,
  IKernelUsage,
  IMyTenant,
  INode,
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
  Lang
} from '../src/types';
import * as build from './builders';

/** One call the fake answered: the method name and its arguments. */
export type Call = [string, ...unknown[]];

export class FakeService implements IHeteroService {
  version: IVersion = build.version();
  templates: ITemplate[] = [build.template(), build.template({ name: 'training', task_type: 'training', kinds: ['job'], interactive: false })];
  queues: IQueueStatus[] = [build.queue()];
  me: IMyTenant = build.me();
  tenants: ITenantSummary[] = [build.tenant()];
  nodes: INode[] = [build.node()];
  services: IService[] = [];
  alerts: IAlert[] = [];
  onboarding: IOnboarding[] = [];
  workloads: IWorkload[] = [build.workload()];
  /** Array tasks `listArrayTasks` finds besides `workloads` (those the list's limit cut off). */
  arrayTasks: IWorkload[] = [];
  schedules: ISchedule[] = [build.schedule()];
  /** Answers of `getWorkload` by id; the list entry when absent. */
  details = new Map<number, IWorkload>();
  /** Answers of `getWorkloadEvidence` by id; a built chain of that id when absent. */
  evidences = new Map<number, IWorkloadEvidence>();
  /** Answers of `getWorkloadMetrics` by id; built metrics of that id when absent. */
  metrics = new Map<number, IWorkloadMetrics>();
  preview: IPreview = build.preview();
  usage: IKernelUsage = build.kernelUsage();
  /** Method name -> error the next calls throw. */
  failures = new Map<string, Error>();
  /** Log chunks `getWorkloadLogs` streams, per follow. */
  logFollows: string[][] = [['hello\n']];
  readonly calls: Call[] = [];

  /** A HeteroAPIError as the server would send it. */
  static error(message: string, status = 400): HeteroAPIError {
    return new HeteroAPIError(message, status);
  }

  callsOf(name: string): Call[] {
    return this.calls.filter(call => call[0] === name);
  }

  /**
   * Hold the answer of the next call of `name` (as it is at call time) until the returned
   * function is called: a slow server, for races.
   */
  hold(name: string): () => void {
    let release: () => void = () => undefined;
    this._holds.set(name, new Promise<void>(resolve => (release = resolve)));
    return release;
  }

  private async _answer<T>(name: string, args: unknown[], value: () => T): Promise<T> {
    this.calls.push([name, ...args]);
    const failure = this.failures.get(name);
    const answer = failure ? null : value();
    const hold = this._holds.get(name);
    if (hold) {
      this._holds.delete(name);
      await hold;
    }
    if (failure) {
      throw failure;
    }
    return answer as T;
  }

  private readonly _holds = new Map<string, Promise<void>>();

  getVersion(): Promise<IVersion> {
    return this._answer('getVersion', [], () => this.version);
  }
  listTemplates(): Promise<ITemplate[]> {
    return this._answer('listTemplates', [], () => this.templates);
  }
  listQueues(): Promise<IQueueStatus[]> {
    return this._answer('listQueues', [], () => this.queues);
  }
  getMyTenant(): Promise<IMyTenant> {
    return this._answer('getMyTenant', [], () => this.me);
  }
  listTenants(): Promise<ITenantSummary[]> {
    return this._answer('listTenants', [], () => this.tenants);
  }
  listNodes(): Promise<INode[]> {
    return this._answer('listNodes', [], () => this.nodes);
  }
  listServices(): Promise<IService[]> {
    return this._answer('listServices', [], () => this.services);
  }
  listAlerts(): Promise<IAlert[]> {
    return this._answer('listAlerts', [], () => this.alerts);
  }
  listOnboarding(): Promise<IOnboarding[]> {
    return this._answer('listOnboarding', [], () => this.onboarding);
  }
  rollBackService(name: string, tenant: string): Promise<IService> {
    return this._answer('rollBackService', [name, tenant], () => {
      const found =
        this.services.find(service => service.name === name && service.tenant === tenant) ?? build.service({ name, tenant });
      return { ...found, rollout: null };
    });
  }
  listWorkloads(): Promise<IWorkload[]> {
    return this._answer('listWorkloads', [], () => this.workloads);
  }
  getWorkload(id: number, lang: Lang): Promise<IWorkload> {
    return this._answer('getWorkload', [id, lang], () => {
      const found = this.details.get(id) ?? this.workloads.find(w => w.id === id);
      if (!found) {
        throw FakeService.error(`no workload ${id}`, 404);
      }
      return found;
    });
  }
  submitWorkload(job: SubmitJob): Promise<IWorkload> {
    return this._answer('submitWorkload', [job], () => build.workload({ id: 8, template: job.template }));
  }
  cancelWorkload(id: number): Promise<IWorkload> {
    return this._answer('cancelWorkload', [id], () => build.workload({ id, state: 'cancelled' }));
  }
  cancelArray(id: number): Promise<IWorkload> {
    return this._answer('cancelArray', [id], () => {
      const found = this.workloads.find(w => w.id === id);
      if (!found?.array) {
        throw FakeService.error(`workload ${id} is not a task of an array: cancel it without array=true`, 400);
      }
      return { ...found, state: 'cancelled' };
    });
  }
  listArrayTasks(arrayId: number, limit: number): Promise<IWorkload[]> {
    return this._answer('listArrayTasks', [arrayId, limit], () =>
      [...this.workloads, ...this.arrayTasks].filter(w => w.array?.id === arrayId).slice(0, limit)
    );
  }
  resubmitWorkload(id: number): Promise<IWorkload> {
    return this._answer('resubmitWorkload', [id], () => build.workload({ id: id + 100 }));
  }
  explainWorkload(id: number, lang: Lang): Promise<IExplanation> {
    return this._answer('explainWorkload', [id, lang], () =>
      build.explanation({ id, lines: ['1. capacity: flavor cpu-standard has 34 CPU free, needs 64 CPU'] })
    );
  }
  getWorkloadEvidence(id: number, lang: Lang): Promise<IWorkloadEvidence> {
    return this._answer('getWorkloadEvidence', [id, lang], () => this.evidences.get(id) ?? build.evidence({ id }));
  }
  getWorkloadMetrics(id: number, lang: Lang): Promise<IWorkloadMetrics> {
    return this._answer('getWorkloadMetrics', [id, lang], () => this.metrics.get(id) ?? build.metrics({ workload: id }));
  }
  evidencePageUrl(id: number, lang: Lang): string {
    return `/hetero/api/v1/workloads/${id}/evidence?format=html&lang=${lang}`;
  }
  getWorkloadLogs(id: number, onChunk: (text: string) => void, signal?: AbortSignal): Promise<void> {
    return this._answer('getWorkloadLogs', [id, signal], () => {
      for (const chunk of this.logFollows.shift() ?? []) {
        onChunk(chunk);
      }
    });
  }
  previewWorkload(request: IPreviewWorkload): Promise<IPreview> {
    return this._answer('previewWorkload', [request], () => this.preview);
  }
  startKernel(template: string, parameters: Record<string, unknown>): Promise<IStartedKernel> {
    return this._answer('startKernel', [template, parameters], () => ({ kernel_id: 'k-1', workload_id: 3, placement: null }));
  }
  getKernelUsage(kernelId: string): Promise<IKernelUsage> {
    return this._answer('getKernelUsage', [kernelId], () => ({ ...this.usage, kernel_id: kernelId }));
  }
  listSchedules(lang: Lang): Promise<ISchedule[]> {
    return this._answer('listSchedules', [lang], () => this.schedules);
  }
  createSchedule(body: ICreateSchedule): Promise<ISchedule> {
    return this._answer('createSchedule', [body], () => {
      const created = build.schedule({
        id: 100 + this.schedules.length,
        name: body.name,
        cron: body.cron,
        timezone: body.timezone ?? 'UTC',
        runs: [],
        last_run_at: null
      });
      this.schedules = [...this.schedules, created];
      return created;
    });
  }
  updateSchedule(id: number, changes: IUpdateSchedule): Promise<ISchedule> {
    return this._answer('updateSchedule', [id, changes], () => {
      const { job, ...fields } = changes;
      const found = this._schedule(id);
      const defined = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null && value !== undefined));
      return this._setSchedule(id, { ...defined, job: { ...found.job, ...(job?.template ? { template: job.template } : {}) } });
    });
  }
  pauseSchedule(id: number): Promise<ISchedule> {
    return this._answer('pauseSchedule', [id], () => this._setSchedule(id, { state: 'paused', next_run_at: null }));
  }
  resumeSchedule(id: number): Promise<ISchedule> {
    return this._answer('resumeSchedule', [id], () => this._setSchedule(id, { state: 'active', next_run_at: 1_796_666_400 }));
  }
  runSchedule(id: number): Promise<IWorkload> {
    return this._answer('runSchedule', [id], () => {
      const found = this._schedule(id);
      const workload = build.workload({ id: 50 + found.runs.length, template: found.job.template });
      this._setSchedule(id, { runs: [build.scheduleRun({ workload: workload.id, state: 'queued' }), ...found.runs] });
      return workload;
    });
  }
  deleteSchedule(id: number): Promise<ISchedule> {
    return this._answer('deleteSchedule', [id], () => {
      const found = this._schedule(id);
      this.schedules = this.schedules.filter(s => s.id !== id);
      return { ...found, state: 'deleted' };
    });
  }

  private _schedule(id: number): ISchedule {
    const found = this.schedules.find(s => s.id === id);
    if (!found) {
      throw FakeService.error(`schedule ${id} does not exist`, 404);
    }
    return found;
  }

  private _setSchedule(id: number, change: Partial<ISchedule>): ISchedule {
    const changed = { ...this._schedule(id), ...change };
    this.schedules = this.schedules.map(s => (s.id === id ? changed : s));
    return changed;
  }
}

/** Collects what a signal emits. */
export function record<T>(signal: { connect: (slot: (sender: unknown, args: T) => void) => boolean }): T[] {
  const seen: T[] = [];
  signal.connect((_, args) => seen.push(args));
  return seen;
}
