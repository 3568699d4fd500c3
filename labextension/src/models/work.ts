import { isFinished } from '../format';
import type { IHeteroService } from '../service';
import type { IExplanation, IWorkload, IWorkloadEvidence, Lang } from '../types';
import { ModelBase } from './base';

/** How many workloads one refresh describes (blockers in the UI's language, attempts). */
const MAX_DESCRIBED = 20;

/**
 * The caller's own workloads ("My work") and the actions on them.
 *
 * ```ts
 * const work = new WorkModel({ service, lang: 'zh' });
 * await work.refresh();           // GET /workloads?mine=true, then each moving one in Chinese
 * await work.cancel(7);           // DELETE /workloads/7, then refresh
 * await work.showEvidence(7);     // GET /workloads/7/evidence in Chinese, kept until dismissed
 * ```
 */
export class WorkModel extends ModelBase {
  constructor(options: WorkModel.IOptions) {
    super();
    this._service = options.service;
    this._lang = options.lang;
  }

  /** The caller's workloads, newest first. */
  get workloads(): readonly IWorkload[] {
    return this._workloads;
  }

  /** Explanations asked for, by workload id. */
  get explanations(): ReadonlyMap<number, IExplanation> {
    return this._explanations;
  }

  /** Evidence chains asked for, by workload id. */
  get evidences(): ReadonlyMap<number, IWorkloadEvidence> {
    return this._evidences;
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
      const workloads = await this._service.listWorkloads();
      const { shown, failure } = await this._describe(workloads);
      if (generation === this._generation) {
        this._workloads = shown;
        this._forgetGone(workloads);
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

  /** Where a workload's evidence chain is as one HTML page, in the UI's language. */
  evidencePageUrl(id: number): string {
    return this._service.evidencePageUrl(id, this._lang);
  }

  private async _act(
    id: number,
    action: 'cancel' | 'resubmit' | 'explain' | 'evidence',
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
    const wanted = workloads
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

  /** Drop what is kept for workloads no longer listed. */
  private _forgetGone(workloads: readonly IWorkload[]): void {
    const listed = new Set(workloads.map(w => w.id));
    for (const kept of [this._final, this._explanations, this._evidences]) {
      for (const id of kept.keys()) {
        if (!listed.has(id)) {
          kept.delete(id);
        }
      }
    }
  }

  private readonly _service: IHeteroService;
  private readonly _lang: Lang;
  private readonly _explanations = new Map<number, IExplanation>();
  private readonly _evidences = new Map<number, IWorkloadEvidence>();
  private readonly _busy = new Set<number>();
  private readonly _final = new Map<number, IWorkload>();
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
  }
}
