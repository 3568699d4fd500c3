"""What each waiting workload waited on, over time: a ``waiting`` event when its top blocker changes.

    trail = BlockerTrail(repository)
    trail.observe(decisions.pending, now)   # after each cycle: at most one write, holding every change

The engine ranks a waiting workload's blockers every cycle, but the scheduler keeps only the latest in
memory; the evidence of one workload needs them over time. Recording every cycle's blockers would write
each waiting workload every tick, so only a change of the top blocker (its kind and flavor) is recorded,
at most once per ``MIN_INTERVAL_S`` per workload, and all of one tick's changes in one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...engine import Pending, render
from ...store import Repository

__all__ = ["MIN_INTERVAL_S", "TOP_BLOCKERS", "BlockerTrail", "blockers_json"]

# Seconds between two ``waiting`` events of one workload, however often its top blocker changes.
MIN_INTERVAL_S = 30.0
# How many of a workload's ranked blockers an event keeps.
TOP_BLOCKERS = 3


def blockers_json(pending: Pending, limit: int = TOP_BLOCKERS) -> list[dict[str, Any]]:
    """The first ``limit`` blockers as the API shows them (the message in English)."""
    return [{"kind": b.kind, "flavor": b.flavor, "message": render(b), "params": b.params}
            for b in pending.blockers[:limit]]


class BlockerTrail:
    """The top blocker last recorded for each waiting workload, and when (scheduler time)."""

    def __init__(self, repository: Repository, min_interval_s: float = MIN_INTERVAL_S):
        self.repository = repository
        self.min_interval_s = min_interval_s
        self._recorded: dict[int, tuple[tuple[str, str | None], float]] = {}

    def observe(self, pending: Mapping[int, Pending], now: float) -> int:
        """Record the workloads whose top blocker changed since their last ``waiting`` event; how many."""
        recorded = self._recorded
        events = []
        for workload_id, waiting in pending.items():
            # Inadmissible work says its blockers in its own `inadmissible` event; an empty list is a workload the
            # cycle did not get to yet.
            if not waiting.blockers or waiting.inadmissible:
                continue
            top = waiting.blockers[0]
            key = (top.kind, top.flavor)
            last = recorded.get(workload_id)
            if last is not None and (last[0] == key or now - last[1] < self.min_interval_s):
                continue
            recorded[workload_id] = (key, now)
            blockers = blockers_json(waiting)
            events.append({"type": "waiting", "workload_id": workload_id, "reason": blockers[0]["message"],
                           "data": {"blockers": blockers, "position": waiting.position}})
        # Admitted, cancelled or gone since: forgotten, so that its next wait (after a preemption) is told anew.
        for workload_id in recorded.keys() - pending.keys():
            del recorded[workload_id]
        self.repository.append_events(events)
        return len(events)
