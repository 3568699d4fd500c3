import { IDisposable } from '@lumino/disposable';
import { IPoll, Poll } from '@lumino/polling';

/** The slowest a refresh poll gets while it backs off. */
export const MAX_REFRESH_INTERVAL_MS = 5 * 60 * 1000;

/** Why a tick did no work; the poll backs off on both. */
const HIDDEN = 'document hidden';
const FAILED = 'refresh failed';

/**
 * Calls `refresh` every `intervalS` seconds while the page is visible.
 *
 * ```ts
 * const poll = new RefreshPoll({ name: 'hetero:overview', refresh: () => model.refresh(), intervalS: 10 });
 * poll.intervalS = 30;     // from the settings
 * ```
 *
 * While the document is hidden, or while `refresh` reports failure, the
 * interval doubles up to five minutes; it snaps back to `intervalS` after the
 * next success, and the page becoming visible again ticks at once. A failure
 * `retrySoon` says will pass by itself (the hub's shared service restarting)
 * keeps the usual interval, so the panel is back soon after the service.
 */
export class RefreshPoll implements IDisposable {
  constructor(options: RefreshPoll.IOptions) {
    this._refresh = options.refresh;
    this._isHidden = options.isHidden ?? (() => typeof document !== 'undefined' && document.hidden);
    this._retrySoon = options.retrySoon ?? (() => false);
    this._intervalS = options.intervalS;
    this._poll = new Poll({
      name: options.name,
      factory: () => this._tick(),
      frequency: frequency(options.intervalS),
      standby: 'never'
    });
    if (typeof document !== 'undefined') {
      document.addEventListener('visibilitychange', this._onVisibility);
    }
  }

  /** Seconds between refreshes; 0 turns periodic refresh off. */
  get intervalS(): number {
    return this._intervalS;
  }

  set intervalS(seconds: number) {
    if (seconds === this._intervalS) {
      return;
    }
    this._intervalS = seconds;
    this._poll.frequency = frequency(seconds);
    // The pending tick was timed with the old interval; start over.
    void this._poll.refresh();
  }

  /** The current poll state, for tests and diagnostics. */
  get state(): IPoll.State<void, unknown, 'standby'> {
    return this._poll.state;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  /** Tick now, outside the schedule. */
  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    if (typeof document !== 'undefined') {
      document.removeEventListener('visibilitychange', this._onVisibility);
    }
    this._poll.dispose();
  }

  private async _tick(): Promise<void> {
    if (this._isHidden()) {
      this._poll.frequency = frequency(this._intervalS);
      throw HIDDEN;
    }
    const ok = await this._refresh();
    this._poll.frequency = frequency(this._intervalS, !ok && this._retrySoon());
    if (!ok) {
      throw FAILED;
    }
  }

  private readonly _onVisibility = (): void => {
    if (!this._isHidden() && this._poll.state.phase === 'rejected') {
      void this._poll.refresh();
    }
  };

  private readonly _refresh: () => Promise<boolean>;
  private readonly _isHidden: () => boolean;
  private readonly _retrySoon: () => boolean;
  private readonly _poll: Poll<void, unknown, 'standby'>;
  private _intervalS: number;
}

/** Types belonging to `RefreshPoll`. */
export namespace RefreshPoll {
  export interface IOptions {
    /** Shown in Lumino's poll diagnostics. */
    name: string;
    /** Does the work; resolves false on failure (it must not reject). */
    refresh: () => Promise<boolean>;
    /** Seconds between refreshes; 0 turns periodic refresh off. */
    intervalS: number;
    /** Whether the page is hidden; `document.hidden` by default. */
    isHidden?: () => boolean;
    /** Whether the last failure will pass by itself soon, so the poll keeps its interval; never by default. */
    retrySoon?: () => boolean;
  }
}

function frequency(seconds: number, steady = false): IPoll.Frequency {
  const interval =
    Number.isFinite(seconds) && seconds > 0
      ? Math.min(seconds * 1000, MAX_REFRESH_INTERVAL_MS)
      : Poll.NEVER;
  return { interval, backoff: steady ? false : 2, max: MAX_REFRESH_INTERVAL_MS };
}
