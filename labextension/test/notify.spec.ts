import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it } from 'vitest';

import { failureText, FailureNotifier } from '../src/notify';

const trans = nullTranslator.load('jupyter_hetero');

describe('FailureNotifier', () => {
  it('shows the server message after what the user was doing', () => {
    expect(failureText({ action: 'submit', message: 'parameters.cpu: 99 is outside the bounds' }, trans)).toBe(
      'Could not submit the job: parameters.cpu: 99 is outside the bounds'
    );
  });

  it('does not repeat the same message within 30 s', () => {
    const shown: string[] = [];
    let now = 0;
    const notifier = new FailureNotifier(trans, message => shown.push(message), () => now);
    notifier.notify({ action: 'refresh', message: 'down' });
    now = 10_000;
    notifier.notify({ action: 'refresh', message: 'down' });
    notifier.notify({ action: 'cancel', message: 'down' });
    now = 45_000;
    notifier.notify({ action: 'refresh', message: 'down' });
    expect(shown).toEqual([
      'Could not refresh the Hetero panel: down',
      'Could not cancel the workload: down',
      'Could not refresh the Hetero panel: down'
    ]);
  });
});
