"""Blockers: the structured reasons a workload waits, built from the cycle's accounting.

Each carries the facts its sentence needs (see :func:`.explain.render`) and how close the workload
is to fitting there, so the closest come first.
"""

from __future__ import annotations

from ..units import format_amount, format_cpu
from .decisions import Blocker
from .model import Res, Workload
from .quota import QuotaCheck, QuotaVerdict

__all__ = ["STATIC_KINDS", "capacity_blocker", "inadmissible", "quota_blocker", "static_blockers"]

# Blockers about the inventory itself: no node of the flavor, none big enough, none with the right
# accelerator, driver, runtime, frameworks, interconnect or labels, or none onboarded yet. Only a
# change of the inventory can lift them; quota, capacity, holds and preemption are a matter of time.
STATIC_KINDS = frozenset({
    "no-nodes", "not-admitted", "no-accelerator", "device-memory", "device-count", "device-sharing", "flavor-devices",
    "interconnect", "variant", "driver", "runtime", "frameworks", "labels", "node-cpu", "node-memory",
})


def inadmissible(blockers) -> bool:
    """Whether every blocker is static: no node of the inventory could ever hold the workload."""
    return bool(blockers) and all(blocker.kind in STATIC_KINDS for blocker in blockers)


def static_blockers(flavor: str, mismatches) -> list[Blocker]:
    if not mismatches:
        return [Blocker("no-nodes", flavor, {}, 0.0)]
    # A flavor with nodes that lack something says more than one with no node at all: it ranks first.
    return [
        Blocker(kind, flavor, {"need": example.need, "have": example.have, "nodes": count}, 0.01)
        for kind, (example, count) in mismatches.items()
    ]


def quota_blocker(state, workload: Workload, flavor: str, check: QuotaCheck, total: Res,
                  no_borrow: str | None = None) -> Blocker:
    """``no_borrow``: why a workload whose queue borrows may not now (``not-preemptible``, ``protected``)."""
    if check.verdict == QuotaVerdict.NO_QUOTA:
        return Blocker("no-quota", flavor, {"tenant": workload.tenant}, 0.0)
    scale, unit = _unit(check.resource)
    params = {
        "tenant": workload.tenant, "queue": workload.queue, "resource": unit,
        "used": format_amount(check.used / scale), "nominal": format_amount(check.limit / scale),
        "borrowing_limit": "unlimited" if check.borrow_limit is None else format_amount(check.borrow_limit / scale),
    }
    need = getattr(total, {"cpu": "cpu", "memory": "mem", "devices": "dev"}[check.resource or "devices"]) or 1
    if check.verdict == QuotaVerdict.COHORT_FULL:
        cohort = state.quotas.quotas[workload.tenant].cohort
        # Within its own nominal quota the tenant takes lent quota back; beyond it, it only borrows.
        kind = "cohort-borrow" if check.borrowing else "cohort"
        return Blocker(kind, flavor, {**params, "cohort": cohort, "limit": params["nominal"]}, 0.6)
    room = max(0, (check.limit + (check.borrow_limit or 0)) - check.used)
    return Blocker(f"quota-{no_borrow}" if no_borrow else "quota", flavor, params, max(0.05, min(0.95, room / need)))


def capacity_blocker(state, flavor: str, workload: Workload, outstanding: int) -> Blocker:
    total = workload.request.total
    if total.dev:
        free = state.cluster.free_devices_milli(flavor)
        if outstanding and free >= total.dev:
            return Blocker("reservation", flavor, {"reserved": _devices(outstanding), "owner": _owner(state, flavor, workload.queue)}, 0.7)
        return Blocker("capacity", flavor, {"free": _devices(free), "need": _devices(total.dev)}, max(0.05, min(0.95, free / total.dev)))
    free_cpu = sum(n.free_cpu for n in state.cluster.flavors.get(flavor, ()) if n.schedulable)
    return Blocker("capacity", flavor, {"free": format_cpu(free_cpu), "need": format_cpu(total.cpu)},
                   max(0.05, min(0.95, free_cpu / max(total.cpu, 1))))


def _owner(state, flavor: str, queue: str) -> str:
    return ",".join(q for q in state.reservations.reserved.get(flavor, {}) if q != queue)


def _unit(resource: str) -> tuple[float, str]:
    return {"cpu": (1000, "CPU"), "memory": (1024, "GiB memory"), "devices": (1000, "devices")}.get(resource, (1, resource))


def _devices(milli: int) -> str:
    return f"{format_amount(milli / 1000)} devices"

