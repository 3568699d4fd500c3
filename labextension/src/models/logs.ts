import type { IHeteroService } from '../service';
import { isFinished } from '../format';
import { ModelBase } from './base';

/** The most log text kept in the browser; older text is dropped from the top. */
export const MAX_LOG_CHARS = 1_000_000;

/**
 * A workload's log, streamed from `GET /workloads/{id}/logs?follow=true`.
 *
 * The server ends a followed log when the attempt ends (or at once when none
 * has started yet); while the workload is not finished the model follows
 * again after a pause that doubles up to `maxDelayMs`, so a queued job's log
 * appears once it starts and a retried one shows its new attempt.
 *
 * ```ts
 * const log = new LogModel({ service, workloadId: 7 });
 * log.changed.connect(() => view.textContent = log.text);
 * void log.follow();   // resolves when the workload has finished or the model is disposed
 * ```
 */
export class LogModel extends ModelBase {
  constructor(options: LogModel.IOptions) {
    super();
    this._service = options.service;
    this.workloadId = options.workloadId;
    this._delay = options.delay ?? (ms => new Promise(resolve => setTimeout(resolve, ms)));
    this._firstDelayMs = options.firstDelayMs ?? 1000;
    this._maxDelayMs = options.maxDelayMs ?? 10000;
  }

  readonly workloadId: number;

  get text(): string {
    return this._text;
  }

  /** The workload's state when last asked, or null before. */
  get state(): string | null {
    return this._state;
  }

  /** Whether the workload has finished and its log is complete. */
  get done(): boolean {
    return this._done;
  }

  get error(): string | null {
    return this._error;
  }

  /** Follow the log until the workload finishes or the model is disposed. */
  async follow(): Promise<void> {
    let pauseMs = this._firstDelayMs;
    while (!this.isDisposed) {
      let fresh = true;
      try {
        await this._service.getWorkloadLogs(
          this.workloadId,
          chunk => {
            // Each follow starts at the top of the latest attempt's log.
            this._append(chunk, fresh);
            fresh = false;
          },
          this._abort.signal
        );
        const workload = await this._service.getWorkload(this.workloadId, 'en');
        this._state = workload.state;
        this._error = null;
        if (isFinished(workload.state)) {
          this._done = true;
          this.emitChanged();
          return;
        }
      } catch (error) {
        if (this.isDisposed) {
          return;
        }
        this._error = this.failOnce('logs', error, this._error);
      }
      this.emitChanged();
      await this._delay(pauseMs);
      pauseMs = Math.min(pauseMs * 2, this._maxDelayMs);
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    super.dispose();
    this._abort.abort();
  }

  private _append(chunk: string, replace: boolean): void {
    const text = replace ? chunk : this._text + chunk;
    this._text = text.length > MAX_LOG_CHARS ? text.slice(text.length - MAX_LOG_CHARS) : text;
    this.emitChanged();
  }

  private readonly _service: IHeteroService;
  private readonly _abort = new AbortController();
  private readonly _delay: (ms: number) => Promise<void>;
  private readonly _firstDelayMs: number;
  private readonly _maxDelayMs: number;
  private _text = '';
  private _state: string | null = null;
  private _done = false;
  private _error: string | null = null;
}

/** Types belonging to `LogModel`. */
export namespace LogModel {
  export interface IOptions {
    service: IHeteroService;
    workloadId: number;
    /** How the model waits between follows; tests pass one that resolves at once. */
    delay?: (ms: number) => Promise<void>;
    /** First pause between follows; 1 s by default. */
    firstDelayMs?: number;
    /** Longest pause between follows; 10 s by default. */
    maxDelayMs?: number;
  }
}
