import { ISignal, Signal } from '@lumino/signaling';

import { HeteroAPIError } from '../handler';
import type { IHeteroService } from '../service';
import type { ISchedule, ITemplate, IUpdateSchedule, IWorkload, Lang } from '../types';
import { Action, messageOf, ModelBase } from './base';
import { runsJobs } from './parameters';
import {
  browserTimeZone,
  checkDraft,
  CRON_PRESETS,
  DraftField,
  DraftProblem,
  draftFieldOf,
  draftOf,
  IScheduleDraft,
  scheduleBody,
  scheduleChanges
} from './scheduleForm';

/** What the server said about the schedule the form sent: its message and the field it named, if any. */
export interface IFormError {
  message: string;
  /** The field as the API names it (`cron`, `job.template`), or null. */
  field: string | null;
  /** The form's field it is shown under, or null (then under the form). */
  at: DraftField | null;
}

/** An action on one schedule. */
type ScheduleAction = Extract<Action, `schedule-${string}`>;

/**
 * The Schedules section: the caller's recurring jobs, the actions on them, and the "New schedule" form.
 *
 * ```ts
 * const schedules = new ScheduleModel({ service, lang: 'zh' });
 * schedules.setTemplates(templates);     // the tenant's (templates?mine=true); the form offers those that run jobs
 * await schedules.refresh();             // GET /schedules?lang=zh: each described in Chinese
 * schedules.openForm();
 * schedules.setDraft({ name: 'nightly', path: 'report.ipynb', cron: CRON_PRESETS.daily });
 * await schedules.create();              // POST /schedules; a 400 lands in formError with its field
 * await schedules.runNow(3);             // POST /schedules/3/run: `ran` emits the workload
 * schedules.edit(3);                     // the form, filled with schedule 3
 * schedules.setDraft({ cron: '30 1 * * *' });
 * await schedules.create();              // PATCH /schedules/3 with { cron: '30 1 * * *' } only
 * ```
 */
export class ScheduleModel extends ModelBase {
  constructor(options: ScheduleModel.IOptions) {
    super();
    this._service = options.service;
    this._lang = options.lang;
    this._draft = emptyDraft('', options.timeZone ?? browserTimeZone());
  }

  /** Emitted with the workload a "Run now" submitted. */
  get ran(): ISignal<this, { schedule: ISchedule; workload: IWorkload }> {
    return this._ran;
  }

  /** Emitted with each schedule the form created. */
  get created(): ISignal<this, ISchedule> {
    return this._created;
  }

  /** The schedules the caller may see, as of the last refresh, in the server's order. */
  get schedules(): readonly ISchedule[] {
    return this._schedules;
  }

  /** Templates the form offers: the tenant's that run jobs. */
  get templates(): readonly ITemplate[] {
    return this._templates;
  }

  /** Ids of schedules whose recent runs are shown. */
  get expanded(): ReadonlySet<number> {
    return this._expanded;
  }

  /** Ids of schedules with an action in flight. */
  get busy(): ReadonlySet<number> {
    return this._busy;
  }

  /** Why the last refresh failed, or null. */
  get error(): string | null {
    return this._error;
  }

  /** Whether the form is open (new, or editing a schedule). */
  get formOpen(): boolean {
    return this._formOpen;
  }

  /** The schedule the form edits, as it was opened; null for a new one. */
  get editing(): { id: number; original: Readonly<IScheduleDraft> } | null {
    return this._editing;
  }

  /** What an edit would send (`PATCH /schedules/{id}`): only what changed; null when nothing has, or not editing. */
  get changes(): IUpdateSchedule | null {
    return this._editing === null ? null : scheduleChanges(this._editing.original, this._draft);
  }

  /** The form as typed. */
  get draft(): Readonly<IScheduleDraft> {
    return this._draft;
  }

  /** What is wrong with the draft as typed, per field. */
  get problems(): Partial<Record<DraftField, DraftProblem>> {
    return checkDraft(this._draft);
  }

  /** What the server refused of the last draft sent, until the draft changes. */
  get formError(): IFormError | null {
    return this._formError;
  }

  /** Whether the form is being sent. */
  get creating(): boolean {
    return this._creating;
  }

  /** Whether the form can be sent: nothing wrong with it, and for an edit, something changed. */
  get canCreate(): boolean {
    return (
      !this._creating && Object.keys(this.problems).length === 0 && (this._editing === null || this.changes !== null)
    );
  }

  /** The tenant's templates from the server; the form keeps its choice while it still runs jobs. */
  setTemplates(templates: readonly ITemplate[]): void {
    this._templates = templates.filter(runsJobs);
    // An edit keeps its schedule's template even when the tenant may no longer use it: the server says so.
    if (this._editing === null && !this._templates.some(t => t.name === this._draft.template)) {
      this._draft = { ...this._draft, template: this._templates[0]?.name ?? '' };
    }
    this.emitChanged();
  }

  /** Fetch the list again; resolves false on failure (reported through `failed` once per outage). */
  async refresh(): Promise<boolean> {
    const generation = ++this._generation;
    try {
      const schedules = await this._service.listSchedules(this._lang);
      if (generation === this._generation) {
        this._schedules = schedules;
        const ids = new Set(schedules.map(s => s.id));
        this._expanded = new Set([...this._expanded].filter(id => ids.has(id)));
        this._error = null;
        this.emitChanged();
      }
      return true;
    } catch (error) {
      if (generation === this._generation) {
        this._error = this.failOnce('refresh', error, this._error);
        this.emitChanged();
      }
      return false;
    }
  }

  /** Show or hide a schedule's recent runs. */
  toggleRuns(id: number): void {
    const expanded = new Set(this._expanded);
    if (!expanded.delete(id)) {
      expanded.add(id);
    }
    this._expanded = expanded;
    this.emitChanged();
  }

  pause(id: number): Promise<boolean> {
    return this._act(id, 'schedule-pause', () => this._service.pauseSchedule(id));
  }

  /** Resume: the next run is the next due time from now; runs due while paused are not made up. */
  resume(id: number): Promise<boolean> {
    return this._act(id, 'schedule-resume', () => this._service.resumeSchedule(id));
  }

  /** Submit the schedule's job now (its cadence unchanged); `ran` emits the workload. */
  runNow(id: number): Promise<boolean> {
    return this._act(id, 'schedule-run', async () => {
      const workload = await this._service.runSchedule(id);
      const schedule = this._schedules.find(s => s.id === id);
      if (schedule) {
        this._ran.emit({ schedule, workload });
      }
      // Its run is listed from now on: show it.
      this._expanded = new Set(this._expanded).add(id);
    });
  }

  /** Delete a schedule (the caller confirmed); the workloads it submitted stay. */
  remove(id: number): Promise<boolean> {
    return this._act(id, 'schedule-delete', () => this._service.deleteSchedule(id));
  }

  /** Open the "New schedule" form (with what was typed in it before; an edit in progress is dropped). */
  openForm(): void {
    this._stopEditing();
    this._formOpen = true;
    this._formError = null;
    this.emitChanged();
  }

  /** Open the form on a schedule, filled with it; `create()` then sends only what changed. */
  edit(id: number): void {
    const schedule = this._schedules.find(s => s.id === id);
    if (schedule === undefined) {
      return;
    }
    this._typed ??= this._draft;
    const original = draftOf(schedule);
    this._editing = { id, original };
    this._draft = original;
    this._formOpen = true;
    this._formError = null;
    this.emitChanged();
  }

  /** Close the form; what was typed in a new schedule stays for the next time, an edit is dropped. */
  closeForm(): void {
    this._stopEditing();
    this._formOpen = false;
    this._formError = null;
    this.emitChanged();
  }

  /** Change fields of the draft; a server error about the old draft goes. */
  setDraft(change: Partial<IScheduleDraft>): void {
    this._draft = { ...this._draft, ...change };
    this._formError = null;
    this.emitChanged();
  }

  /** Pick a cadence preset; `custom` keeps the cron as typed. */
  setPreset(preset: keyof typeof CRON_PRESETS | 'custom'): void {
    if (preset !== 'custom') {
      this.setDraft({ cron: CRON_PRESETS[preset] });
    }
  }

  /**
   * Send the form: a new schedule (`POST /schedules`), or an edit's changes (`PATCH /schedules/{id}`); the
   * schedule as the server answered, or null when the draft has problems, nothing changed, or the server refused
   * it (its message and field in `formError`, the form open).
   */
  async create(): Promise<ISchedule | null> {
    if (!this.canCreate) {
      return null;
    }
    const editing = this._editing;
    this._creating = true;
    this._formError = null;
    this.emitChanged();
    try {
      if (editing !== null) {
        const schedule = await this._service.updateSchedule(editing.id, this.changes ?? {});
        this._stopEditing();
        this._formOpen = false;
        return schedule;
      }
      const schedule = await this._service.createSchedule(scheduleBody(this._draft));
      this._formOpen = false;
      this._draft = emptyDraft(this._draft.template, this._draft.timezone);
      this._created.emit(schedule);
      return schedule;
    } catch (error) {
      const field = error instanceof HeteroAPIError ? error.field : null;
      // Shown in the form, beside the field it names, rather than as a notification.
      this._formError = { message: messageOf(error), field, at: draftFieldOf(field) };
      return null;
    } finally {
      this._creating = false;
      this.emitChanged();
      await this.refresh();
    }
  }

  /** Back to the new schedule's draft, as it was typed before an edit opened. */
  private _stopEditing(): void {
    if (this._editing !== null) {
      this._editing = null;
      this._draft = this._typed ?? this._draft;
      this._typed = null;
    }
  }

  /** One action on a schedule: busy while it runs, its failure reported, then the list again. */
  private async _act(id: number, action: ScheduleAction, call: () => Promise<unknown>): Promise<boolean> {
    this._busy = new Set(this._busy).add(id);
    this.emitChanged();
    let ok = true;
    try {
      await call();
    } catch (error) {
      this.fail(action, error);
      ok = false;
    } finally {
      const busy = new Set(this._busy);
      busy.delete(id);
      this._busy = busy;
    }
    await this.refresh();
    return ok;
  }

  private readonly _service: IHeteroService;
  private readonly _lang: Lang;
  private readonly _ran = new Signal<this, { schedule: ISchedule; workload: IWorkload }>(this);
  private readonly _created = new Signal<this, ISchedule>(this);
  private _schedules: ISchedule[] = [];
  private _templates: ITemplate[] = [];
  private _expanded = new Set<number>();
  private _busy = new Set<number>();
  private _error: string | null = null;
  private _generation = 0;
  private _formOpen = false;
  private _draft: IScheduleDraft;
  private _formError: IFormError | null = null;
  private _editing: { id: number; original: IScheduleDraft } | null = null;
  /** The new schedule's draft, kept while an edit fills the form. */
  private _typed: IScheduleDraft | null = null;
  private _creating = false;
}

/** A fresh form: daily at 02:00, run once after downtime, the given template and zone. */
function emptyDraft(template: string, timezone: string): IScheduleDraft {
  return {
    name: '',
    template,
    payload: 'file',
    path: '',
    command: '',
    cron: CRON_PRESETS.daily,
    timezone,
    missed: 'run-once'
  };
}

/** Types belonging to `ScheduleModel`. */
export namespace ScheduleModel {
  export interface IOptions {
    service: IHeteroService;
    /** The language each schedule's description is asked in. */
    lang: Lang;
    /** The form's default time zone; the browser's by default. */
    timeZone?: string;
  }
}
