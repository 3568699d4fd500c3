"""Runs the scheduler off the server's event loop: ticks in one worker thread, on a timer and at
once when something changes, so requests never wait for a tick.

    loop = SchedulerLoop(scheduler, interval_s=2.0, on_start=kernels.reconcile, after_tick=kernels.sweep)
    loop.start()          # on the server's event loop
    loop.wake()           # after a change, from any thread; wake-ups during a tick make one more
    await loop.stop()     # waits for a tick in progress to finish
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .scheduler import Scheduler

__all__ = ["SchedulerLoop"]

log = logging.getLogger(__name__)

# After a tick, the next one woken early waits at least this share of that tick's duration: a
# storm of wake-ups (a burst of submissions) keeps the scheduler's thread busy at most half the
# time, and requests, which share the interpreter with it, get the other half.
REST_RATIO = 1.0


def freeze_long_lived() -> None:
    """Leave what exists now out of the interpreter's cyclic garbage collections, until
    :meth:`SchedulerLoop.stop` (``gc.unfreeze()``).

    After start-up and the first tick the server holds its long-lived objects: modules, the catalog,
    the inventory, the scheduler's copies of thousands of workloads and nodes. A full collection
    walks all of them, holding the interpreter lock for 0.1-0.3 s at 5,000 nodes and workloads,
    and every request waits meanwhile; under a stream of submissions one came every few seconds.
    Frozen objects are still freed by reference counting when they are dropped (a replaced copy);
    only reference cycles among them wait for the stop. No collection first: it would cost the very
    pause this avoids (and a test run starts many servers)."""
    gc.freeze()
    log.debug("jupyter-hetero: %d objects left out of garbage collection", gc.get_freeze_count())


class SchedulerLoop:
    """``wake()`` after any change; ticks are coalesced, never overlap, and one failing tick never
    stops the loop. ``on_start`` and ``after_tick`` run on the event loop (they reach kernels)."""

    def __init__(self, scheduler: Scheduler, interval_s: float, *, on_start=None, after_tick=None,
                 rest_ratio: float = REST_RATIO):
        self.scheduler = scheduler
        self.interval_s = interval_s
        self.rest_ratio = rest_ratio
        self.on_start = on_start or (lambda: None)
        self.after_tick = after_tick or (lambda now: None)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        # One thread, so ticks never overlap and the scheduler's own state has a single writer.
        self._thread: ThreadPoolExecutor | None = None
        self._stopped = False
        self._froze = False
        self._lock = threading.Lock()
        self.wakes = 0

    @property
    def started(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        """Start on the running event loop (idempotent; not again after :meth:`stop`)."""
        if self._task is None and not self._stopped:
            self._loop = asyncio.get_running_loop()
            self._event = asyncio.Event()
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hetero-scheduler")
            self.scheduler.call_on_loop = self.call_on_loop
            self._task = self._loop.create_task(self._run())

    def wake(self) -> None:
        """Ask for a tick soon; cheap, from any thread. Wake-ups during a tick make one more tick."""
        if self._loop is None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return  # not on the server's loop (a CLI or a test calling services directly)
            self.start()
            if self._loop is None:
                return  # stopped
        with self._lock:
            self.wakes += 1
        self.call_on_loop(self._event.set)

    def call_on_loop(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback(*args)`` on the event loop: at once when already there, else soon.

        Ticks run in a worker thread; whatever they hand to asyncio objects or the kernel manager
        (a kernel start waiting for its placement) must cross over through this."""
        loop = self._loop
        if loop is None:
            callback(*args)
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            callback(*args)
            return
        try:
            loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:
            log.debug("jupyter-hetero: event loop closed; dropped %r", callback)

    def stats(self) -> dict:
        """Ticks run, wake-ups asked for, and the recent ticks' timings per phase."""
        return {"interval_s": self.interval_s, "wakes": self.wakes, **self.scheduler.ticks.summary()}

    async def _in_thread(self, function: Callable[[], Any]) -> Any:
        return await self._loop.run_in_executor(self._thread, function)

    async def _run(self) -> None:
        try:
            await self._in_thread(self.scheduler.reconcile)
        except Exception:
            log.exception("jupyter-hetero: reconciling after the restart failed")
        self.on_start()
        first = True
        # Not `while True`: on Python 3.11 asyncio.wait_for can swallow the cancellation stop() sends
        # when its wait ends at the same moment, and the loop must still end (the server's stop waits).
        while not self._stopped:
            self._event.clear()  # wake-ups from here on ask for the next tick
            started = self._loop.time()
            try:
                await self._in_thread(self.scheduler.tick)
                self.after_tick(self.scheduler.clock())
            except Exception:
                log.exception("jupyter-hetero: scheduler tick failed")
            if first:
                first = False
                freeze_long_lived()
                self._froze = True
            ended = self._loop.time()
            try:
                await asyncio.wait_for(self._event.wait(), self.interval_s)
            except asyncio.TimeoutError:
                pass
            rest = ended + (ended - started) * self.rest_ratio - self._loop.time()
            if rest > 0:
                await asyncio.sleep(rest)

    async def stop(self) -> None:
        """Stop ticking; a tick in progress finishes first (it may be recording decisions)."""
        self._stopped = True
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        if self._thread is not None:
            thread, self._thread = self._thread, None
            await asyncio.get_running_loop().run_in_executor(None, thread.shutdown, True)
        if self._froze:
            self._froze = False
            gc.unfreeze()  # what start-up froze is collected as usual again
