"""The scheduling loop itself: ticks in one worker thread, coalesced wake-ups, failures survived, a clean stop."""

from __future__ import annotations

import asyncio
import threading
import time

from jupyter_hetero.platform.scheduling.loop import SchedulerLoop

from ...fakes import HeldScheduler
from ...harness import until_async


async def _stop(loop: SchedulerLoop) -> None:
    await asyncio.wait_for(loop.stop(), 15)  # a stop that hangs fails the test instead


async def test_ticks_run_in_one_worker_thread_and_never_overlap():
    scheduler = HeldScheduler()
    loop = SchedulerLoop(scheduler, interval_s=0.01)
    loop.start()
    await until_async(lambda: scheduler.finished >= 5, what="five ticks")
    for _ in range(20):
        loop.wake()
        await asyncio.sleep(0)
    await _stop(loop)
    assert len(scheduler.threads) == 1 and threading.get_ident() not in scheduler.threads
    assert scheduler.overlaps == 0


async def test_wake_ups_during_a_tick_make_exactly_one_more_tick():
    scheduler = HeldScheduler()
    loop = SchedulerLoop(scheduler, interval_s=60)
    scheduler.gate.clear()
    loop.start()
    await until_async(scheduler.ticking.is_set, what="the first tick")
    for _ in range(50):
        loop.wake()  # the loop answers at once: the tick holds no one up
    scheduler.gate.set()
    await until_async(lambda: scheduler.finished == 2, what="the coalesced tick")
    await asyncio.sleep(0.2)  # a third tick would come now if wake-ups were not coalesced
    await _stop(loop)
    assert scheduler.finished == 2 and loop.wakes == 50


async def test_a_storm_of_wake_ups_leaves_the_loop_at_least_as_long_as_each_tick_took():
    scheduler = HeldScheduler()
    scheduler.hold_s = 0.2
    loop = SchedulerLoop(scheduler, interval_s=60)
    loop.start()
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:  # wake-ups all the time, as a burst of submissions makes them
        loop.wake()
        await asyncio.sleep(0.01)
    await _stop(loop)
    gaps = [later - earlier for earlier, later in zip(scheduler.starts, scheduler.starts[1:])]
    assert len(gaps) >= 3
    assert min(gaps) >= 2 * scheduler.hold_s * 0.95  # the tick, then as long again for requests


async def test_a_failing_tick_is_logged_and_the_next_one_runs(caplog):
    scheduler = HeldScheduler()
    scheduler.fail_next = True
    loop = SchedulerLoop(scheduler, interval_s=0.01)
    loop.start()
    await until_async(lambda: scheduler.succeeded >= 1 and scheduler.finished >= 2, what="ticks after the failure")
    await _stop(loop)
    assert "scheduler tick failed" in caplog.text


async def test_stop_waits_for_the_tick_in_progress_and_no_wake_up_restarts_it():
    scheduler = HeldScheduler()
    scheduler.gate.clear()
    loop = SchedulerLoop(scheduler, interval_s=60)
    loop.start()
    await until_async(scheduler.ticking.is_set, what="the first tick")
    threading.Timer(0.3, scheduler.gate.set).start()
    await _stop(loop)
    assert scheduler.finished == 1 and not scheduler.ticking.is_set()
    loop.wake()
    await asyncio.sleep(0.05)
    assert not loop.started and scheduler.finished == 1


async def test_work_handed_to_the_event_loop_from_a_tick_runs_on_the_loop():
    scheduler = HeldScheduler()
    loop = SchedulerLoop(scheduler, interval_s=60)
    loop.start()
    on_loop = asyncio.Event()
    here = threading.get_ident()
    seen = []

    def tick():
        scheduler.call_on_loop(lambda: (seen.append(threading.get_ident()), on_loop.set()))

    scheduler.tick = tick
    loop.wake()
    await asyncio.wait_for(on_loop.wait(), 10)
    await _stop(loop)
    assert seen == [here]


async def test_the_loop_ends_on_stop_even_when_its_cancellation_is_swallowed():
    # On Python 3.11, asyncio.wait_for swallows a cancellation that lands as its wait ends: a server
    # whose scheduler kept ticking after its stop never finished stopping. Here the cancel is not
    # even sent; the stop flag alone must end the loop within one interval.
    scheduler = HeldScheduler()
    loop = SchedulerLoop(scheduler, interval_s=0.05)
    loop.start()
    await until_async(lambda: scheduler.finished >= 2, what="two ticks")
    loop._stopped = True  # what stop() sets before it cancels
    await asyncio.wait_for(loop._task, 5)
    ticks = scheduler.finished
    await asyncio.sleep(0.3)
    assert scheduler.finished == ticks
    await _stop(loop)
