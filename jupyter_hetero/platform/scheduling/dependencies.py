"""Dependencies between workloads: a job submitted with ``after`` waits, out of the engine's cycles, until
each workload it awaits has ended as its condition asks (Slurm's afterok, afterany, afternotok).

    held = dependencies.hold(rows, wall)   # {id: Pending with a blocker naming the awaited workload}

The hold is kept before the engine rather than in it: a held job is no candidate of any cycle (the scheduler
gives it a start time of never), so the engine stays pure and a cycle costs nothing per held job. Nothing about
a hold is stored but the job's ``spec["after"]``: every tick reads it again with the awaited workloads' states,
so a restart keeps each dependency as it was. A condition that can no longer hold (the awaited workload failed
for ``ok``, succeeded or was cancelled for ``failed``, or is gone) ends the job ``failed`` with the reason.

An array's id (its first task's) stands for the whole array, as Slurm's array job id does: ``ok`` waits until every
task succeeded, ``any`` until every task ended, ``failed`` until every task ended and at least one of them failed
(Slurm's afternotok over an array); the blocker says how many of its tasks are still to end.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...engine import Blocker, Pending
from ...store import QUEUED_STATES, Repository
from ...store.tables import WorkloadRow

__all__ = ["Dependencies", "array_verdict", "awaited", "verdict"]

# States a workload ends in; a preempted one waits again, so it has not ended.
_ENDED = ("succeeded", "failed", "cancelled", "lost")
# Per condition, the ended states that satisfy it; any other end can never satisfy it.
_MET_BY = {
    "ok": frozenset({"succeeded"}),
    "any": frozenset(_ENDED),
    "failed": frozenset({"failed", "lost"}),
}
# The ends that break an array's ``ok``, in the order its reason names the first one found.
_NOT_OK = ("failed", "lost", "cancelled")


def awaited(row: WorkloadRow) -> list[tuple[int, str]]:
    """(workload, condition) for each workload ``row`` waits for, as its submission stored them."""
    return [(int(entry["workload"]), entry.get("condition", "ok")) for entry in (row.spec or {}).get("after") or ()]


def verdict(condition: str, state: str | None) -> bool | None:
    """True when an awaited workload in ``state`` (None: gone) satisfies ``condition``, False when it never
    will, None while it may still."""
    if state is None:
        return False
    if state not in _ENDED:
        return None
    return state in _MET_BY[condition]


def array_verdict(condition: str, counts: dict[str, int]) -> tuple[bool | None, str | None]:
    """For an awaited array whose tasks are in these states (``counts``: state -> tasks), whether ``condition`` holds:
    True, False when it never will, None while it may still; with False, the state that broke it (None for
    ``failed`` when every task ended and none failed).

        array_verdict("ok", {"succeeded": 2, "running": 1})   # (None, None): one task is still to end
        array_verdict("ok", {"failed": 1, "running": 2})      # (False, "failed"): it can no longer hold
    """
    if condition == "ok":
        # One task that ended otherwise breaks it at once, as it does Slurm's afterok over an array.
        broken = next((state for state in _NOT_OK if counts.get(state)), None)
        if broken is not None:
            return False, broken
    if _pending(counts):
        return None, None
    if condition == "failed" and not any(counts.get(state) for state in _MET_BY["failed"]):
        return False, None
    return True, None


def _pending(counts: dict[str, int]) -> int:
    """How many of an array's tasks are still to end."""
    return sum(count for state, count in counts.items() if state not in _ENDED)


class Dependencies:
    """Holds jobs whose awaited workloads have not ended as asked, and fails those whose never will."""

    def __init__(self, repository: Repository):
        self.repository = repository

    def hold(self, rows: Iterable[WorkloadRow], wall: float) -> tuple[dict[int, Pending], list[int]]:
        """Of the waiting ``rows``, those still held, each with its blockers, and the ids just failed because a
        condition of theirs can no longer hold. The awaited workloads' states are read once, in one read."""
        dependents = [(row, after) for row in rows if row.state in QUEUED_STATES and (after := awaited(row))]
        states, arrays = self.repository.awaited_states(
            {workload for _row, after in dependents for workload, _ in after})
        held: dict[int, Pending] = {}
        failed: list[int] = []
        for row, after in dependents:
            blockers, broken = [], None
            for workload, condition in after:
                if workload in arrays:
                    counts = arrays[workload]
                    met, state = array_verdict(condition, counts)
                    if met is False:
                        broken = (workload, condition, state, counts)
                        break
                    if met is None:
                        blockers.append(Blocker(f"after-array-{condition}", None, {
                            "array": workload, "pending": _pending(counts), "size": sum(counts.values())}))
                    continue
                state = states.get(workload)
                met = verdict(condition, state)
                if met is False:
                    broken = (workload, condition, state, None)
                    break
                if met is None:
                    blockers.append(Blocker(f"after-{condition}", None, {"workload": workload, "state": state}))
            if broken is not None:
                if self._fail(row, *broken, wall):
                    failed.append(row.id)
            elif blockers:
                held[row.id] = Pending(row.id, None, tuple(blockers))
        return held, failed

    def _fail(self, row: WorkloadRow, workload: int, condition: str, state: str | None,
              counts: dict[str, int] | None, wall: float) -> bool:
        """End ``row`` failed with the unmet dependency, unless it left its queue meanwhile (a cancel); ``counts``:
        the awaited array's tasks' states, when ``workload`` is an array's id."""
        # Stored reasons are English, as every event's is; the API renders blockers, not reasons, in other languages.
        data = {"after": workload, "condition": condition, "state": state}
        if counts is not None:
            size = sum(counts.values())
            reason = (f"dependency not met: array {workload}: {counts[state]} of its {size} tasks {state}"
                      if state is not None else f"dependency not met: array {workload}: all of its {size} tasks "
                                                "ended, none failed")
            data = {**data, "array": workload, "tasks": dict(counts)}
        else:
            reason = (f"dependency not met: workload {workload} no longer exists" if state is None
                      else f"dependency not met: workload {workload} {state}")
        return self.repository.update_workload_if(
            row.id, lambda current: current.state in QUEUED_STATES, event="failed", reason=reason, data=data,
            state="failed", finished_at=wall, not_before=None,
        ) is not None
