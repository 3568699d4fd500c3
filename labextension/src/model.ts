import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import type { IHeteroService } from './service';

/**
 * What the Hetero panel knows about the server, refreshed from the REST API.
 *
 * ```ts
 * const model = new HeteroModel({ service: new HeteroService() });
 * model.changed.connect(() => console.log(model.version, model.error));
 * await model.refresh();
 * ```
 */
export class HeteroModel implements IDisposable {
  constructor(options: HeteroModel.IOptions) {
    this._service = options.service;
  }

  /** Emitted whenever any of the model's state changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The server's jupyter-hetero version, once known. */
  get version(): string | null {
    return this._version;
  }

  /** Why the last refresh failed, or null when it succeeded. */
  get error(): string | null {
    return this._error;
  }

  /** Whether a refresh is in flight. */
  get loading(): boolean {
    return this._loading;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Fetch fresh state from the server; failures land in `error`, never reject. */
  async refresh(): Promise<void> {
    // Only the newest refresh may write state, so a slow earlier answer
    // cannot overwrite a newer one.
    const generation = ++this._generation;
    this._loading = true;
    this._changed.emit();
    try {
      const info = await this._service.getVersion();
      if (this._isCurrent(generation)) {
        this._version = info.version;
        this._error = null;
      }
    } catch (error) {
      if (this._isCurrent(generation)) {
        this._error = error instanceof Error ? error.message : String(error);
      }
    } finally {
      if (this._isCurrent(generation)) {
        this._loading = false;
        this._changed.emit();
      }
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    Signal.clearData(this);
  }

  private _isCurrent(generation: number): boolean {
    return !this._isDisposed && generation === this._generation;
  }

  private readonly _service: IHeteroService;
  private readonly _changed = new Signal<this, void>(this);
  private _version: string | null = null;
  private _error: string | null = null;
  private _loading = false;
  private _generation = 0;
  private _isDisposed = false;
}

/** Types belonging to `HeteroModel`. */
export namespace HeteroModel {
  export interface IOptions {
    /** Where the model gets its data; tests pass a fake. */
    service: IHeteroService;
  }
}
