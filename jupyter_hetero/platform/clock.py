"""Time for the services: wall time for what people read, monotonic time for every duration.

    times = SteadyTime(Clock())
    started = times.steady(workload_id, "started_at", row.started_at)   # wall -> scheduler time, once
    if times.now() >= started + row.time_limit_s: ...                   # a wall-clock step moves neither side

A step of the wall clock (an NTP correction, a resume from suspend) must not end a job for its
time limit, escalate a queue or cull a kernel. Timestamps stay wall time in the store: people read
them and they outlive the server. Each one is turned into scheduler time once, the first time this
server sees it, and remembered; scheduler time only advances with the monotonic clock.
"""

from __future__ import annotations

import time

__all__ = ["Clock", "SteadyTime"]


class Clock:
    """The system's clocks; a test injects a subclass (``HeteroApp.clock_class``) whose wall time steps."""

    def wall(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class SteadyTime:
    """Scheduler time: the wall time at start-up, advanced by the monotonic clock from then on."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self._origin = clock.wall() - clock.monotonic()
        # workload -> name -> (the stored wall value, its scheduler time when first seen)
        self._seen: dict[int, dict[str, tuple[float, float]]] = {}

    def now(self) -> float:
        return self._origin + self.clock.monotonic()

    def wall(self) -> float:
        return self.clock.wall()

    def steady(self, workload_id: int, name: str, wall_value: float | None) -> float | None:
        """The scheduler time of a stored wall timestamp, derived the first time it is seen."""
        if wall_value is None:
            return None
        seen = self._seen.setdefault(workload_id, {})
        known = seen.get(name)
        if known is not None and known[0] == wall_value:
            return known[1]
        steady = self.now() - (self.clock.wall() - wall_value)
        seen[name] = (wall_value, steady)
        return steady

    def to_wall(self, steady_value: float) -> float:
        """A scheduler time as the wall time to store or show (a deadline, an ETA)."""
        return self.clock.wall() + (steady_value - self.now())

    @property
    def remembered(self) -> int:
        """How many workloads have timestamps remembered."""
        return len(self._seen)

    def retain(self, workload_ids: set[int]) -> None:
        """Forget every workload but these (the ones still waiting or running)."""
        self._seen = {key: value for key, value in self._seen.items() if key in workload_ids}

    def forget(self, workload_id: int) -> None:
        """Drop what is remembered of a workload that has ended."""
        self._seen.pop(workload_id, None)
