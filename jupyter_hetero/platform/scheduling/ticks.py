"""How long the scheduler's recent ticks took, per phase: what ``GET /version`` shows platform admins.

    log = TickLog()
    log.record(TickTiming(at=now, monitor_s=0.01, snapshot_s=0.02, engine_s=0.3, apply_s=0.0, ...))
    log.summary()   # {"recent": [...], "p50_s": ..., "max_s": ...}
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import asdict, dataclass

__all__ = ["TickLog", "TickTiming"]

# Enough ticks to see a minute of a busy server at the default interval.
RECENT_TICKS = 50


@dataclass(frozen=True)
class TickTiming:
    """One tick: when it started (wall clock), seconds per phase, and how much work it saw."""

    at: float
    monitor_s: float
    snapshot_s: float
    engine_s: float
    apply_s: float
    total_s: float
    running: int
    pending: int
    admitted: int
    changed: int  # workload rows the snapshot re-read


class TickLog:
    """The last ticks' timings; written by the tick's thread, read by request handlers."""

    def __init__(self, size: int = RECENT_TICKS):
        self._recent: deque[TickTiming] = deque(maxlen=size)
        self._lock = threading.Lock()
        self.count = 0

    def record(self, timing: TickTiming) -> None:
        with self._lock:
            self._recent.append(timing)
            self.count += 1

    def recent(self) -> list[TickTiming]:
        with self._lock:
            return list(self._recent)

    def summary(self) -> dict:
        recent = self.recent()
        totals = sorted(t.total_s for t in recent)
        return {
            "ticks": self.count,
            "p50_s": _round(totals[len(totals) // 2]) if totals else None,
            "max_s": _round(totals[-1]) if totals else None,
            "recent": [{key: _round(value) if key.endswith("_s") else value for key, value in asdict(t).items()}
                       for t in recent],
        }


def _round(seconds: float) -> float:
    return round(seconds, 4)
