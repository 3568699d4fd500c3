"""Translate the catalog, the inventory's nodes and stored workloads into the engine's inputs.

    nodes = [node_state(view) for view in inventory.nodes() if view.flavor is not None]
    queues, tenants = queue_policies(catalog), tenant_quotas(catalog)
    workload = engine_workload(row, catalog.template(row.template), 3600.0, times)

Pure and below both the services, which feed the engine from the store, and the simulations,
which feed it from traces: it imports the engine, the catalog, capability records and the store's
row types, never a service.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from .capability import Accelerator, Held, NodeCapability
from .catalog import Catalog, Queue, Resources, Template
from .engine import (
    Constraints,
    Device,
    LabelReq,
    NodeState,
    Placement,
    QueuePolicy,
    Request,
    Res,
    Slot,
    TenantQuota,
    VariantNeed,
    Workload,
    WorkloadKind,
)
from .store.tables import WorkloadRow

__all__ = [
    "NodeView",
    "SchedulerTime",
    "constraints_for",
    "engine_request",
    "engine_workload",
    "node_state",
    "placement_from_json",
    "placement_to_json",
    "queue_policies",
    "tenant_quotas",
]


# Nodes that share this label value are one interconnect domain (gangs with same-interconnect).
DOMAIN_LABEL = "hetero.io/interconnect-domain"


@dataclass(frozen=True)
class NodeView:
    """A node as the API shows it: its capability, flavor, state and when it was seen."""

    capability: NodeCapability
    flavor: str | None
    state: str  # as its source reports it: ready, cordoned or lost
    first_seen: float
    last_seen: float
    held: Held = Held()  # what work we did not place holds of it (a cluster's other pods)
    onboarded: bool = True  # passed onboarding, or none is required; until then it takes no work

    @property
    def readiness(self) -> str:
        """Its state as people and the engine see it: a ready node that has not passed onboarding is onboarding."""
        return "onboarding" if self.state == "ready" and not self.onboarded else self.state

    @property
    def name(self) -> str:
        return self.capability.name

    def to_json(self) -> dict[str, Any]:
        return {
            **self.capability.model_dump(mode="json"),
            "family": self.capability.family.value,
            "flavor": self.flavor,
            "state": self.readiness,
            "schedulable": self.readiness == "ready" and self.flavor is not None,
            "held_by_others": {"cpu_milli": self.held.cpu_milli, "memory_mib": self.held.memory_mib,
                               "devices": self.held.devices},
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
        }


class SchedulerTime(Protocol):
    """Stored wall timestamps as scheduler time (``services.clock.SteadyTime`` is one)."""

    def steady(self, workload_id: int, name: str, wall_value: float | None) -> float | None: ...


def _res(resources: Resources | None) -> Res | None:
    if resources is None:
        return None
    return Res(resources.cpu_milli, resources.memory_mib, resources.device_milli)


def queue_policies(catalog: Catalog) -> dict[str, QueuePolicy]:
    return {queue.name: _policy(queue) for queue in catalog.queues}


def _policy(queue: Queue) -> QueuePolicy:
    return QueuePolicy(
        name=queue.name,
        priority=queue.priority,
        max_wait_s=queue.max_wait_s,
        escalation=queue.escalation.action.value,
        priority_boost=queue.escalation.priority_boost,
        may_preempt=frozenset(queue.preemption.may_preempt),
        preemptible=queue.preemption.preemptible,
        idle_kernels_only=queue.preemption.idle_kernels_only,
        grace_s=queue.preemption.grace_s,
        reserved=dict(queue.reserved),
        lends_reserved=queue.lend_reserved,
        can_borrow=queue.borrowing,
    )


def tenant_quotas(catalog: Catalog) -> dict[str, TenantQuota]:
    return {
        tenant.name: TenantQuota(
            tenant=tenant.name,
            cohort=tenant.cohort,
            weight=tenant.weight,
            nominal={flavor: _res(quota.nominal) for flavor, quota in tenant.quotas.items()},
            borrowing_limit={flavor: _res(quota.borrowing_limit) for flavor, quota in tenant.quotas.items()},
            lending_limit={flavor: _res(quota.lending_limit) for flavor, quota in tenant.quotas.items()},
        )
        for tenant in catalog.tenants
    }


def node_state(view: NodeView) -> NodeState:
    """A node at full capacity less what others hold of it (a cluster's other pods, on its last devices);
    the engine charges what runs on it."""
    capability = view.capability
    accelerator = capability.accelerator
    held = view.held
    devices = _devices(accelerator) if accelerator else []
    for device in devices[len(devices) - held.devices:] if held.devices else ():
        device.free_milli = device.free_mem = 0
    frameworks = set(capability.frameworks) | set(accelerator.frameworks if accelerator else ())
    return NodeState(
        name=capability.name,
        flavor=view.flavor or "",
        cpu=capability.cpu_milli,
        mem=capability.memory_mib,
        free_cpu=capability.cpu_milli - held.cpu_milli,
        free_mem=capability.memory_mib - held.memory_mib,
        devices=devices,
        family=capability.family.value,
        model=accelerator.model if accelerator else "",
        driver=accelerator.driver_version if accelerator else None,
        runtime=accelerator.runtime_version if accelerator else None,
        interconnect=accelerator.interconnect if accelerator else "none",
        frameworks=frozenset(frameworks),
        labels=dict(capability.labels),
        domain=capability.labels.get(DOMAIN_LABEL, capability.name),
        schedulable=view.readiness == "ready" and view.flavor is not None,
        shares_devices=accelerator is not None and accelerator.sharing != "whole",
        inference_engines=frozenset(accelerator.inference_engines if accelerator else ()),
        firmware=accelerator.firmware_version if accelerator else None,
        rdma=capability.network.rdma,
        bandwidth_gbps=capability.network.bandwidth_gbps,
        largest_link_domain=_largest_link_domain(accelerator),
        readiness=view.readiness,
    )


def _largest_link_domain(accelerator: Accelerator | None) -> int | None:
    """The most devices sharing one link domain; None where no device names one (nothing is known per device, and
    the accelerator's interconnect stands for all of them)."""
    if accelerator is None:
        return None
    domains = Counter(device.link_domain for device in accelerator.devices if device.link_domain)
    return max(domains.values(), default=None)


def _devices(accelerator: Accelerator) -> list[Device]:
    """The group's devices at full capacity, with their link domain (numbered on the node in order of
    first appearance) and NUMA node where the capability says; a device it says nothing of has neither. A device
    its tool calls unhealthy has no free capacity, so nothing is placed on it."""
    where = {info.index: info for info in accelerator.devices}
    links: dict[str, int] = {}
    devices = []
    for i in range(accelerator.count):
        info = where.get(i)
        link = -1 if info is None or info.link_domain is None else links.setdefault(info.link_domain, len(links))
        numa = -1 if info is None or info.numa_node is None else info.numa_node
        free = 1000 if info is None or info.placeable else 0
        devices.append(Device(i, free, accelerator.memory_mib if free else 0, accelerator.memory_mib, link, numa))
    return devices


def constraints_for(template: Template, families: tuple[str, ...]) -> Constraints:
    """The template's node constraints, with minimum versions for the allowed runtime variants."""
    return Constraints(
        labels=tuple(LabelReq(r.key, r.operator, tuple(r.values)) for r in template.labels),
        frameworks=tuple(template.frameworks),
        interconnect=tuple(template.interconnect),
        variants=tuple(
            VariantNeed(v.family.value, v.min_driver, v.min_runtime, tuple(v.frameworks),
                        min_firmware=v.min_firmware, requires=tuple(v.requires))
            for v in template.variants if v.family.value in families
        ),
        inference_engines=tuple(template.inference_engines),
        rdma=template.network.rdma,
        min_bandwidth_gbps=template.network.min_bandwidth_gbps,
    )


def placement_to_json(placement: Placement) -> dict[str, Any]:
    return {
        "flavor": placement.flavor,
        "on_reservation": placement.on_reservation,
        "borrowing": placement.borrowing,
        "slots": [
            {"node": slot.node, "devices": [{"index": i, "milli": m, "memory_mib": mem} for i, m, mem in slot.devices]}
            for slot in placement.slots
        ],
    }


def placement_from_json(data: dict[str, Any]) -> Placement:
    return Placement(
        flavor=data["flavor"],
        slots=tuple(
            Slot(slot["node"], tuple((d["index"], d["milli"], d["memory_mib"]) for d in slot["devices"]))
            for slot in data["slots"]
        ),
        on_reservation=data.get("on_reservation", False),
        borrowing=data.get("borrowing", False),
    )


def engine_request(request: dict[str, Any]) -> Request:
    return Request(
        cpu=request["cpu_milli"],
        mem=request["memory_mib"],
        devices=request.get("devices") or 0,
        device_milli=request.get("device_milli") or 0,
        device_mem=request.get("device_memory_mib") or 0,
        replicas=request.get("replicas") or 1,
        placement=request.get("placement") or "any",
    )


def engine_workload(row: WorkloadRow, template: Template | None, default_runtime: float,
                    times: SchedulerTime | None = None, *, constraints: Constraints | None = None) -> Workload:
    """A stored workload as the engine sees it; with ``times``, its timestamps in scheduler time; ``constraints``,
    when given, are ``constraints_for(template, families)`` as the caller keeps them."""
    resolved = row.request
    families = tuple(resolved.get("variant_families") or ())
    placement = placement_from_json(row.placement) if row.placement else None
    runtime = row.runtime_s or (template.typical_runtime_s if template else default_runtime)
    if row.time_limit_s:
        runtime = min(runtime, row.time_limit_s)

    def at(name: str) -> float | None:
        value = getattr(row, name)
        return times.steady(row.id, name, value) if times is not None else value

    started_at = at("started_at")
    return Workload(
        id=row.id,
        tenant=row.tenant,
        queue=row.queue,
        request=engine_request(resolved["request"]),
        flavors=tuple(resolved["flavors"]),
        submitted_at=at("created_at"),
        kind=WorkloadKind(row.kind),
        constraints=constraints if constraints is not None
        else constraints_for(template, families) if template else Constraints(),
        user=row.user,
        placement=placement if row.state in ("admitted", "starting", "running") else None,
        started_at=started_at,
        expected_end=(started_at + runtime) if started_at else None,
        idle=row.idle,
        checkpoint_at=at("checkpoint_at"),
        preempting_until=at("preempting_until"),
        preempted_for=row.preempted_for,
        priority_boost=row.priority_boost,
        escalated=row.escalated,
        runtime_s=runtime,
        preempted_at=tuple(_preempted_at(row, times)),
    )


def _preempted_at(row: WorkloadRow, times: SchedulerTime | None) -> list[float]:
    """When the workload was preempted, oldest first, in scheduler time when ``times`` is given (the
    engine's damping counts them)."""
    stored = row.preempted_at or []
    if times is None:
        return list(stored)
    return [times.steady(row.id, f"preempted_at.{i}", value) for i, value in enumerate(stored)]
