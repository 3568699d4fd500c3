import { isFinished } from '../format';
import type { IHeteroService } from '../service';
import type { IExplanation, IWorkload, IWorkloadEvidence, IWorkloadMetrics, Lang } from '../types';
import { groupWork } from './arrays';
import { ModelBase } from './base';

/** How many workloads one refresh describes (blockers in the UI's language, attempts). */
const MAX_DESCRIBED = 20;
/** A running workload's shown metrics are fetched again at most this often (ms): the server samples every 10 s. */
export const METRICS_EVERY_MS = 10_000;
/** The most workloads one `GET /workloads` answers: an array the list cut off is read up to this many tasks. */
const MOST_LISTED = 5000;

/**
 * The caller's own workloads ("My work") and the actions on them.
 *
 * ```ts
 * const work = new WorkModel({ service, lang: 'zh' });
 * await work.refresh();           // GET /workloads?mine=true, then each moving one in Chinese
 * await work.cancel(7);           // DELETE /workloads/7, then refresh
 * work.toggleArray(12);           // its tasks shown (and described in Chinese) under its row, or hidden again
 * await work.cancelArray(12);     // DELETE /workloads/12?array=true: every unfinished task of array 12
 * await work.showEvidence(7);     // GET /workloads/7/evidence in Chinese, kept until dismissed
 * await work.showMetrics(7);      // GET /workloads/7/metrics, fetched again by refreshes while it runs
 * ```
 */
export class WorkModel extends ModelBase {
  constructor(options: WorkModel.IOptions) {
    super();
    this._service = options.service;
    this._lang = options.lang;
    this._now = options.now ?? Date.now;
  }

  /** The caller's workloads, newest first; every task of an array the list cut off is added (`groupWork` shows an
   * array's tasks as one row). */
  get workloads(): readonly IWorkload[] {
    return this._workloads;
  }

  /** The arrays whose tasks are shown under their row, by array id. */
  get expandedArrays(): ReadonlySet<number> {
    return this._expanded;
  }

  /** Explanations asked for, by workload id. */
  get explanations(): ReadonlyMap<number, IExplanation> {
    return this._explanations;
  }

  /** Evidence chains asked for, by workload id. */
  get evidences(): ReadonlyMap<number, IWorkloadEvidence> {
    return this._evidences;
  }

  /** Metrics asked for, by workload id: its declared metrics' series and what is not measured. */
  get metrics(): ReadonlyMap<number, IWorkloadMetrics> {
    return this._metrics;
  }

  /** Ids of workloads with an action in flight. */
  get busy(): ReadonlySet<number> {
    return this._busy;
  }

  /** Why the last refresh failed, or null. */
  get error(): string | null {
    return this._error;
  }

  /** Fetch the list again; resolves false on failure (reported through `failed`). */
  async refresh(): Promise<boolean> {
    const generation = ++this._generation;
    try {
      const workloads = await this._withWholeArrays(await this._service.listWorkloads());
      const { shown, failure } = await this._describe(workloads);
      if (generation === this._generation) {
        this._workloads = shown;
        this._forgetGone(workloads);
        await this._refreshMetrics(shown);
        // The list itself came back: a failed description leaves that row as listed.
        this._error = failure === null ? null : this.failOnce('refresh', failure, this._error);
        this.emitChanged();
      }
      return failure === null;
    } catch (error) {
      if (generation === this._generation) {
        this._error = this.failOnce('refresh', error, this._error);
        this.emitChanged();
      }
      return false;
    }
  }

  /** Cancel a workload (DELETE), then refresh. */
  cancel(id: number): Promise<boolean> {
    return this._act(id, 'cancel', () => this._service.cancelWorkload(id));
  }

  /** Cancel every unfinished task of an array (DELETE ...?array=true; the caller confirmed), then refresh. */
  cancelArray(arrayId: number): Promise<boolean> {
    return this._act(arrayId, 'cancel', () => this._service.cancelArray(arrayId));
  }

  /**
   * Show an array's tasks under its row, or hide them again; shown tasks are described as other workloads are, so
   * showing them refreshes (resolved as `refresh` is).
   */
  toggleArray(arrayId: number): Promise<boolean> {
    if (this._expanded.delete(arrayId)) {
      this.emitChanged();
      return Promise.resolve(true);
    }
    this._expanded.add(arrayId);
    this.emitChanged();
    // Its tasks were listed in English, and at most one of them described: describe them now.
    return this.refresh();
  }

  /** Submit a copy of a workload, then refresh; resolves the new workload. */
  async resubmit(id: number): Promise<IWorkload | null> {
    let created: IWorkload | null = null;
    await this._act(id, 'resubmit', async () => {
      created = await this._service.resubmitWorkload(id);
    });
    return created;
  }

  /** Ask why a workload waits (or what it does) in the UI's language. */
  async explain(id: number): Promise<IExplanation | null> {
    let explanation: IExplanation | null = null;
    await this._act(
      id,
      'explain',
      async () => {
        explanation = await this._service.explainWorkload(id, this._lang);
        this._explanations.set(id, explanation);
      },
      false
    );
    return explanation;
  }

  /** Hide an explanation again. */
  dismissExplanation(id: number): void {
    if (this._explanations.delete(id)) {
      this.emitChanged();
    }
  }

  /** Fetch a workload's evidence chain (request to release) in the UI's language, to show it. */
  async showEvidence(id: number): Promise<IWorkloadEvidence | null> {
    let evidence: IWorkloadEvidence | null = null;
    await this._act(
      id,
      'evidence',
      async () => {
        evidence = await this._service.getWorkloadEvidence(id, this._lang);
        this._evidences.set(id, evidence);
      },
      false
    );
    return evidence;
  }

  /** Hide an evidence chain again. */
  dismissEvidence(id: number): void {
    if (this._evidences.delete(id)) {
      this.emitChanged();
    }
  }

  /** Fetch a workload's metrics to show them; refreshes fetch them again, gently, while it runs. */
  async showMetrics(id: number): Promise<IWorkloadMetrics | null> {
    let metrics: IWorkloadMetrics | null = null;
    await this._act(
      id,
      'metrics',
      async () => {
        metrics = await this._service.getWorkloadMetrics(id, this._lang);
        this._metrics.set(id, metrics);
        this._metricsAt.set(id, this._now());
      },
      false
    );
    return metrics;
  }

  /** Hide a workload's metrics again (and stop fetching them). */
  dismissMetrics(id: number): void {
    this._metricsAt.delete(id);
    if (this._metrics.delete(id)) {
      this.emitChanged();
    }
  }

  /** Where a workload's evidence chain is as one HTML page, in the UI's language. */
  evidencePageUrl(id: number): string {
    return this._service.evidencePageUrl(id, this._lang);
  }

  private async _act(
    id: number,
    action: 'cancel' | 'resubmit' | 'explain' | 'evidence' | 'metrics',
    call: () => Promise<unknown>,
    refreshAfter = true
  ): Promise<boolean> {
    this._busy.add(id);
    this.emitChanged();
    let ok = true;
    try {
      await call();
    } catch (error) {
      this.fail(action, error);
      ok = false;
    } finally {
      this._busy.delete(id);
      this.emitChanged();
    }
    if (ok && refreshAfter) {
      await this.refresh();
    }
    return ok;
  }

  /**
   * The list answers in English and without attempts; workloads still moving are
   * described again in `lang` (ranked blockers, attempts with usage), and finished
   * ones once.
   */
  private async _describe(workloads: IWorkload[]): Promise<{ shown: IWorkload[]; failure: unknown }> {
    const alone = this._describable(workloads);
    const wanted = workloads
      .filter(w => alone.has(w.id))
      .filter(w => !isFinished(w.state) || !this._final.has(w.id))
      .slice(0, MAX_DESCRIBED);
    const answers = await Promise.allSettled(wanted.map(w => this._service.getWorkload(w.id, this._lang)));
    const byId = new Map<number, IWorkload>();
    let failure: unknown = null;
    for (const answer of answers) {
      if (answer.status === 'rejected') {
        failure ??= answer.reason;
        continue;
      }
      byId.set(answer.value.id, answer.value);
      if (isFinished(answer.value.state)) {
        this._final.set(answer.value.id, answer.value);
      }
    }
    const shown = workloads.map(w => {
      const detail = byId.get(w.id) ?? this._final.get(w.id);
      // The description is at least as new as the list entry.
      return detail ? { ...w, ...detail } : w;
    });
    return { shown, failure };
  }

  /**
   * The workloads worth describing: those shown with a row of their own (any but an array's task, and the tasks of
   * an expanded array) and, of a collapsed array, the task whose limit blocker its row shows, to read it in `lang`.
   */
  private _describable(workloads: readonly IWorkload[]): Set<number> {
    const ids = new Set<number>();
    for (const entry of groupWork(workloads)) {
      if (entry.kind === 'workload') {
        ids.add(entry.workload.id);
      } else if (this._expanded.has(entry.id)) {
        entry.tasks.forEach(task => ids.add(task.id));
      } else {
        const held = entry.tasks.find(task => (task.blockers ?? []).some(b => b.kind === 'array-limit'));
        if (held) {
          ids.add(held.id);
        }
      }
    }
    return ids;
  }

  /** The list with every task of each array it cut off (fewer tasks listed than the array has), read once each. */
  private async _withWholeArrays(workloads: IWorkload[]): Promise<IWorkload[]> {
    const listed = new Map<number, number>();
    const sizes = new Map<number, number>();
    for (const w of workloads) {
      if (w.array) {
        listed.set(w.array.id, (listed.get(w.array.id) ?? 0) + 1);
        sizes.set(w.array.id, w.array.size);
      }
    }
    const cut = [...sizes].filter(([id, size]) => (listed.get(id) ?? 0) < size);
    if (cut.length === 0) {
      return workloads;
    }
    const known = new Set(workloads.map(w => w.id));
    const more = await Promise.all(
      cut.map(([id, size]) => this._service.listArrayTasks(id, Math.min(size, MOST_LISTED)))
    );
    return [...workloads, ...more.flat().filter(w => !known.has(w.id))];
  }

  /**
   * The shown metrics of workloads that still run (or have not yet been fetched since they ended), at most every
   * METRICS_EVERY_MS each; a failed fetch keeps the figures shown.
   */
  private async _refreshMetrics(shown: readonly IWorkload[]): Promise<void> {
    const now = this._now();
    const due = shown.filter(w => {
      const at = this._metricsAt.get(w.id);
      return at !== undefined && now - at >= METRICS_EVERY_MS && !(isFinished(w.state) && this._endedMetrics.has(w.id));
    });
    const answers = await Promise.allSettled(due.map(w => this._service.getWorkloadMetrics(w.id, this._lang)));
    answers.forEach((answer, i) => {
      const workload = due[i];
      if (answer.status === 'fulfilled' && this._metricsAt.has(workload.id)) {
        this._metrics.set(workload.id, answer.value);
        this._metricsAt.set(workload.id, now);
        if (isFinished(workload.state)) {
          this._endedMetrics.add(workload.id); // its last figures: nothing more will come
        }
      }
    });
  }

  /** Drop what is kept for workloads no longer listed. */
  private _forgetGone(workloads: readonly IWorkload[]): void {
    const listed = new Set(workloads.map(w => w.id));
    for (const kept of [this._final, this._explanations, this._evidences, this._metrics, this._metricsAt]) {
      for (const id of kept.keys()) {
        if (!listed.has(id)) {
          kept.delete(id);
        }
      }
    }
    for (const id of this._expanded) {
      if (!listed.has(id)) {
        this._expanded.delete(id);
      }
    }
  }

  private readonly _service: IHeteroService;
  private readonly _lang: Lang;
  private readonly _explanations = new Map<number, IExplanation>();
  private readonly _evidences = new Map<number, IWorkloadEvidence>();
  private readonly _metrics = new Map<number, IWorkloadMetrics>();
  private readonly _metricsAt = new Map<number, number>();
  private readonly _endedMetrics = new Set<number>();
  private readonly _now: () => number;
  private readonly _busy = new Set<number>();
  private readonly _final = new Map<number, IWorkload>();
  private readonly _expanded = new Set<number>();
  private _workloads: IWorkload[] = [];
  private _error: string | null = null;
  private _generation = 0;
}

/** Types belonging to `WorkModel`. */
export namespace WorkModel {
  export interface IOptions {
    service: IHeteroService;
    /** The language blockers and explanations are asked in. */
    lang: Lang;
    /** Milliseconds now (Date.now); tests pass their own. */
    now?: () => number;
  }
}
