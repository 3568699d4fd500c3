"""Inadmissible workloads: they wait for a node the inventory does not have, or for more quota than their tenant has.

    examined = workloads.due(inventory.version)   # stored inadmissible rows, only when the inventory changed
    changed = workloads.apply(decisions, examined)  # record who became inadmissible, requeue who no longer is

The engine flags a pending workload whose every eligible flavor fails statically (``Pending.inadmissible``).
Its row leaves the states the scheduler hands the engine every cycle, so a tick costs the same however
many wait that way; only a change of the inventory (a node added, ready again or changed) brings them back
into one cycle, and those the engine no longer flags go back to ``queued`` before anything else happens
to them. A request beyond all its tenant's quota and borrowing could ever give (``exceeds-quota``) waits here too,
as Kueue leaves such a workload inadmissible: only a reload of the catalog can lift it, and each reload hands every
inadmissible workload to the next cycle (``examine_again``).
"""

from __future__ import annotations

from ...engine import Decisions, Pending, render
from ...store import INADMISSIBLE, QUEUED_STATES, Repository
from ...store.tables import WorkloadRow

__all__ = ["InadmissibleWorkloads", "reason_of"]

# Why a workload leaves the inadmissible state.
REQUEUED_REASON = "the inventory now has a node that can hold it"


def reason_of(pending: Pending) -> str:
    """The English reason stored on the workload: what its blockers have in common (the quota, nodes lost or
    cordoned, or no node at all), then every flavor's static blocker, most telling first."""
    kinds = {b.kind for b in pending.blockers}
    blockers = "; ".join(render(b) for b in pending.blockers)
    if all(kind.startswith("exceeds-quota") for kind in kinds):
        return "its tenant's quota can never give it what it asks: " + blockers
    if any(kind.startswith("exceeds-quota") for kind in kinds):
        return "no node or quota can ever give it what it asks: " + blockers
    # A node that comes back (or is uncordoned) lifts it, whatever its other flavors lack: for now, not for ever.
    back = kinds & {"node-lost", "cordoned"}
    if back == {"node-lost"}:
        return "its nodes were lost: " + blockers
    if back == {"cordoned"}:
        return "its nodes are cordoned: " + blockers
    if back:
        return "its nodes are lost or cordoned: " + blockers
    return "no node in the inventory can ever hold it: " + blockers


class InadmissibleWorkloads:
    """What the scheduler knows of its inadmissible workloads: their last examination, and the
    inventory version it was made against."""

    def __init__(self, repository: Repository):
        self.repository = repository
        # Position and blockers from the cycle that last examined each one (the API shows them).
        self.info: dict[int, Pending] = {}
        self._checked: int | None = None  # None: not yet looked at since this server started

    def due(self, inventory_version: int) -> list[WorkloadRow]:
        """The inadmissible workloads to hand the next cycle: all of them once after each change of the
        inventory (and after a restart), none otherwise."""
        if self._checked == inventory_version:
            return []
        self._checked = inventory_version
        rows = self.repository.workloads(states=(INADMISSIBLE,))
        self.info = {row.id: self.info[row.id] for row in rows if row.id in self.info}
        return rows

    def apply(self, decisions: Decisions, examined: list[WorkloadRow]) -> list[WorkloadRow]:
        """Record the cycle's verdicts; returns the rows that became inadmissible in it."""
        was = {row.id: row for row in examined}
        became = []
        for pending in decisions.pending.values():
            if not pending.inadmissible:
                continue
            reason = reason_of(pending)
            before = was.pop(pending.workload, None)
            self.info[pending.workload] = pending
            data = {"blockers": [{"kind": b.kind, "flavor": b.flavor, "params": b.params} for b in pending.blockers]}
            if before is None:
                # Only from a state the engine scheduled: a cancel that came meanwhile stands.
                row = self.repository.update_workload_if(
                    pending.workload, lambda r: r.state in QUEUED_STATES, event="inadmissible", reason=reason,
                    data=data, state=INADMISSIBLE, not_before=None,
                )
                if row is not None:
                    became.append(row)
            elif before.reason != reason:  # the inventory changed, though not enough: say what stops it now
                self.repository.update_workload_if(
                    pending.workload, lambda r: r.state == INADMISSIBLE, event="inadmissible", reason=reason,
                    data=data, state=INADMISSIBLE,
                )
        # Examined and no longer flagged (waiting for something else now, or admitted in this cycle):
        # back to queued first, so that nothing is ever admitted from the inadmissible state.
        admitted = {admission.workload for admission in decisions.admissions}
        for workload_id in was:
            if workload_id not in admitted and workload_id not in decisions.pending:
                continue  # not scheduled at all (its queue left the catalog): nothing new to say
            self.info.pop(workload_id, None)
            self.repository.update_workload_if(workload_id, lambda r: r.state == INADMISSIBLE, event="requeued",
                                               reason=REQUEUED_REASON, state="queued")
        return became

    def examine_again(self) -> None:
        """Hand every inadmissible workload to the next cycle (a reload may have raised a quota it exceeded)."""
        self._checked = None

    def waiting(self, workload_id: int) -> Pending | None:
        return self.info.get(workload_id)

    def known(self) -> set[int]:
        """The inadmissible workloads as of the last examination (and those that became so since)."""
        return set(self.info)
