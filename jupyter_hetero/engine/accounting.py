"""One cycle's accounting: free capacity, quota use, reservations and fair shares, charged as the
cycle admits and evicts, rebuilt from the snapshot every cycle.

    state = Accounting(snapshot, Policy.BINPACK, None)
    state.fits(workload, "a100-80g")        # would it fit now (quota, reservation, capacity)?
    state.lost                              # running work whose node or devices are gone

Running work whose placement the inventory no longer has (its node left, or came back with fewer
devices) is charged nowhere and reported as lost: one stale placement must not stop the cycle.
"""

from __future__ import annotations


from .capacity import Cluster, NodeScorer
from .decisions import Lost
from .explain import render
from .fairshare import FairShare
from .model import ZERO, Placement, Res, Snapshot, Workload
from .quota import QuotaBook
from .reservation import Reservations

__all__ = ["Accounting"]


class Accounting:
    """Mutable per-cycle accounting: capacity, quota, reservations; implements :class:`.preemption.WhatIf`."""

    def __init__(self, snapshot: Snapshot, policy: str, node_scorer: NodeScorer | None, *, topology: bool = True):
        self.now = snapshot.now
        self.queues = snapshot.queues
        self.cluster = Cluster([node.clone() for node in snapshot.nodes], policy=policy, node_scorer=node_scorer,
                               topology=topology)
        self.reservations = Reservations(snapshot.queues)
        self.running: dict[str, list[Workload]] = {}  # flavor -> running workloads on it
        self.running_by_queue: dict[str, dict[str, list[Workload]]] = {}  # flavor -> queue -> running
        self.preempting: dict[int, float] = {}  # victim id -> grace deadline
        self.evicting_for: dict[int, list[Workload]] = {}  # preemptor id -> its victims still running
        self.candidates: dict[tuple, tuple[list, list]] = {}  # eviction candidates and protected ones, per cycle
        self.admitted_now: set[int] = set()  # admitted this cycle: not started yet, so never a victim
        self.lost: list[Lost] = []
        cpu = mem = 0
        devices: dict[str, int] = {}
        for node in self.cluster.nodes.values():
            if node.schedulable:
                cpu, mem = cpu + node.cpu, mem + node.mem
                devices[node.flavor] = devices.get(node.flavor, 0) + len(node.devices) * 1000
        self.fair = FairShare(cpu=cpu, mem=mem, devices=devices)
        # Running work is summed per (tenant, flavor) first: the quota book starts from the totals.
        usage: dict[tuple[str, str], Res] = {}
        for workload in snapshot.running:
            placement = workload.placement
            if placement is None:
                continue
            lost = _lost(self.cluster, workload)
            if lost is not None:
                self.lost.append(lost)
                continue
            for slot in placement.slots:
                self.cluster.allocate(slot, workload.request)
            total = workload.request.total
            key = (workload.tenant, placement.flavor)
            usage[key] = usage.get(key, ZERO) + total
            self.reservations.charge(workload.queue, placement.flavor, total.dev, on_reservation=placement.on_reservation)
            self.fair.charge(workload.tenant, placement.flavor, total)
            self.add_running(workload)
            if workload.preempting_until is not None:
                self.preempting[workload.id] = workload.preempting_until
                if workload.preempted_for is not None:
                    self.evicting_for.setdefault(workload.preempted_for, []).append(workload)
        self.quotas = QuotaBook(snapshot.tenants, usage)

    def add_running(self, workload: Workload) -> None:
        flavor = workload.placement.flavor
        self.running.setdefault(flavor, []).append(workload)
        self.running_by_queue.setdefault(flavor, {}).setdefault(workload.queue, []).append(workload)

    def charge(self, workload: Workload, placement: Placement, sign: int = 1, *, allocated: bool = False) -> None:
        """Charge (or with ``sign=-1`` refund) the workload everywhere; ``allocated``: its slots already are."""
        request = workload.request
        if not allocated:
            for slot in placement.slots:
                (self.cluster.allocate if sign > 0 else self.cluster.release)(slot, request)
        total = request.total if sign > 0 else Res(-request.total.cpu, -request.total.mem, -request.total.dev)
        self.quotas.charge(workload.tenant, placement.flavor, total)
        self.reservations.charge(workload.queue, placement.flavor, total.dev, on_reservation=placement.on_reservation)
        self.fair.charge(workload.tenant, placement.flavor, total)

    # -- WhatIf --------------------------------------------------------------------------------

    def remove(self, workload: Workload) -> None:
        assert workload.placement is not None
        self.charge(workload, workload.placement, -1)

    def restore(self, workload: Workload) -> None:
        assert workload.placement is not None
        self.charge(workload, workload.placement, +1)

    def fits(self, workload: Workload, flavor: str, may_borrow: bool = True, may_use_reserved: bool = True) -> bool:
        """Whether the workload fits now; without ``may_use_reserved`` it must leave other queues'
        reservations alone, and with it those of queues that lend none."""
        total = workload.request.total
        if not self.quotas.check(workload.tenant, flavor, total, may_borrow=may_borrow).ok:
            return False
        if total.dev and self.cluster.free_devices_milli(flavor) - total.dev < \
                self.reservations.outstanding(flavor, excluding=workload.queue, lent_too=not may_use_reserved):
            return False
        slots = self.cluster.place(flavor, workload.request, workload.constraints, any_fit=True)
        if slots is None:
            return False
        for slot in slots:
            self.cluster.release(slot, workload.request)
        return True

    def borrowing(self, tenant: str, flavor: str) -> bool:
        return self.quotas.borrowed(tenant, flavor)

    def share(self, tenant: str) -> float:
        quota = self.quotas.quotas.get(tenant)
        return self.fair.share(tenant, quota.weight if quota else 1.0)


def _lost(cluster: Cluster, workload: Workload) -> Lost | None:
    """Why the workload's placement no longer exists in the inventory, or None when it does."""
    for slot in workload.placement.slots:
        node = cluster.nodes.get(slot.node)
        if node is None:
            return _lost_as(workload.id, "node-gone", {"node": slot.node})
        for index, _milli, _mem in slot.devices:
            if not 0 <= index < len(node.devices):
                return _lost_as(workload.id, "device-gone", {"node": slot.node, "devices": len(node.devices), "index": index})
    return None


def _lost_as(workload: int, kind: str, params: dict) -> Lost:
    return Lost(workload, render(Lost(workload, "", kind, params)), kind, params)
