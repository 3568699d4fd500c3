"""What the REST API answers about workloads and kernels, as pydantic models (see ``responses.py``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, RootModel

from ..capability import AcceleratorFamily
from ..catalog.models import Localized, ResourceRequest, WorkloadKind
from .responses import Answer

__all__ = [
    "ArrayTask",
    "Attempt",
    "Blocker",
    "Event",
    "Explanation",
    "FlavorPreview",
    "KernelPod",
    "KernelStop",
    "KernelStops",
    "KernelUsage",
    "Placement",
    "PreemptOutcome",
    "PreviewOutcome",
    "Preemption",
    "PreemptionDryRun",
    "Preview",
    "Started",
    "StartedKernel",
    "WaitingKernel",
    "Workload",
]

WorkloadState = Literal["queued", "inadmissible", "admitted", "starting", "running", "succeeded", "failed",
                        "cancelled", "preempted", "lost"]


class Blocker(Answer):
    """One reason a workload cannot start yet, already in the asked language."""

    kind: str
    flavor: str | None
    message: str
    params: dict[str, Any]


class DeviceShare(Answer):
    index: int
    milli: int | None = None
    memory_mib: int | None = None


class Slot(Answer):
    """One replica's node and devices."""

    node: str
    devices: list[DeviceShare]


class Placement(Answer):
    """Where a workload runs: a flavor and, per replica, a node and device indexes."""

    flavor: str
    on_reservation: bool
    borrowing: bool
    slots: list[Slot]


class Attempt(Answer):
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


class WorkloadRequest(Answer):
    """The resolved request of a workload: resources, eligible flavors and the parameters given."""

    request: ResourceRequest
    flavors: list[str]
    variant_families: list[AcceleratorFamily]
    time_limit_s: int | None
    parameters: dict[str, Any]


class ArrayTask(Answer):
    """A job's place in its array (``POST /workloads`` with ``array``): each task is a workload of its own."""

    id: int = Field(description="The array's id: its first task's workload id, as Slurm's array job id.")
    index: int = Field(description="This task's index; the job reads it as HETERO_ARRAY_INDEX.")
    size: int = Field(description="How many tasks the array has.")
    limit: int | None = Field(description="How many of its tasks may be admitted or run at once; null: no limit.")
    indices: str = Field(description="The indices as submitted, without the limit ('0-99:2').")


class Workload(Answer):
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
    node: str | None = Field(description="Where it runs now; cleared when it ends and its devices are given back.")
    last_node: str | None = Field(default=None, description=(
        "The node of its latest attempt, kept after it ended (as sacct keeps it); null before it ever started."))
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
    schedule: int | None = Field(default=None, description="The schedule that submitted it, when one did.")
    active: bool
    array: ArrayTask | None = Field(default=None, description="Its array, when it is one of an array's tasks.")
    attempts: list[Attempt] = Field(default=None, description="One workload's answer only.")
    position: int | None = Field(default=None, description="Place among the waiting workloads of its queue.")
    eta: float | None = None
    eta_because: int | None = None
    blockers: list[Blocker] = Field(default=None, description="Why it waits, ranked; one workload's answer only.")
    held_by: Literal["kueue"] | None = Field(default=None, description=(
        "Launched, but held by the cluster's own admission before it runs (with KubernetesConfig.admission kueue: "
        "Kueue, until it admits the pod's Workload); position is then Kueue's, in its LocalQueue, blockers are "
        "Kueue's reasons, and eta is null: Kueue makes no estimate."))


class Event(Answer):
    """One transition of a workload, or one step of a service."""

    id: int
    at: float
    type: str
    reason: str | None
    data: dict[str, Any]


class Explanation(Answer):
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


class PreviewOutcome(Answer):
    """What a dry run says would happen to a submission (on one flavor, or on the best one)."""

    starts_now: bool
    flavor_now: str | None
    eta: float | None
    eta_s: float | None
    position: int | None = None
    blockers: list[str]
    schedulable: bool = Field(default=None, description="Whether it could ever run (there); absent when it starts now.")
    victims: list[int]


class FlavorPreview(PreviewOutcome):
    """One eligible flavor of a preview."""

    flavor: str
    display: Localized
    family: AcceleratorFamily
    image: str | None = Field(description="The template's runtime image on this flavor's accelerators.")
    devices_total: float
    devices_free: float
    cpu_free: float


class Preview(PreviewOutcome):
    """``POST /previews``: what would happen to a submission, per eligible flavor."""

    template: str
    queue: str
    request: ResourceRequest
    time_limit_s: int | None
    flavors: list[FlavorPreview]


class Victim(Answer):
    id: int
    reason: str
    grace_deadline: float | None


class PreemptionDryRun(Answer):
    """What a waiting workload would evict to start now."""

    dry_run: Literal[True]
    would_admit: bool
    victims: list[Victim]
    blockers: list[str]


class Preemption(Answer):
    """An eviction under way."""

    id: int
    stopping: str | None
    grace_deadline: float | None


class PreemptOutcome(RootModel[PreemptionDryRun | Preemption]):
    """``POST /workloads/{id}/preempt``: the eviction, or with ``dry_run`` what it would evict."""


class StartedKernel(Answer):
    """``POST /kernels``: the kernel runs; attach a session to ``kernel_id``."""

    kernel_id: str
    workload_id: int | None
    placement: Placement | None


class WaitingKernel(Answer):
    """``POST /kernels`` answered before the kernel runs: its workload, waiting in its queue; the kernel starts
    under ``kernel_id`` once placed (within ``wait_timeout``), or the workload ends cancelled with the reason."""

    kernel_id: str
    workload_id: int
    workload: Workload


class KernelPod(Answer):
    """A kernel's pod, Ready: the launching server connects to ``ip`` on the ports it chose."""

    key: str = Field(description="namespace/name")
    ip: str


class Started(Answer):
    """``POST /servers/{id}/started``, ``POST /kernels/placements/{id}/started``: the workload, and the variables
    its process must get."""

    workload: Workload
    environment: dict[str, str] = Field(description="Placement and, on the scheduler's machine, device visibility "
                                                    "(CUDA_VISIBLE_DEVICES, ASCEND_RT_VISIBLE_DEVICES...); a kernel's "
                                                    "also its workload credential for this server. Empty for a kernel "
                                                    "in a pod, which has its environment there.")
    pod: KernelPod | None = Field(default=None, description="Where the hub service runs kernels in pods: the kernel's.")


class KernelStop(Answer):
    """One kernel its server must shut down, and why."""

    workload_id: int
    reason: str


class KernelStops(Answer):
    """``POST /activity``: the reported kernels to shut down (culled, preempted, cancelled, lost)."""

    stop: list[KernelStop]


class KernelUsage(Answer):
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
