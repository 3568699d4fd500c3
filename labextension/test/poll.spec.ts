import { describe, expect, it } from 'vitest';

import { RefreshPoll } from '../src/poll';

/** Wait until `done()` holds, checking every few milliseconds, for at most `ms`. */
async function until(done: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) {
      throw new Error('condition not met in time');
    }
    await new Promise(resolve => setTimeout(resolve, 5));
  }
}

describe('RefreshPoll', () => {
  it('refreshes at its interval while visible', async () => {
    let calls = 0;
    const poll = new RefreshPoll({
      name: 'test',
      intervalS: 0.02,
      isHidden: () => false,
      refresh: async () => {
        calls += 1;
        return true;
      }
    });
    await until(() => calls >= 3);
    expect(poll.state.phase).not.toBe('rejected');
    expect(poll.state.interval).toBe(20);
    poll.dispose();
  });

  it('backs off while the document is hidden, without calling the server', async () => {
    let calls = 0;
    let hidden = true;
    const poll = new RefreshPoll({
      name: 'test',
      intervalS: 0.01,
      isHidden: () => hidden,
      refresh: async () => {
        calls += 1;
        return true;
      }
    });
    await until(() => poll.state.phase === 'rejected' && poll.state.interval > 10);
    expect(calls).toBe(0);
    hidden = false;
    await poll.refresh();
    await until(() => calls > 0 && poll.state.phase !== 'rejected');
    expect(poll.state.interval).toBe(10);
    poll.dispose();
  });

  it('backs off while the refresh fails', async () => {
    let calls = 0;
    const poll = new RefreshPoll({
      name: 'test',
      intervalS: 0.01,
      isHidden: () => false,
      refresh: async () => {
        calls += 1;
        return false;
      }
    });
    await until(() => calls >= 2 && poll.state.interval > 10);
    expect(poll.state.phase).toBe('rejected');
    poll.dispose();
  });

  it('keeps its interval while the failure will pass by itself (the shared service restarting)', async () => {
    let calls = 0;
    const poll = new RefreshPoll({
      name: 'test',
      intervalS: 0.01,
      isHidden: () => false,
      retrySoon: () => true,
      refresh: async () => {
        calls += 1;
        return false;
      }
    });
    await until(() => calls >= 4);
    expect(poll.state.phase).toBe('rejected');
    // Not backed off (that would be 80 ms after four failures); a tick rescheduled mid-way may wait a little less.
    expect(poll.state.interval).toBeGreaterThan(0);
    expect(poll.state.interval).toBeLessThanOrEqual(10);
    poll.dispose();
  });

  it('refreshes only when asked with an interval of 0', async () => {
    let calls = 0;
    const poll = new RefreshPoll({
      name: 'test',
      intervalS: 0,
      isHidden: () => false,
      refresh: async () => {
        calls += 1;
        return true;
      }
    });
    await poll.refresh();
    await until(() => calls === 1);
    await new Promise(resolve => setTimeout(resolve, 50));
    expect(calls).toBe(1);
    poll.intervalS = 0.01;
    await until(() => calls >= 3);
    poll.dispose();
  });
});
