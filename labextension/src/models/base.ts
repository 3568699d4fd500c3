import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

/** What the user was doing when the server said no; the UI words it. */
export type Action =
  | 'refresh'
  | 'preview'
  | 'start-kernel'
  | 'submit'
  | 'cancel'
  | 'resubmit'
  | 'explain'
  | 'evidence'
  | 'metrics'
  | 'logs'
  | 'usage'
  | 'schedule-pause'
  | 'schedule-resume'
  | 'schedule-run'
  | 'schedule-delete';

/** A failed call, with the server's own message. */
export interface IFailure {
  action: Action;
  message: string;
}

/** The text of anything thrown: the server's `message` for API errors. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * State, a `changed` signal and a `failed` signal for every model of the panel.
 *
 * Subclasses call `emitChanged()` after a state change and `fail(action, error)`
 * when a call to the server fails, so the UI can show the server's message.
 */
export abstract class ModelBase implements IDisposable {
  /** Emitted whenever any of the model's state changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emitted when a call to the server fails; the plugin turns it into a notification. */
  get failed(): ISignal<this, IFailure> {
    return this._failed;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    Signal.clearData(this);
  }

  protected emitChanged(): void {
    if (!this._isDisposed) {
      this._changed.emit();
    }
  }

  /** Report a failure and return its message. */
  protected fail(action: Action, error: unknown): string {
    const message = messageOf(error);
    if (!this._isDisposed) {
      this._failed.emit({ action, message });
    }
    return message;
  }

  /**
   * Report a failure of a periodic call unless it repeats `previous`, so a
   * server that stays down raises one notification, not one per tick.
   */
  protected failOnce(action: Action, error: unknown, previous: string | null): string {
    const message = messageOf(error);
    return message === previous ? message : this.fail(action, error);
  }

  private readonly _changed = new Signal<this, void>(this);
  private readonly _failed = new Signal<this, IFailure>(this);
  private _isDisposed = false;
}
