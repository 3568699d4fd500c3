"""Waiting work held out of the engine's cycles, in one place: jobs that await others (``dependencies.py``) and an
array's tasks past its limit (Slurm's ``--array 0-99%10``).

    held, failed, examined = holds.hold(rows, examined, wall)  # {id: Pending}, ids failed, inadmissible rows to examine
    holds.after_cycle(decisions)   # held-back inadmissible tasks wait under their limit once a sibling proves admissible

A hold is kept before the engine rather than in it: a held workload stays queued and is no candidate of any cycle
(the scheduler gives its engine copy a start time of never), so the engine stays pure and a held workload costs a
cycle nothing. An array with a limit has at most that many of its tasks admitted or running (holding capacity) at
once: each tick counts those, and lets the lowest-indexed waiting tasks make up the rest; the others are held with an
``array-limit`` blocker naming the array, its limit and how many of its tasks run. Without a limit an array's tasks
are ordinary workloads, each admitted on its own within its tenant's quota. Nothing about a hold is stored but each
task's ``spec["array"]`` (and a dependent's ``spec["after"]``), so a restart keeps every hold as it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain

from ...engine import Blocker, Decisions, Pending
from ...store import ACTIVE_STATES, INADMISSIBLE, PENDING_STATES, Repository
from ...store.tables import WorkloadRow
from ..workloads.arrays import task_of
from .dependencies import Dependencies
from .inadmissible import InadmissibleWorkloads

__all__ = ["Holds"]

# Why an inadmissible task held back by its array's limit goes back to its queue (stored English, as every reason).
_REQUEUED = "a task of its array can be placed now: it waits for a place within the array's limit"


class Holds:
    """Holds dependents and the tasks of arrays past their limit; one per scheduler."""

    def __init__(self, repository: Repository, inadmissible: InadmissibleWorkloads):
        self.repository = repository
        self.inadmissible = inadmissible
        self.dependencies = Dependencies(repository)
        # Of the last hold, per array with inadmissible tasks held back: those let through to the cycle, those held
        # back, and whether some of its tasks held capacity.
        self._through: dict[int, list[int]] = {}
        self._back: dict[int, list[int]] = {}
        self._running: dict[int, int] = {}

    def hold(self, rows: Iterable[WorkloadRow], examined: Sequence[WorkloadRow],
             wall: float) -> tuple[dict[int, Pending], list[int], list[WorkloadRow]]:
        """Of the scheduled ``rows``, those held, each with its blockers; the ids just failed (a dependency that can no
        longer hold); and of the inadmissible rows ``examined`` this tick, those the cycle may take (an array's
        task past its limit waits as it is)."""
        # The few rows a hold may concern, picked at the cost of a key lookup each: a tick over thousands of waiting
        # workloads stays as cheap as it was.
        rows = [row for row in rows if (spec := row.spec) and ("after" in spec or "array" in spec)]
        held, failed = self.dependencies.hold(rows, wall)
        over, back = self._limit(chain(rows, examined), held, wall)
        held.update(over)
        return held, failed, [row for row in examined if row.id not in back]

    def _limit(self, rows: Iterable[WorkloadRow], held: dict[int, Pending],
               wall: float) -> tuple[dict[int, Pending], set[int]]:
        """The waiting tasks past their array's limit, each with its blocker, and those of them inadmissible."""
        arrays: dict[int, list[WorkloadRow]] = {}
        for row in rows:
            task = task_of(row)
            if task is not None and task.get("limit"):
                arrays.setdefault(task["id"], []).append(row)
        over: dict[int, Pending] = {}
        self._through, self._back, self._running = {}, {}, {}
        for array, tasks in arrays.items():
            limit = task_of(tasks[0])["limit"]
            running = sum(row.state in ACTIVE_STATES for row in tasks)
            # A retry still in its backoff is no candidate yet: the next task by index takes its place meanwhile.
            waiting = sorted((row for row in tasks if row.state in PENDING_STATES and row.id not in held
                              and (row.not_before is None or row.not_before <= wall)),
                             key=lambda row: task_of(row)["index"])
            through, past = waiting[:max(0, limit - running)], waiting[max(0, limit - running):]
            blocker = Blocker("array-limit", None, {"array": array, "limit": limit, "running": running,
                                                    "next": len(through)})
            over.update((row.id, Pending(row.id, None, (blocker,))) for row in past if row.state != INADMISSIBLE)
            if back := [row.id for row in past if row.state == INADMISSIBLE]:
                self._through[array], self._back[array] = [row.id for row in through], back
                self._running[array] = running
        return over, {workload for back in self._back.values() for workload in back}

    def after_cycle(self, decisions: Decisions) -> None:
        """An array's inadmissible tasks held back by its limit go back to their queue, to wait there within the
        limit, once some task of theirs holds capacity or the cycle found one admissible: every task of an array
        asks for the same. Otherwise they stay inadmissible, for the next change of the inventory."""
        requeue = [workload for array, back in self._back.items() if self._running[array] or any(
            workload not in decisions.pending or not decisions.pending[workload].inadmissible
            for workload in self._through[array]) for workload in back]
        if not requeue:
            return
        for row in self.repository.update_workloads_if(requeue, lambda current: current.state == INADMISSIBLE,
                                                       event="requeued", reason=_REQUEUED, state="queued"):
            self.inadmissible.info.pop(row.id, None)
        self._back = {}
