"""What the REST API answers, as pydantic models: the one description the OpenAPI document is built from.

The services build plain dicts; these models describe them (tests validate real answers against the
document), and reuse the catalog's and the inventory's own models where an answer embeds them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from ..capability import AcceleratorFamily, NodeCapability
from ..catalog.models import (
    AdvancedParameter,
    Escalation,
    FailurePolicy,
    Interconnect,
    LabelRequirement,
    Localized,
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
    "Attempt",
    "Blocker",
    "Error",
    "Event",
    "Explanation",
    "FlavorPreview",
    "KernelUsage",
    "MyTenant",
    "Node",
    "NodeRecord",
    "Placement",
    "PreemptOutcome",
    "Preemption",
    "PreemptionDryRun",
    "Preview",
    "QueueStatus",
    "QuotaUse",
    "StartedKernel",
    "Template",
    "TenantSummary",
    "Version",
    "Workload",
]

WorkloadState = Literal["queued", "inadmissible", "admitted", "starting", "running", "succeeded", "failed",
                        "cancelled", "preempted", "lost"]


class _Answer(BaseModel):
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


class TickTiming(_Answer):
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


class SchedulerStats(_Answer):
    """The scheduling loop's ticks, wake-ups and recent tick timings."""

    interval_s: float = Field(description="Seconds between ticks when nothing changes.")
    ticks: int = Field(description="Ticks run since the server started.")
    wakes: int = Field(description="Wake-ups asked for (submissions, releases); coalesced into ticks.")
    p50_s: float | None
    max_s: float | None
    recent: list[TickTiming] = Field(description="The last ticks, oldest first.")


class Version(_Answer):
    """``GET /version``."""

    version: str
    api: str
    mode: Literal["single-server", "hub"]
    backend: str
    schema_version: int
    database: str
    scheduler: SchedulerStats | None = Field(default=None, description="Platform admins only.")


class Template(_Answer):
    """A task template of the catalog, and whether it runs as a kernel."""

    name: str
    task_type: TaskType
    display: Localized
    description: Localized
    kinds: list[WorkloadKind]
    request: ResourceRequest
    flavors: list[str] = Field(description="Eligible flavors in order of preference.")
    variants: list[RuntimeVariant]
    metrics: list[str]
    queue: str
    parameters: list[AdvancedParameter]
    labels: list[LabelRequirement]
    interconnect: list[Interconnect]
    frameworks: list[str]
    time_limit_s: int | None
    typical_runtime_s: int
    idle_timeout_s: int | None
    interactive: bool


class QuotaUse(_Answer):
    """A tenant's quota and use of one flavor."""

    flavor: str
    nominal: Resources
    borrowing_limit: Resources | None
    lending_limit: Resources | None
    used: Resources


class QueueStatus(_Answer):
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
    allowed: bool
    pending: int = Field(description="Workloads waiting in the queue: queued, preempted and inadmissible.")
    running: int
    wait_p50_s: float | None = Field(description="Over workloads admitted in the last day.")
    wait_p95_s: float | None
    admitted_last_day: int
    quota: list[QuotaUse]
    status_at: float = Field(description="Wall time of the scheduling cycle the counts, waits and use describe "
                                         "(each cycle sums them once; a submission or cancel wakes one).")


class MyTenant(_Answer):
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


class TenantSummary(_Answer):
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


class Allocation(_Answer):
    """What admitted work holds on a node."""

    cpu_milli: int
    memory_mib: int
    device_milli: int
    devices: list[dict[str, Any]]
    workloads: int


class NodeUtilisation(_Answer):
    """What a node uses now, measured by the backend."""

    cpu_pct: float
    memory_used_mib: float
    # Absent, not null, where NVML measures nothing.
    gpu_util_pct: float = Field(default=None, description="Mean over the node's GPUs, where NVML measures them.")
    gpu_memory_mib: float = Field(default=None, description="Device memory used on the node's GPUs.")


class NodeRecord(NodeCapability):
    """A node of the inventory as recorded: its capability, flavor and state."""

    # Aliased: the capability's own ``family`` is a property derived from its accelerator.
    family_: AcceleratorFamily = Field(alias="family")
    flavor: str | None
    state: Literal["admitted", "pending", "lost"]
    schedulable: bool
    first_seen: float
    last_seen: float


class Node(NodeRecord):
    """A node as ``GET /nodes`` lists it: the record, what admitted work holds and what it uses now."""

    allocated: Allocation
    utilisation: NodeUtilisation | None = Field(
        description="Null where it cannot be measured (emulated nodes).")


class Blocker(_Answer):
    """One reason a workload cannot start yet, already in the asked language."""

    kind: str
    flavor: str | None
    message: str
    params: dict[str, Any]


class DeviceShare(_Answer):
    index: int
    milli: int | None = None
    memory_mib: int | None = None


class Slot(_Answer):
    """One replica's node and devices."""

    node: str
    devices: list[DeviceShare]


class Placement(_Answer):
    """Where a workload runs: a flavor and, per replica, a node and device indexes."""

    flavor: str
    on_reservation: bool
    borrowing: bool
    slots: list[Slot]


class Attempt(_Answer):
    """One run of a workload."""

    number: int
    node: str | None
    started_at: float | None
    ended_at: float | None
    exit_code: int | None
    outcome: str | None
    reason: str | None
    metrics: dict[str, Any]
    archive: str | None = Field(description="Where the attempt's outputs were archived.")
    placement: Placement | None = Field(description="Where this attempt ran; kept after the workload finished.")


class WorkloadRequest(_Answer):
    """The resolved request of a workload: resources, eligible flavors and the parameters given."""

    request: ResourceRequest
    flavors: list[str]
    variant_families: list[AcceleratorFamily]
    time_limit_s: int | None
    parameters: dict[str, Any]


class Workload(_Answer):
    """A submitted kernel, job or service; one workload's answer adds attempts, position, ETA and blockers."""

    id: int
    kind: WorkloadKind
    name: str | None
    tenant: str
    user: str
    template: str
    queue: str
    state: WorkloadState = Field(description=(
        "inadmissible: waiting, but no node of the inventory could ever hold it (every eligible flavor fails "
        "statically). It counts as pending, can be cancelled and shows its blockers; it goes back to queued "
        "(event requeued) when the inventory changes so that a node can hold it."))
    reason: str | None = Field(description="Why it is in its state, in English.")
    request: WorkloadRequest
    spec: dict[str, Any] = Field(description="The payload: a command, script, code, notebook or kernel.")
    placement: Placement | None
    flavor: str | None
    node: str | None
    attempt_count: int = Field(description="Attempts started so far, whatever ended them.")
    failures: int = Field(description="Attempts that failed by the job's own doing; only these use up retries.")
    preemptions: int = Field(description="Attempts ended by a preemption; they never use up retries.")
    node_losses: int = Field(description="Attempts ended because their node was lost; they never use up retries.")
    created_at: float
    updated_at: float
    admitted_at: float | None
    started_at: float | None
    finished_at: float | None
    time_limit_s: float | None
    priority_boost: int
    escalated: bool
    stopping: Literal["cancel", "preempt", "time-limit", "node-lost", "replica-failed"] | None = Field(
        description="Why a running workload is being stopped; a cancel replaces any other.")
    not_before: float | None = Field(description="A retry waits for its backoff until then.")
    active: bool
    attempts: list[Attempt] = Field(default=None, description="One workload's answer only.")
    position: int | None = Field(default=None, description="Place among the waiting workloads of its queue.")
    eta: float | None = None
    eta_because: int | None = None
    blockers: list[Blocker] = Field(default=None, description="Why it waits, ranked; one workload's answer only.")


class Event(_Answer):
    """One transition of a workload."""

    id: int
    at: float
    type: str
    reason: str | None
    data: dict[str, Any]


class Explanation(_Answer):
    """``GET /workloads/{id}/explain``: why it waits, in plain numbered lines, or what it is doing."""

    id: int
    state: WorkloadState
    summary: str
    lines: list[str]
    position: int | None
    eta: float | None
    eta_because: int | None
    blockers: list[Blocker]
    placement: Placement | None


class FlavorPreview(_Answer):
    """One eligible flavor of a preview."""

    flavor: str
    display: Localized
    family: AcceleratorFamily
    image: str | None = Field(description="The template's runtime image on this flavor's accelerators.")
    devices_total: float
    devices_free: float
    cpu_free: float
    starts_now: bool
    flavor_now: str | None
    eta: float | None
    eta_s: float | None
    position: int | None = None
    blockers: list[str]
    schedulable: bool = Field(default=None, description="Whether it could ever run there; absent when it starts now.")
    victims: list[int]


class Preview(_Answer):
    """``POST /previews``: what would happen to a submission, per eligible flavor."""

    template: str
    queue: str
    request: ResourceRequest
    time_limit_s: int | None
    starts_now: bool
    flavor_now: str | None
    eta: float | None
    eta_s: float | None
    position: int | None = None
    blockers: list[str]
    schedulable: bool = Field(default=None, description="Whether it could ever run; absent when it starts now.")
    victims: list[int]
    flavors: list[FlavorPreview]


class Victim(_Answer):
    id: int
    reason: str
    grace_deadline: float | None


class PreemptionDryRun(_Answer):
    """What a waiting workload would evict to start now."""

    dry_run: Literal[True]
    would_admit: bool
    victims: list[Victim]
    blockers: list[str]


class Preemption(_Answer):
    """An eviction under way."""

    id: int
    stopping: str | None
    grace_deadline: float | None


class PreemptOutcome(RootModel[PreemptionDryRun | Preemption]):
    """``POST /workloads/{id}/preempt``: the eviction, or with ``dry_run`` what it would evict."""


class StartedKernel(_Answer):
    """``POST /kernels``: the kernel runs; attach a session to ``kernel_id``."""

    kernel_id: str
    workload_id: int | None
    placement: Placement | None


class KernelUsage(_Answer):
    """CPU, memory and, where measurable, device use of exactly one kernel's devices."""

    kernel_id: str
    workload_id: int
    pid: int | None
    cpu_percent: float
    memory_mib: float
    node: str
    flavor: str
    devices: list[int]
    emulated: bool
    queue: str
    tenant: str
    execution_state: str | None
    idle: bool | None
    template: str
    device_utilisation: dict[str, float] | None
    device_note: str | None
