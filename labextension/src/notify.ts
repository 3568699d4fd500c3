import { TranslationBundle } from '@jupyterlab/translation';

import type { Action, IFailure } from './models';

/** How long the same message is not shown again. */
const REPEAT_QUIET_MS = 30 * 1000;

/** What shows a notification; `Notification.error` in the app, a fake in tests. */
export type ShowError = (message: string) => void;

/** The server's message, prefixed with what the user was doing. */
export function failureText(failure: IFailure, trans: TranslationBundle): string {
  const message = failure.message;
  const action: Action = failure.action;
  switch (action) {
    case 'refresh':
      return trans.__('Could not refresh the Hetero panel: %1', message);
    case 'preview':
      return trans.__('Could not preview the request: %1', message);
    case 'start-kernel':
      return trans.__('Could not start the kernel: %1', message);
    case 'submit':
      return trans.__('Could not submit the job: %1', message);
    case 'cancel':
      return trans.__('Could not cancel the workload: %1', message);
    case 'resubmit':
      return trans.__('Could not re-submit the workload: %1', message);
    case 'explain':
      return trans.__('Could not explain the workload: %1', message);
    case 'evidence':
      return trans.__('Could not read the evidence of the workload: %1', message);
    case 'metrics':
      return trans.__('Could not read the metrics of the workload: %1', message);
    case 'logs':
      return trans.__('Could not read the log: %1', message);
    case 'usage':
      return trans.__('Could not read the kernel placement: %1', message);
    case 'schedule-pause':
      return trans.__('Could not pause the schedule: %1', message);
    case 'schedule-resume':
      return trans.__('Could not resume the schedule: %1', message);
    case 'schedule-run':
      return trans.__('Could not run the schedule now: %1', message);
    case 'schedule-delete':
      return trans.__('Could not delete the schedule: %1', message);
  }
}

/**
 * Turns model failures into error notifications with the server's message; the
 * same text is not shown twice within 30 s, so one outage is one notification.
 *
 * ```ts
 * const notifier = new FailureNotifier(trans, message => Notification.error(message, { autoClose: 8000 }));
 * model.failed.connect((_, failure) => notifier.notify(failure));
 * ```
 */
export class FailureNotifier {
  constructor(
    private readonly _trans: TranslationBundle,
    private readonly _show: ShowError,
    private readonly _now: () => number = Date.now
  ) {}

  notify(failure: IFailure): void {
    const text = failureText(failure, this._trans);
    const now = this._now();
    for (const [shown, at] of this._shown) {
      if (now - at >= REPEAT_QUIET_MS) {
        this._shown.delete(shown); // quiet long enough: forget it
      }
    }
    if (this._shown.has(text)) {
      return;
    }
    this._shown.set(text, now);
    this._show(text);
  }

  private readonly _shown = new Map<string, number>();
}
