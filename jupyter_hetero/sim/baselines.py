"""Two schedulers to compare the engine with, behind the engine's own interface.

    decisions = FifoScheduler().cycle(snapshot)        # one global FIFO queue, no quotas
    decisions = QuotaFifoScheduler().cycle(snapshot)   # Kueue-like: strict FIFO per tenant, nominal quota, no borrowing

Both try a workload's flavors in its order and place replicas with the engine's own
:class:`~jupyter_hetero.engine.Cluster` (bin-packing), so the only differences from the engine
are queueing rules: whose turn it is, and whether a blocked head lets others pass. Neither
preempts.
"""

from __future__ import annotations

from dataclasses import replace

from ..engine import Admission, Cluster, Decisions, Placement, Policy, Snapshot, Workload

__all__ = ["FifoScheduler", "QuotaFifoScheduler"]


def _charged(snapshot: Snapshot) -> Cluster:
    """The cluster with every running workload's slots taken, as the engine charges them."""
    nodes = [replace(n, devices=[replace(d) for d in n.devices]) for n in snapshot.nodes]
    cluster = Cluster(nodes, policy=Policy.BINPACK)
    for workload in snapshot.running:
        for slot in workload.placement.slots:
            cluster.allocate(slot, workload.request)
    return cluster


def _fifo(pending: list[Workload]) -> list[Workload]:
    return sorted(pending, key=lambda w: (w.submitted_at, w.id))


class FifoScheduler:
    """One queue for everyone in submit order; when the head does not fit, nobody starts."""

    def cycle(self, snapshot: Snapshot) -> Decisions:
        cluster = _charged(snapshot)
        decisions = Decisions(now=snapshot.now)
        for workload in _fifo(snapshot.pending):
            placement = _place(cluster, workload)
            if placement is None:
                break  # head-of-line blocking: the defining trait of plain FIFO
            decisions.admissions.append(Admission(workload.id, placement))
        return decisions


class QuotaFifoScheduler:
    """Strict FIFO inside each tenant, bounded by the tenant's nominal quota per flavor, no borrowing.

    A head that fits neither its quota nor the free capacity of any flavor blocks its own tenant
    only (Kueue's ``StrictFIFO`` per ClusterQueue); heads of different tenants go in submit order.
    """

    def cycle(self, snapshot: Snapshot) -> Decisions:
        cluster = _charged(snapshot)
        used: dict[tuple[str, str], int] = {}
        for workload in snapshot.running:
            key = (workload.tenant, workload.placement.flavor)
            used[key] = used.get(key, 0) + workload.request.total.dev
        decisions = Decisions(now=snapshot.now)
        blocked: set[str] = set()
        for workload in _fifo(snapshot.pending):
            if workload.tenant in blocked:
                continue
            quota = snapshot.tenants.get(workload.tenant)
            need = workload.request.total.dev
            placement = None
            for flavor in workload.flavors:
                nominal = quota.nominal[flavor].dev if quota and flavor in quota.nominal else 0
                if used.get((workload.tenant, flavor), 0) + need <= nominal:
                    placement = _place(cluster, workload, (flavor,))
                    if placement is not None:
                        break
            if placement is None:
                blocked.add(workload.tenant)
                continue
            key = (workload.tenant, placement.flavor)
            used[key] = used.get(key, 0) + need
            decisions.admissions.append(Admission(workload.id, placement))
        return decisions


def _place(cluster: Cluster, workload: Workload, flavors: tuple[str, ...] | None = None) -> Placement | None:
    for flavor in flavors or workload.flavors:
        slots = cluster.place(flavor, workload.request, workload.constraints)
        if slots is not None:
            return Placement(flavor, slots)
    return None
