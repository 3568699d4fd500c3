"""Dependencies between workloads: a job submitted with ``after`` waits, out of the engine's cycles, until
each workload it awaits has ended as its condition asks (Slurm's afterok, afterany, afternotok).

    held = dependencies.hold(rows, wall)   # {id: Pending with a blocker naming the awaited workload}

The hold is kept before the engine rather than in it: a held job is no candidate of any cycle (the scheduler
gives it a start time of never), so the engine stays pure and a cycle costs nothing per held job. Nothing about
a hold is stored but the job's ``spec["after"]``: every tick reads it again with the awaited workloads' states,
so a restart keeps each dependency as it was. A condition that can no longer hold (the awaited workload failed
for ``ok``, succeeded or was cancelled for ``failed``, or is gone) ends the job ``failed`` with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...engine import Blocker, Pending
from ...store import QUEUED_STATES, Repository
from ...store.tables import WorkloadRow

__all__ = ["Dependencies", "awaited", "verdict"]

# States a workload ends in; a preempted one waits again, so it has not ended.
_ENDED = ("succeeded", "failed", "cancelled", "lost")
# Per condition, the ended states that satisfy it; any other end can never satisfy it.
_MET_BY = {
    "ok": frozenset({"succeeded"}),
    "any": frozenset(_ENDED),
    "failed": frozenset({"failed", "lost"}),
}


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


class Dependencies:
    """Holds jobs whose awaited workloads have not ended as asked, and fails those whose never will."""

    def __init__(self, repository: Repository):
        self.repository = repository

    def hold(self, rows: Iterable[WorkloadRow], wall: float) -> tuple[dict[int, Pending], list[int]]:
        """Of the waiting ``rows``, those still held, each with its blockers, and the ids just failed because a
        condition of theirs can no longer hold. The awaited workloads' states are read once, in one read."""
        dependents = [(row, after) for row in rows if row.state in QUEUED_STATES and (after := awaited(row))]
        states = self.repository.workload_states({workload for _row, after in dependents for workload, _ in after})
        held: dict[int, Pending] = {}
        failed: list[int] = []
        for row, after in dependents:
            blockers, broken = [], None
            for workload, condition in after:
                state = states.get(workload)
                met = verdict(condition, state)
                if met is False:
                    broken = (workload, condition, state)
                    break
                if met is None:
                    blockers.append(Blocker(f"after-{condition}", None, {"workload": workload, "state": state}))
            if broken is not None:
                if self._fail(row, *broken, wall):
                    failed.append(row.id)
            elif blockers:
                held[row.id] = Pending(row.id, None, tuple(blockers))
        return held, failed

    def _fail(self, row: WorkloadRow, workload: int, condition: str, state: str | None, wall: float) -> bool:
        """End ``row`` failed with the unmet dependency, unless it left its queue meanwhile (a cancel)."""
        # Stored reasons are English, as every event's is; the API renders blockers, not reasons, in other languages.
        reason = (f"dependency not met: workload {workload} no longer exists" if state is None
                  else f"dependency not met: workload {workload} {state}")
        return self.repository.update_workload_if(
            row.id, lambda current: current.state in QUEUED_STATES, event="failed", reason=reason,
            data={"after": workload, "condition": condition, "state": state},
            state="failed", finished_at=wall, not_before=None,
        ) is not None
