"""Runs the scheduler on the server's event loop: on a timer, and at once when something changes."""

from __future__ import annotations

import asyncio
import logging

from .scheduler import Scheduler

__all__ = ["SchedulerLoop"]

log = logging.getLogger(__name__)


class SchedulerLoop:
    """``wake()`` after any change; ticks are coalesced, and one failing tick never stops the loop."""

    def __init__(self, scheduler: Scheduler, interval_s: float, *, on_start=None, after_tick=None):
        self.scheduler = scheduler
        self.interval_s = interval_s
        self.on_start = on_start or (lambda: None)
        self.after_tick = after_tick or (lambda now: None)
        self._event: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self.wakes = 0

    @property
    def started(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        """Start on the running event loop (idempotent)."""
        if self._task is None:
            self._event = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())

    def wake(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # not on the server's loop (a CLI or a test calling services directly)
        self.start()
        self.wakes += 1
        self._event.set()

    def stats(self) -> dict:
        """Ticks run, wake-ups asked for, and the recent ticks' timings per phase."""
        return {"interval_s": self.interval_s, "wakes": self.wakes, **self.scheduler.ticks.summary()}

    async def _run(self) -> None:
        self.scheduler.reconcile()
        self.on_start()
        while True:
            try:
                self.scheduler.tick()
                self.after_tick(self.scheduler.clock())
            except Exception:  # noqa: BLE001 - a bad tick is logged; the next one may well succeed
                log.exception("jupyter-hetero: scheduler tick failed")
            try:
                await asyncio.wait_for(self._event.wait(), self.interval_s)
            except asyncio.TimeoutError:
                pass
            self._event.clear()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
