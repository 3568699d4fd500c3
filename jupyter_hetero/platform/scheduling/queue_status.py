"""How busy each queue is, as of the last scheduling cycle: what the queues and quota views show.

    status = QueueStatus.of(rows, waits, at=wall_now)   # in the scheduler's tick, from its copies
    status.counts["training"]                           # {"pending": 3, "running": 1}
    status.held_in("vision", "training")                # {(tenant, flavor): Held(...)}

Every open panel polls these views. Computing them from the store on every read made a read's
cost grow with the fleet and, worse, made the request trade the interpreter lock with a busy tick
once per row it read. The tick already holds every scheduled workload, so it sums them once per
cycle and the views read the sums; they are as fresh as the last cycle (a submission wakes one).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...capability import Held
from ...store import ACTIVE_STATES, PENDING_STATES
from ...store.tables import WorkloadRow

__all__ = ["QueueStatus", "WAIT_WINDOW_S"]

# Queue waits are reported over the last day.
WAIT_WINDOW_S = 86400.0


@dataclass(frozen=True)
class QueueStatus:
    """Pending and running counts per queue, capacity held per (tenant, queue, flavor), and the
    waits (seconds, ascending) of the workloads each queue admitted in the last day."""

    at: float  # wall time of the cycle it describes
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    held: dict[tuple[str, str, str], Held] = field(default_factory=dict)
    waits: dict[str, list[float]] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: Iterable[WorkloadRow], waits: dict[str, list[float]], *, at: float,
           also_pending: dict[str, int] | None = None) -> QueueStatus:
        """Sums over ``rows`` (what the scheduler holds), plus ``also_pending`` waiting workloads per
        queue that it does not hold (the inadmissible ones)."""
        counts: dict[str, dict[str, int]] = {}
        for queue, count in (also_pending or {}).items():
            counts.setdefault(queue, {"pending": 0, "running": 0})["pending"] += count
        held: dict[tuple[str, str, str], Held] = {}
        for row in rows:
            if row.state in PENDING_STATES:
                counts.setdefault(row.queue, {"pending": 0, "running": 0})["pending"] += 1
            elif row.state in ACTIVE_STATES:
                counts.setdefault(row.queue, {"pending": 0, "running": 0})["running"] += 1
                if row.flavor is not None:
                    key = (row.tenant, row.queue, row.flavor)
                    held[key] = held.get(key, Held()) + Held(row.held_cpu_milli, row.held_memory_mib,
                                                             row.held_device_milli)
        return cls(at, counts, held, {queue: sorted(values) for queue, values in waits.items()})

    def held_in(self, tenant: str, queue: str) -> dict[tuple[str, str], Held]:
        """What ``tenant`` holds in ``queue``, per (tenant, flavor)."""
        return {(tenant, flavor): use for (name, in_queue, flavor), use in self.held.items()
                if name == tenant and in_queue == queue}

    def held_by_tenant(self, tenant: str | None = None) -> dict[tuple[str, str], Held]:
        """What each tenant (or only ``tenant``) holds per flavor, over all queues."""
        total: dict[tuple[str, str], Held] = {}
        for (name, _queue, flavor), use in self.held.items():
            if tenant is None or name == tenant:
                total[(name, flavor)] = total.get((name, flavor), Held()) + use
        return total
