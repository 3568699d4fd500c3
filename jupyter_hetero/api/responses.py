"""What the REST API answers about the server, the catalog, tenants and nodes, as pydantic models: with
``workloads.py``, the one description the OpenAPI document is built from.

The services build plain dicts; these models describe them (tests validate real answers against the
document), and reuse the catalog's and the inventory's own models where an answer embeds them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..capability import AcceleratorFamily, Interconnect, NodeCapability
from ..catalog.models import (
    AdvancedParameter,
    CanaryPolicy,
    Escalation,
    FailurePolicy,
    LabelRequirement,
    Localized,
    MetricTarget,
    NetworkRequirement,
    PreemptionPolicy,
    QueueClass,
    ResourceRequest,
    Resources,
    Role,
    RuntimeVariant,
    TaskType,
    WorkloadKind,
)

__all__ = [
    "Answer",
    "Error",
    "MyTenant",
    "Node",
    "NodeRecord",
    "QueueStatus",
    "QuotaUse",
    "Template",
    "TenantSummary",
    "Version",
]


class Answer(BaseModel):
    """The base of every successful answer's model."""

    # An answer with a field the model lacks fails the schema test: the models stay true to the services.
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Error(BaseModel):
    """Every error answer; 400s name the ``field``, 403s give a ``reason``, some add more detail."""

    model_config = ConfigDict(extra="allow")

    message: str
    message_zh: str | None = Field(default=None, description="The message in Chinese, where the server has one.")
    field: str | None = Field(default=None, description="The offending field or query parameter (400).")
    reason: str | None = Field(default=None, description="Why the request is refused (403, 503).")
    errors: list[dict[str, Any]] = Field(default_factory=list, description="Every validation error (400).")


class TickTiming(Answer):
    """One scheduling tick's phases, in seconds."""

    at: float = Field(description="Wall-clock start of the tick.")
    monitor_s: float = Field(description="Watching running work (one process scan).")
    snapshot_s: float = Field(description="Bringing the engine's snapshot up to date.")
    engine_s: float = Field(description="The scheduling cycle.")
    apply_s: float = Field(description="Recording decisions and starting or stopping processes.")
    total_s: float
    running: int
    pending: int
    admitted: int
    changed: int = Field(description="Workload rows the snapshot re-read from the store.")


class SchedulerStats(Answer):
    """The scheduling loop's ticks, wake-ups and recent tick timings."""

    interval_s: float = Field(description="Seconds between ticks when nothing changes.")
    ticks: int = Field(description="Ticks run since the server started.")
    wakes: int = Field(description="Wake-ups asked for (submissions, releases); coalesced into ticks.")
    p50_s: float | None
    max_s: float | None
    recent: list[TickTiming] = Field(description="The last ticks, oldest first.")


class Version(Answer):
    """``GET /version``."""

    version: str
    api: str
    mode: Literal["single-server", "hub"]
    backend: str
    schema_version: int
    database: str


class Template(Answer):
    """A task template of the catalog, and whether it runs as a kernel."""

    name: str
    task_type: TaskType
    display: Localized
    description: Localized
    kinds: list[WorkloadKind]
    request: ResourceRequest
    flavors: list[str] = Field(description="Eligible flavors in order of preference.")
    variants: list[RuntimeVariant]
    metrics: list[str | MetricTarget]
    canary: CanaryPolicy
    queue: str
    parameters: list[AdvancedParameter]
    labels: list[LabelRequirement]
    interconnect: list[Interconnect]
    frameworks: list[str]
    inference_engines: list[str]
    network: NetworkRequirement
    time_limit_s: int | None
    typical_runtime_s: int
    idle_timeout_s: int | None
    interactive: bool


class QuotaUse(Answer):
    """A tenant's quota and use of one flavor."""

    flavor: str
    nominal: Resources
    borrowing_limit: Resources | None
    lending_limit: Resources | None
    used: Resources


class QueueStatus(Answer):
    """A queue with its rules, pending and running counts, and the caller's tenant quota use in it."""

    name: str
    queue_class: QueueClass = Field(alias="class")
    display: Localized
    description: Localized
    priority: int
    max_wait_s: int
    escalation: Escalation
    preemption: PreemptionPolicy
    failure: FailurePolicy
    borrowing: bool
    reserved: dict[str, int]
    lend_reserved: bool = Field(description="Whether other queues may borrow its idle reserved devices.")
    priority_class: str | None = Field(description="Kubernetes PriorityClass of the queue's pods.")
    kueue_queue: str | None = Field(description="Kueue LocalQueue that also admits the queue's pods, if any.")
    allowed: bool
    pending: int = Field(description="Workloads waiting in the queue: queued, preempted and inadmissible.")
    running: int
    wait_p50_s: float | None = Field(description="Over workloads admitted in the last day.")
    wait_p95_s: float | None
    admitted_last_day: int
    quota: list[QuotaUse]
    status_at: float = Field(description="Wall time of the scheduling cycle the counts, waits and use describe "
                                         "(each cycle sums them once; a submission or cancel wakes one).")


class MyTenant(Answer):
    """``GET /tenants/me``: the caller's tenant, role, and quota and use per flavor."""

    user: str
    role: Role
    tenant: str
    display: Localized
    cohort: str
    cost_centre: str | None
    queues: list[str]
    templates: list[str]
    quota: list[QuotaUse]


class TenantSummary(Answer):
    """A tenant as ``GET /tenants`` lists it, with members, quota and use per flavor."""

    tenant: str
    display: Localized
    users: list[str]
    groups: list[str]
    admins: list[str]
    cohort: str
    weight: float
    cost_centre: str | None
    queues: list[str]
    templates: list[str]
    quota: list[QuotaUse]


class Allocation(Answer):
    """What admitted work holds on a node."""

    cpu_milli: int
    memory_mib: int
    device_milli: int
    devices: list[dict[str, Any]]
    workloads: int


class NodeUtilisation(Answer):
    """What a node uses now, measured by the backend."""

    cpu_pct: float
    memory_used_mib: float
    # Absent, not null, where nothing measures the devices.
    device_util_pct: float = Field(default=None, description="Mean over the node's devices, where measured.")
    device_memory_used_mib: float = Field(default=None, description="Device memory used on the node's devices, "
                                                                            "where measured.")


class HeldByOthers(Answer):
    cpu_milli: int
    memory_mib: int
    devices: int


class NodeRecord(NodeCapability):
    """A node of the inventory as recorded: its capability, flavor and state."""

    # Aliased: the capability's own ``family`` is a property derived from its accelerator.
    family_: AcceleratorFamily = Field(alias="family")
    flavor: str | None
    state: Literal["ready", "onboarding", "cordoned", "lost"]
    schedulable: bool
    first_seen: float
    last_seen: float
    held_by_others: HeldByOthers = Field(
        description="What work this platform did not place holds of the node (a cluster's other pods).")


class Node(NodeRecord):
    """A node as ``GET /nodes`` lists it: the record, what admitted work holds and what it uses now."""

    allocated: Allocation
    utilisation: NodeUtilisation | None = Field(
        description="Null where it cannot be measured (emulated nodes).")
