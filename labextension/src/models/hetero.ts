import { localized } from '../format';
import { HeteroAPIError } from '../handler';
import type { IHeteroService } from '../service';
import type { ITrafficPoint } from '../components/services/TrafficChart';
import { Signal } from '@lumino/signaling';

import type {
  IAlert,
  ILocalized,
  IMyTenant,
  INode,
  IOnboarding,
  IQueueStatus,
  IService,
  ITemplate,
  ITenantSummary,
  Lang
} from '../types';
import { IFailure, messageOf, ModelBase } from './base';
import { LaunchModel } from './launch';
import { ScheduleModel } from './schedules';
import { WorkModel } from './work';

/** How many refreshes a service's chart shows. */
const HISTORY_POINTS = 30;

/**
 * Everything the Hetero panel shows, refreshed from the REST API.
 *
 * ```ts
 * const model = new HeteroModel({ service: new HeteroService(), lang: 'en' });
 * model.changed.connect(() => render(model));
 * model.failed.connect((_, failure) => Notification.error(failure.message));
 * await model.refresh();        // version, tenant, templates, queues, nodes, my work (+ tenants for admins)
 * ```
 */
export class HeteroModel extends ModelBase {
  constructor(options: HeteroModel.IOptions) {
    super();
    this._service = options.service;
    this.lang = options.lang ?? 'en';
    this.work = new WorkModel({ service: this._service, lang: this.lang });
    this.launch = new LaunchModel({
      service: this._service,
      lang: this.lang,
      previewDelayMs: options.previewDelayMs
    });
    this.schedules = new ScheduleModel({ service: this._service, lang: this.lang, timeZone: options.timeZone });
    for (const part of [this.work, this.launch, this.schedules]) {
      part.changed.connect(this._forwardChanged, this);
      part.failed.connect(this._forwardFailed, this);
    }
    this.launch.changed.connect(this._learnFlavors, this);
  }

  /** The language blockers, explanations and catalog texts are shown in. */
  readonly lang: Lang;

  /** The caller's workloads and the actions on them. */
  readonly work: WorkModel;

  /** The chosen template, its preview, starting kernels and submitting jobs. */
  readonly launch: LaunchModel;

  /** The caller's recurring schedules, the actions on them and the "New schedule" form. */
  readonly schedules: ScheduleModel;

  /** The server's jupyter-hetero version, once known. */
  get version(): string | null {
    return this._version;
  }

  /** The caller's tenant, role and quota, once known. */
  get me(): IMyTenant | null {
    return this._me;
  }

  /** Whether the caller may see the Admin section. */
  get isAdmin(): boolean {
    return this._me?.role === 'tenant-admin' || this._me?.role === 'platform-admin';
  }

  get templates(): readonly ITemplate[] {
    return this._templates;
  }

  get queues(): readonly IQueueStatus[] {
    return this._queues;
  }

  get nodes(): readonly INode[] {
    return this._nodes;
  }

  /** The tenant's online services, as of the last refresh. */
  get services(): readonly IService[] {
    return this._services;
  }

  /** Alerts firing now that the caller may see, newest first, as of the last refresh. */
  get alerts(): readonly IAlert[] {
    return this._alerts;
  }

  /** Each alert once, the first refresh that finds it firing (for a notification). */
  get alertFired(): Signal<this, IAlert> {
    return this._alertFired;
  }

  /** An alert's message in the panel's language. */
  alertMessage(alert: IAlert): string {
    return this.lang === 'zh' ? alert.message_zh : alert.message;
  }

  private _setAlerts(alerts: IAlert[]): void {
    this._alerts = alerts;
    for (const alert of alerts) {
      if (!this._alertsSeen.has(alert.id)) {
        this._alertsSeen.add(alert.id);
        this._alertFired.emit(alert);
      }
    }
  }

  /** Each service's requests/s and p95 latency over the last refreshes, oldest first, for its chart; by endpoint. */
  get serviceHistory(): ReadonlyMap<string, readonly ITrafficPoint[]> {
    return this._serviceHistory;
  }

  /** End a service's canary under trial; the next refresh shows the result. */
  async rollBackService(name: string, tenant: string): Promise<void> {
    try {
      await this._service.rollBackService(name, tenant);
    } catch (error) {
      this._error = messageOf(error);
    }
    await this.refresh();
  }

  private _setServices(services: IService[]): void {
    this._services = services;
    const history = new Map<string, ITrafficPoint[]>();
    for (const service of services) {
      const latency = service.traffic.latency_ms;
      const point = { requestsPerS: service.traffic.requests_per_s, p95Ms: latency ? latency.p95 : null };
      // By endpoint: a platform admin sees every tenant's, and a name is unique per tenant only.
      const key = service.endpoint;
      history.set(key, [...(this._serviceHistory.get(key) ?? []), point].slice(-HISTORY_POINTS));
    }
    this._serviceHistory = history;
  }

  /** Onboarding checklists of nodes and tenants, for platform admins; empty otherwise. */
  get onboarding(): readonly IOnboarding[] {
    return this._onboarding;
  }

  /** Tenants with quota and use, for admins; empty otherwise. */
  get tenants(): readonly ITenantSummary[] {
    return this._tenants;
  }

  /** Why the last refresh failed (several reasons joined), or null. */
  get error(): string | null {
    return this._error;
  }

  /**
   * Whether the last refresh failed because the hub's shared hetero service does not answer (restarting or down:
   * the user's server tried for some seconds, then said `service-unreachable`); the panel says it retries.
   */
  get unreachable(): boolean {
    return this._unreachable;
  }

  /** Whether a refresh is in flight. */
  get loading(): boolean {
    return this._loading;
  }

  /** A flavor's display name in the UI's language once a preview named it; else its name. */
  flavorLabel(flavor: string): string {
    return localized(this._flavorDisplays.get(flavor), this.lang, flavor);
  }

  /** Fetch fresh state; failures land in `error` and `failed`, never reject. Resolves success. */
  async refresh(): Promise<boolean> {
    // Only the newest refresh may write state, so a slow earlier answer cannot overwrite a newer one.
    const generation = ++this._generation;
    this._loading = true;
    this.emitChanged();
    const s = this._service;
    const workDone = this.work.refresh();
    const schedulesDone = this.schedules.refresh();
    const [version, me, templates, queues, nodes, services, alerts] = await Promise.allSettled([
      s.getVersion(),
      s.getMyTenant(),
      s.listTemplates(),
      s.listQueues(),
      s.listNodes(),
      s.listServices(),
      s.listAlerts()
    ]);
    const rejected = [version, me, templates, queues, nodes, services, alerts]
      .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
      .map(r => r.reason as unknown);
    let tenants: ITenantSummary[] = [];
    let onboarding: IOnboarding[] = [];
    const admin = me.status === 'fulfilled' && me.value.role !== 'member';
    if (admin) {
      try {
        tenants = await s.listTenants();
        if (me.status === 'fulfilled' && me.value.role === 'platform-admin') {
          onboarding = await s.listOnboarding();
        }
      } catch (error) {
        rejected.push(error);
      }
    }
    const failures = rejected.map(messageOf);
    const workOk = await workDone;
    const schedulesOk = await schedulesDone;
    if (generation !== this._generation || this.isDisposed) {
      return true; // superseded: the newer refresh reports for both
    }
    if (version.status === 'fulfilled') {
      this._version = version.value.version;
    }
    if (me.status === 'fulfilled') {
      this._me = me.value;
      this._tenants = tenants;
      this._onboarding = onboarding;
    }
    if (queues.status === 'fulfilled') {
      this._queues = queues.value;
    }
    if (nodes.status === 'fulfilled') {
      this._nodes = nodes.value;
    }
    if (services.status === 'fulfilled') {
      this._setServices(services.value);
    }
    if (alerts.status === 'fulfilled') {
      this._setAlerts(alerts.value);
    }
    if (templates.status === 'fulfilled') {
      this._templates = templates.value;
      this.launch.setTemplates(templates.value);
      this.schedules.setTemplates(templates.value);
    }
    const error = failures.length > 0 ? [...new Set(failures)].join('; ') : null;
    if (error !== null) {
      this._error = this.failOnce('refresh', error, this._error);
    } else {
      this._error = null;
    }
    this._unreachable = rejected.some(isUnreachable);
    this._loading = false;
    this.emitChanged();
    // Free capacity moves with the cluster: keep the open preview live.
    const previewOk = await this.launch.refreshPreview();
    return error === null && workOk && schedulesOk && previewOk;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.work.dispose();
    this.launch.dispose();
    this.schedules.dispose();
    super.dispose();
  }

  private _forwardChanged(): void {
    this.emitChanged();
  }

  private _forwardFailed(_: unknown, failure: IFailure): void {
    this.fail(failure.action, failure.message);
  }

  private _learnFlavors(): void {
    for (const flavor of this.launch.preview?.flavors ?? []) {
      if (flavor.display) {
        this._flavorDisplays.set(flavor.flavor, flavor.display);
      }
    }
  }

  private readonly _service: IHeteroService;
  private readonly _flavorDisplays = new Map<string, ILocalized>();
  private _version: string | null = null;
  private _me: IMyTenant | null = null;
  private _templates: ITemplate[] = [];
  private _queues: IQueueStatus[] = [];
  private _nodes: INode[] = [];
  private _services: IService[] = [];
  private _alerts: IAlert[] = [];
  private _onboarding: IOnboarding[] = [];
  private _alertsSeen = new Set<number>();
  private _alertFired = new Signal<this, IAlert>(this);
  private _serviceHistory = new Map<string, ITrafficPoint[]>();
  private _tenants: ITenantSummary[] = [];
  private _error: string | null = null;
  private _unreachable = false;
  private _loading = false;
  private _generation = 0;
}

/** Whether `error` says the hub's shared hetero service could not be reached (after the server's own retries). */
export function isUnreachable(error: unknown): boolean {
  return error instanceof HeteroAPIError && error.reason === 'service-unreachable';
}

/** Types belonging to `HeteroModel`. */
export namespace HeteroModel {
  export interface IOptions {
    /** Where the model gets its data; tests pass a fake. */
    service: IHeteroService;
    /** The UI language; English by default. */
    lang?: Lang;
    /** Passed to the launch model. */
    previewDelayMs?: number;
    /** The "New schedule" form's default time zone; the browser's by default. */
    timeZone?: string;
  }
}
