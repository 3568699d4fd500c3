"""Preemption as the store records it: the engine's choice of a victim, or a platform admin's, becomes a stop
with a grace period (requeued after), written before the victim is signalled.

    preempter = Preempter(repository=..., times=..., monitor=..., wall=time.time)
    preempter.by_engine(preemption, now)        # one of a cycle's Decisions.preemptions
    preempter.by_admin(workload_id, "root")     # {"id", "stopping", "grace_deadline"}

A cancel always wins: a victim already stopping keeps that stop, and still makes room for its preemptor.
"""

from __future__ import annotations

from collections.abc import Callable

from ...engine import Preemption
from ...store import ACTIVE_STATES, Repository
from ..clock import SteadyTime
from .lifecycle import may_stop
from .monitor import AttemptMonitor

__all__ = ["Preempter"]


class Preempter:
    def __init__(self, *, repository: Repository, times: SteadyTime, monitor: AttemptMonitor,
                 wall: Callable[[], float]):
        self.repository = repository
        self.times = times
        self.monitor = monitor
        self.wall = wall

    def by_engine(self, preemption: Preemption, now: float) -> None:
        """Stop the victim the engine chose for ``preemption.preemptor`` (``now``: scheduler time)."""
        victim = self.repository.workload(preemption.victim)
        preemptor = self.repository.workload(preemption.preemptor)
        grace = int(preemption.grace_deadline - now)
        why = {"priority": f"preempted by {preemptor.queue} workload {preemptor.id}",
               "reservation": f"capacity reserved for queue {preemptor.queue} taken back by workload {preemptor.id}",
               "reclaim": f"tenant {preemptor.tenant} reclaimed its lent quota for workload {preemptor.id}"}
        deadline = self.times.to_wall(preemption.grace_deadline)
        data = {"preemptor": preemptor.id, "reason": preemption.reason, "grace_deadline": deadline}
        stopped = self.repository.update_workload_if(
            victim.id, may_stop, event="preempting",
            reason=f"{why[preemption.reason]} (grace {grace} s), will be requeued",
            data=data, stopping="preempt", preempting_until=deadline, preempted_for=preemptor.id,
        )
        if stopped is None:
            # Stopping already, by a cancel above all (one may have come after this cycle's snapshot):
            # that stop stands; the victim still makes room for this preemptor.
            current = self.repository.workload(victim.id)
            already = "cancelled" if current.stopping == "cancel" else f"stopped ({current.stopping})"
            self.repository.update_workload_if(
                victim.id, lambda row: row.state in ACTIVE_STATES, event="preempting",
                reason=f"{why[preemption.reason]}; it is being {already} already", data=data,
                preempted_for=preemptor.id,
            )
            return
        self.times.steady(victim.id, "preempting_until", deadline)
        self.monitor.signal_stop(victim.id)
        self.repository.record_audit(actor="scheduler", action="workload.preempt", target=f"workload/{victim.id}",
                                     outcome="done", detail={**data, "tenant": victim.tenant,
                                                             "why": why[preemption.reason]})

    def by_admin(self, workload_id: int, admin: str) -> dict:
        """Evict a running workload by hand; its queue's grace period and requeue rules apply."""
        row = self.repository.workload(workload_id)
        grace = self.monitor.grace(row)
        deadline = self.wall() + grace
        stopped = self.repository.update_workload_if(
            workload_id, may_stop, event="preempting",
            reason=f"preempted by platform admin {admin} (grace {grace} s), will be requeued",
            stopping="preempt", preempting_until=deadline,
        )
        if stopped is None:  # already stopping (a cancel always wins): that stop stands
            row = self.repository.workload(workload_id)
            return {"id": workload_id, "stopping": row.stopping, "grace_deadline": row.preempting_until}
        self.times.steady(workload_id, "preempting_until", deadline)
        self.monitor.signal_stop(workload_id)
        return {"id": workload_id, "stopping": "preempt", "grace_deadline": deadline}
