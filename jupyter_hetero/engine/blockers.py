"""Blockers: the structured reasons a workload waits, built from the cycle's accounting.

Each carries the facts its sentence needs (see :func:`.explain.render`) and how close the workload
is to fitting there, so the closest come first.
"""

from __future__ import annotations

from ..units import format_amount, format_cpu
from .decisions import Blocker
from .model import Res, Workload
from .quota import QuotaCheck, QuotaVerdict

__all__ = [
    "STATIC_KINDS", "STATIC_ORDER", "capacity_blocker", "exceeds_quota_blocker", "inadmissible", "quota_blocker",
    "static_blockers",
]

# Blockers about the inventory itself, closest to lifted first: nodes still onboarding, cordoned or lost; labels;
# software a node could install (frameworks, inference engines, what the variant requires) or upgrade (driver,
# runtime, firmware); its network and links; the size of its hardware; the wrong hardware; no node at all. Only a
# change of the inventory can lift them; quota, capacity, holds and preemption are a matter of time.
STATIC_ORDER = (
    "not-onboarded", "cordoned", "node-lost", "labels", "frameworks", "inference-engines", "variant-requires",
    "driver", "runtime", "firmware", "bandwidth", "rdma", "link-domain", "interconnect", "device-sharing", "device-memory", "device-count",
    "flavor-devices", "node-memory", "node-cpu", "variant", "no-accelerator", "no-nodes",
)
STATIC_KINDS = frozenset(STATIC_ORDER)
# A request beyond all its tenant could ever hold of a flavor (nominal quota plus what it may borrow) waits for an
# admin as a static blocker does: time frees quota, never more quota than the tenant has. Kueue likewise leaves a
# workload that exceeds its ClusterQueue's maximum inadmissible until the quota changes.
ADMIN_KINDS = STATIC_KINDS | {"exceeds-quota", "exceeds-quota-not-preemptible"}
# Static blockers rank below every blocker of time (at least 0.05); a flavor without nodes is the farthest (0).
_STATIC_CLOSENESS = {kind: 0.02 * (1 - rank / (len(STATIC_ORDER) - 1)) for rank, kind in enumerate(STATIC_ORDER)}


def inadmissible(blockers) -> bool:
    """Whether every blocker is static: no node of the inventory could ever hold the workload."""
    return bool(blockers) and all(blocker.kind in ADMIN_KINDS for blocker in blockers)


def static_blockers(flavor: str, mismatches) -> list[Blocker]:
    if not mismatches:
        return [Blocker("no-nodes", flavor, {}, _STATIC_CLOSENESS["no-nodes"])]
    return [
        Blocker(kind, flavor, {"need": example.need, "have": example.have, "nodes": count}, _STATIC_CLOSENESS[kind])
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


def exceeds_quota_blocker(state, workload: Workload, flavor: str, total: Res, resource: str, may_borrow: bool,
                          never_borrows: str | None = None) -> Blocker:
    """The request asks more of ``resource`` than the tenant's quota plus borrowing could ever give it;
    ``never_borrows``: why its queue never borrows (``not-preemptible``), said instead of what it could borrow."""
    scale, unit = _unit(resource)
    attr = {"cpu": "cpu", "memory": "mem", "devices": "dev"}[resource]
    nominal = getattr(state.quotas.nominal(workload.tenant, flavor), attr)
    ceiling = getattr(state.quotas.ceiling(workload.tenant, flavor, may_borrow=may_borrow), attr)
    return Blocker(f"exceeds-quota-{never_borrows}" if never_borrows else "exceeds-quota", flavor, {
        "tenant": workload.tenant, "queue": workload.queue, "resource": unit,
        "need": format_amount(getattr(total, attr) / scale), "nominal": format_amount(nominal / scale),
        "borrowable": format_amount(max(0, ceiling - nominal) / scale), "ceiling": format_amount(ceiling / scale),
    }, 0.01)


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

