"""The catalog: flavors, templates, queues and tenants, declared once by the platform team.

Everything a user can request and everything the scheduler enforces comes from here. Models
are strict (unknown keys are errors) so a typo in a catalog file is reported, not ignored.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from ..capability import AcceleratorFamily, Interconnect, NodeCapability
from ..packages import parse_requirement
from ..units import CpuMilli, DurationS, MemoryMiB, friendly_quantities, parse_duration_s, parse_memory_mib

__all__ = [
    "AdvancedParameter",
    "AlertRule",
    "CanaryPolicy",
    "Catalog",
    "Escalation",
    "EscalationAction",
    "FailurePolicy",
    "Flavor",
    "FlavorQuota",
    "FlavorSelector",
    "LabelRequirement",
    "ModelEntry",
    "NetworkRequirement",
    "Onboarding",
    "Localized",
    "MetricTarget",
    "PreemptionPolicy",
    "Queue",
    "QueueClass",
    "ResourceRequest",
    "Resources",
    "Role",
    "RuntimeVariant",
    "TaskType",
    "Template",
    "Tenant",
    "WorkloadKind",
]


class _Model(BaseModel):
    # Frozen: a loaded catalog is shared by every request and by the engine. A dump writes every field,
    # so the API's schema of an answer embedding one marks them all required.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True,
                              json_schema_serialization_defaults_required=True)


class Localized(_Model):
    """A text shown to users, in English and Simplified Chinese."""

    en: str = Field(min_length=1)
    zh: str = Field(min_length=1)

    def text(self, language: str = "en") -> str:
        return self.zh if language.lower().startswith("zh") else self.en


def _requirement(text: str) -> str:
    parse_requirement(text)
    return text


# A framework or inference engine and, optionally, a version range: "torch", "torch>=2.3", "vllm>=0.6,<0.7".
PackageRequirement = Annotated[str, AfterValidator(_requirement)]


class LabelRequirement(_Model):
    """A Kubernetes-style match expression over node labels."""

    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        if self.operator in ("Gt", "Lt"):
            if len(self.values) != 1:
                raise ValueError(f"operator {self.operator} needs exactly one value")
            try:
                float(self.values[0])
            except ValueError:
                raise ValueError(f"operator {self.operator} needs a number, not {self.values[0]!r}") from None
        return self

    def matches(self, labels: dict[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "Exists":
            return value is not None
        if self.operator == "DoesNotExist":
            return value is None
        if self.operator == "In":
            return value in self.values
        if self.operator == "NotIn":
            return value not in self.values
        try:
            number = float(value) if value is not None else None
        except ValueError:
            return False
        if number is None:
            return False
        bound = float(self.values[0])
        return number > bound if self.operator == "Gt" else number < bound


class FlavorSelector(_Model):
    """Predicates over a capability record; a node belongs to the first flavor it satisfies."""

    family: AcceleratorFamily = AcceleratorFamily.CPU
    models: list[str] = Field(
        default_factory=list, description="Accepted accelerator models (case-insensitive prefixes)."
    )
    min_device_memory_mib: MemoryMiB | None = None
    max_device_memory_mib: MemoryMiB | None = None
    arch: list[str] = Field(default_factory=list)
    labels: list[LabelRequirement] = Field(default_factory=list)

    def matches(self, node: NodeCapability) -> bool:
        if node.family != self.family:
            return False
        if self.arch and node.arch not in self.arch:
            return False
        accelerator = node.accelerator
        if accelerator is not None:
            model = accelerator.model.lower()
            if self.models and not any(model.startswith(m.lower()) for m in self.models):
                return False
            if self.min_device_memory_mib is not None and accelerator.memory_mib < self.min_device_memory_mib:
                return False
            if self.max_device_memory_mib is not None and accelerator.memory_mib > self.max_device_memory_mib:
                return False
        return all(requirement.matches(node.labels) for requirement in self.labels)


class Flavor(_Model):
    """A named class of identical capacity; quotas, reservations and prices are per flavor."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    display: Localized
    selector: FlavorSelector
    price_per_hour: float = Field(
        default=0, ge=0, description="Cost of one device-hour (one core-hour for CPU flavors)."
    )
    accelerator_weight: float = Field(
        default=1.0, ge=0, description="Normalised accelerator-hours one device-hour of this flavor counts as (an "
        "A100 80GB is 1); how usage of different chips is added up."
    )

    @property
    def family(self) -> AcceleratorFamily:
        return self.selector.family


class Resources(_Model):
    """An amount of capacity: CPU, memory and accelerator devices (in milli-devices)."""

    cpu_milli: CpuMilli = Field(default=0, ge=0)
    memory_mib: MemoryMiB = Field(default=0, ge=0)
    device_milli: int = Field(default=0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _devices_shorthand(cls, data):
        # `cpu: 8` and `devices: 2` read better in a catalog than `cpu_milli: 8000`, `device_milli: 2000`.
        data = friendly_quantities(data)
        if isinstance(data, dict) and "devices" in data:
            data = dict(data)
            devices = data.pop("devices")
            if "device_milli" in data:
                raise ValueError("give either devices or device_milli, not both")
            if isinstance(devices, bool) or not isinstance(devices, (int, float)) or devices < 0:
                raise ValueError("devices must be a non-negative number")
            data["device_milli"] = int(round(devices * 1000))
        return data


class ResourceRequest(_Model):
    """What one replica of a workload asks for."""

    cpu_milli: CpuMilli = Field(default=1000, ge=1)
    memory_mib: MemoryMiB = Field(default=2048, ge=1)
    devices: int = Field(default=0, ge=0, le=64, description="Whole accelerator devices.")
    device_milli: int | None = Field(
        default=None, ge=1, le=999, description="A fraction of one device, in thousandths (fractional GPU)."
    )
    device_memory_mib: MemoryMiB | None = Field(
        default=None, description="Minimum device memory per device (whole) or memory slice (fractional)."
    )
    replicas: int = Field(default=1, ge=1, le=1024, description="Gang size: all replicas start or none.")
    placement: Literal["any", "same-node", "same-interconnect"] = "any"

    _quantities = model_validator(mode="before")(friendly_quantities)

    @model_validator(mode="after")
    def _whole_or_fraction(self) -> ResourceRequest:
        if self.device_milli is not None and self.devices:
            raise ValueError("ask for whole devices or a device fraction (device_milli), not both")
        return self

    @property
    def uses_devices(self) -> bool:
        return bool(self.devices or self.device_milli)

    @property
    def device_milli_total(self) -> int:
        """Device capacity per replica, in milli-devices."""
        return self.devices * 1000 if self.devices else (self.device_milli or 0)


class RuntimeVariant(_Model):
    """How a template runs on one accelerator family: image, env, minimum driver, runtime and firmware, and
    what the node must provide for it."""

    family: AcceleratorFamily
    image: str = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    min_driver: str | None = None
    min_runtime: str | None = Field(default=None, description="The family's runtime: CUDA, CANN, ROCm, level-zero ...")
    min_firmware: str | None = None
    frameworks: list[str] = Field(default_factory=list, description="What the image brings (onboarding imports "
                                                                    "them); not asked of the node.")
    requires: list[PackageRequirement] = Field(
        default_factory=list, description="Frameworks or inference engines the node must provide on this family, "
        "e.g. 'torch_npu>=2.1' with min_runtime '8.0' (CANN 8)."
    )


class AdvancedParameter(_Model):
    """One bounded knob a user may turn on top of a template's default request."""

    name: Literal["devices", "device_milli", "device_memory", "cpu", "memory", "time_limit", "variant", "flavor", "replicas"]
    type: Literal["int", "float", "memory", "duration", "choice"]
    default: int | float | str | None = None
    min: float | None = None
    max: float | None = None
    choices: list[str] = Field(default_factory=list)
    description: Localized | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalise_quantities(cls, data):
        # Memory and durations are written as "64Gi" and "2h" in catalogs; bounds compare numbers.
        parse = {"memory": parse_memory_mib, "duration": parse_duration_s}.get(
            data.get("type") if isinstance(data, dict) else None
        )
        if parse is None:
            return data
        data = dict(data)
        for key in ("default", "min", "max"):
            if data.get(key) is not None:
                data[key] = parse(data[key])
        return data

    @model_validator(mode="after")
    def _bounds(self) -> AdvancedParameter:
        if self.type == "choice" and not self.choices:
            raise ValueError("a choice parameter needs choices")
        if self.type != "choice" and (self.min is None or self.max is None):
            raise ValueError(f"a {self.type} parameter needs min and max")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


class NetworkRequirement(_Model):
    """What a template needs of a node's network."""

    rdma: bool = False
    min_bandwidth_gbps: float = Field(default=0, ge=0)


class TaskType(str, Enum):
    DATA_PREPROCESSING = "data-preprocessing"
    TRAINING = "training"
    FINE_TUNING = "fine-tuning"
    ONLINE_INFERENCE = "online-inference"
    BATCH_INFERENCE = "batch-inference"
    EMBEDDING = "embedding"
    VISION = "vision"
    HPC = "hpc"
    INTERACTIVE = "interactive"


class WorkloadKind(str, Enum):
    KERNEL = "kernel"
    JOB = "job"
    SERVICE = "service"
    SERVER = "server"  # a hub user's single-user server, started by its spawner once placed


class MetricTarget(_Model):
    """A metric a rollout judges a canary by: a bound of its own (``max``) and/or against the stable revision
    (``max_ratio`` of stable's value, ``max_increase`` over it); a ratio is missed only past ``tolerance``."""

    name: Literal["error_rate", "request_latency_p50", "request_latency_p95", "request_latency_p99"]
    max: float | None = Field(default=None, ge=0, description="error_rate as a share; latencies in ms.")
    max_ratio: float | None = Field(default=None, gt=0)
    max_increase: float | None = Field(default=None, ge=0)
    tolerance: float = Field(default=0, ge=0, description="A canary within this of stable (ms for latencies) never "
                                                          "misses max_ratio: at a few ms, ratios are noise.")


class CanaryPolicy(_Model):
    """How a service's new revision is tried: replicas, share of traffic, and the window it is judged over."""

    replicas: int = Field(default=1, ge=1, le=8)
    traffic: float = Field(default=0.2, gt=0, lt=1, description="Share of requests the canary answers.")
    window_s: DurationS = Field(default=60, ge=1, description="Judged this long after its first ready replica.")
    min_requests: int = Field(default=20, ge=1, description="Canary requests needed in the window to judge.")


class Template(_Model):
    """A task type's default request, eligible flavors, runtime variants and bounded parameters."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    task_type: TaskType
    display: Localized
    description: Localized
    kinds: list[WorkloadKind] = Field(min_length=1)
    request: ResourceRequest
    flavors: list[str] = Field(min_length=1, description="Eligible flavors in order of preference.")
    variants: list[RuntimeVariant] = Field(min_length=1)
    metrics: list[str | MetricTarget] = Field(default_factory=list, description="What is measured; a target "
                                                                                "also judges a service's canary.")
    canary: CanaryPolicy = Field(default_factory=CanaryPolicy, description="How a service's new revision is tried.")
    queue: str
    parameters: list[AdvancedParameter] = Field(default_factory=list)
    labels: list[LabelRequirement] = Field(default_factory=list, description="Extra node label constraints.")
    interconnect: list[Interconnect] = Field(
        default_factory=list, description="Accepted interconnects for multi-device work; without pcie, the devices "
        "of one replica must also share one fast-link domain.")
    frameworks: list[PackageRequirement] = Field(default_factory=list, description="Frameworks the node must provide, "
                                                                                   "e.g. 'torch>=2.3'.")
    inference_engines: list[PackageRequirement] = Field(
        default_factory=list, description="Inference engines the node must provide, e.g. 'vllm>=0.6'.")
    network: NetworkRequirement = Field(default_factory=NetworkRequirement)
    time_limit_s: DurationS | None = Field(default=None, ge=1)
    typical_runtime_s: DurationS = Field(default=3600, ge=1, description="Expected run time when none is declared.")
    idle_timeout_s: DurationS | None = Field(default=None, ge=1, description="Kernels idle this long are culled.")

    @property
    def targets(self) -> list[MetricTarget]:
        """The metrics a canary is judged by; a template that names none judges by error rate and p95 latency."""
        found = [metric for metric in self.metrics if isinstance(metric, MetricTarget)]
        return found or [MetricTarget(name="error_rate", max_increase=0.05),
                         MetricTarget(name="request_latency_p95", max_ratio=2.0)]

    def variant_for(self, family: AcceleratorFamily) -> RuntimeVariant | None:
        return next((v for v in self.variants if v.family == family), None)

    def parameter(self, name: str) -> AdvancedParameter | None:
        return next((p for p in self.parameters if p.name == name), None)

    @property
    def interactive(self) -> bool:
        return WorkloadKind.KERNEL in self.kinds

    def runs(self, kind: WorkloadKind) -> bool:
        """Whether the template runs ``kind``: interactive templates run users' servers as well as kernels."""
        return kind in self.kinds or (kind == WorkloadKind.SERVER and self.interactive)


class QueueClass(str, Enum):
    EXPERIMENT = "experiment"
    TRAINING = "training"
    INFERENCE = "inference"
    URGENT = "urgent"
    BATCH = "batch"


class EscalationAction(str, Enum):
    RAISE_PRIORITY = "raise-priority"
    ALLOW_BORROWING = "allow-borrowing"
    ALLOW_PREEMPTION = "allow-preemption"
    NOTIFY = "notify"


class Escalation(_Model):
    """What happens to a workload that waited longer than its queue's ``max_wait_s``."""

    action: EscalationAction
    priority_boost: int = Field(default=0, ge=0)


class PreemptionPolicy(_Model):
    """Whom this queue's workloads may evict, and how they may be evicted themselves."""

    may_preempt: list[str] = Field(default_factory=list, description="Queues whose workloads this queue may evict.")
    preemptible: bool = False
    idle_kernels_only: bool = Field(default=False, description="Kernels of this queue are evicted only when idle.")
    grace_s: int = Field(default=30, ge=0)


class FailurePolicy(_Model):
    """Retries with backoff, requeue on node loss and resume from checkpoint."""

    retries: int = Field(default=0, ge=0, le=100)
    backoff_s: float = Field(default=10, ge=0)
    backoff_factor: float = Field(default=2, ge=1)
    requeue_on_node_loss: bool = True
    resume_from_checkpoint: bool = False


class Queue(_Model):
    """A class of service with a priority, a wait bound and preemption and failure rules."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    queue_class: QueueClass = Field(alias="class")
    display: Localized
    description: Localized
    priority: int
    max_wait_s: DurationS = Field(ge=1)
    escalation: Escalation
    preemption: PreemptionPolicy = Field(default_factory=PreemptionPolicy)
    failure: FailurePolicy = Field(default_factory=FailurePolicy)
    borrowing: bool = Field(
        default=True, description="Whether workloads may borrow unused quota of other tenants in the cohort."
    )
    reserved: dict[str, int] = Field(
        default_factory=dict, description="Devices per flavor that other queues may only borrow preemptibly."
    )
    lend_reserved: bool = Field(
        default=True, description="Whether other queues may borrow its reserved devices while they are idle (and "
        "give them back by preemption); false keeps them free for this queue alone."
    )
    priority_class: str | None = Field(
        default=None, description="Kubernetes PriorityClass of this queue's pods (Kubernetes backend)."
    )
    kueue_queue: str | None = Field(
        default=None,
        description="Kueue LocalQueue that must also admit this queue's pods (label kueue.x-k8s.io/queue-name); "
        "None: this scheduler alone admits them.",
    )


class FlavorQuota(_Model):
    """A tenant's share of one flavor, with Kueue's borrowing and lending limits."""

    nominal: Resources
    borrowing_limit: Resources | None = Field(default=None, description="None means unlimited borrowing.")
    lending_limit: Resources | None = Field(default=None, description="None means all unused quota may be lent.")


class Role(str, Enum):
    MEMBER = "member"
    TENANT_ADMIN = "tenant-admin"
    PLATFORM_ADMIN = "platform-admin"


class Tenant(_Model):
    """A team: members, quota per flavor, allowed queues and templates, cost centre."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    display: Localized
    users: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    admins: list[str] = Field(default_factory=list, description="Users with the tenant-admin role.")
    quotas: dict[str, FlavorQuota] = Field(default_factory=dict)
    queues: list[str] = Field(default_factory=lambda: ["*"])
    templates: list[str] = Field(default_factory=lambda: ["*"])
    cohort: str = "default"
    weight: float = Field(default=1, gt=0, description="Fair-share weight inside a queue.")
    cost_centre: str | None = None

    def allows_queue(self, queue: str) -> bool:
        return "*" in self.queues or queue in self.queues

    def allows_template(self, template: str) -> bool:
        return "*" in self.templates or template in self.templates


class Onboarding(_Model):
    """How new nodes join: with ``nodes: required`` a node takes no work until it passed its checklist (capability
    recorded, driver at or above ``min_driver`` of its family, a sample job and a failing one run on it, its
    metrics visible); emulated nodes are admitted at once when ``pre_admit_emulated``."""

    nodes: Literal["off", "required"] = "off"
    pre_admit_emulated: bool = True
    min_driver: dict[str, str] = Field(default_factory=dict, description="Per accelerator family: nvidia, ascend, "
                                                                         "amd ...")
    sample_timeout_s: DurationS = Field(default=300, ge=1)


class ModelEntry(_Model):
    """A model the platform serves, onboarded by running it on a node its template matches: its outputs for the
    reference ``inputs`` within ``tolerance`` of ``expected``, its p95 latency and peak memory within bounds."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    template: str = "online-inference"
    code: str = Field(min_length=1, description="Python source defining predict(inputs) -> outputs.")
    inputs: list[Any] = Field(min_length=1, description="Reference inputs, one call each.")
    expected: list[Any] = Field(min_length=1, description="The reference outputs, one per input.")
    tolerance: float = Field(default=1e-6, ge=0, description="Largest absolute difference allowed, number by number.")
    max_latency_ms: float = Field(default=1000, gt=0, description="Bound of the p95 latency of one call.")
    max_memory_mib: float = Field(default=4096, gt=0, description="Bound of the process's peak resident memory.")
    repeats: int = Field(default=20, ge=1, le=10_000, description="Calls per input, for the latency.")

    @model_validator(mode="after")
    def _pairs(self) -> ModelEntry:
        if len(self.inputs) != len(self.expected):
            raise ValueError("inputs and expected must have as many entries")
        return self


AlertKind = Literal["queue-wait", "node-lost", "failure-rate", "quota-nearly-exhausted", "device-memory-near-limit",
                    "onboarding-failed"]


class AlertRule(_Model):
    """What the server watches for, each evaluation; every subject it finds fires one alert until it resolves.

    ``queue-wait``: a queue's longest-waiting workload past the queue's ``max_wait``; ``node-lost``: a node lost
    or not ready; ``failure-rate``: a queue's failed share of the attempts ended in ``window_s`` over
    ``threshold`` (with at least ``min_attempts``); ``quota-nearly-exhausted``: a tenant's devices in use at
    ``threshold`` of its quota of a flavor; ``device-memory-near-limit``: a running replica's device memory at
    ``threshold`` of its devices' (where measured); ``onboarding-failed``: a node, chip, framework, model or
    tenant rejected by its onboarding checklist."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    kind: AlertKind
    severity: Literal["info", "warning", "critical"] = "warning"
    threshold: float | None = Field(default=None, gt=0, description="A share (0..1) for the kinds that have one.")
    window_s: DurationS = Field(default=3600, ge=1)
    min_attempts: int = Field(default=5, ge=1)
    queues: list[str] = Field(default_factory=list, description="Only these queues (every queue when empty).")


DEFAULT_ALERTS = [
    AlertRule(name="queue-wait", kind="queue-wait"),
    AlertRule(name="node-lost", kind="node-lost", severity="critical"),
    AlertRule(name="failure-rate", kind="failure-rate", threshold=0.25),
    AlertRule(name="quota-nearly-exhausted", kind="quota-nearly-exhausted", threshold=0.9, severity="info"),
    AlertRule(name="device-memory-near-limit", kind="device-memory-near-limit", threshold=0.9),
    AlertRule(name="onboarding-failed", kind="onboarding-failed"),
]


class Catalog(_Model):
    """The whole catalog; cross-references are checked by :func:`jupyter_hetero.catalog.validate`."""

    version: Literal[1] = 1
    flavors: list[Flavor] = Field(min_length=1)
    templates: list[Template] = Field(min_length=1)
    queues: list[Queue] = Field(min_length=1)
    tenants: list[Tenant] = Field(min_length=1)
    platform_admins: list[str] = Field(default_factory=list)
    onboarding: Onboarding = Field(default_factory=Onboarding)
    models: list[ModelEntry] = Field(default_factory=list, description="Models onboarded against a reference.")
    alerts: list[AlertRule] = Field(default_factory=lambda: list(DEFAULT_ALERTS),
                                    description="What the server alerts on; a catalog that names none gets these.")
    platform_admin_groups: list[str] = Field(default_factory=list)
    default_tenant: str | None = Field(
        default=None,
        description="Tenant of the server's owner when no tenant names them (the single-user default); other users "
        "whom no tenant names belong to none.",
    )
    _by_name: dict[str, dict] = PrivateAttr(default_factory=dict)

    def flavor(self, name: str) -> Flavor | None:
        return self._index("flavors").get(name)

    def template(self, name: str) -> Template | None:
        return self._index("templates").get(name)

    def queue(self, name: str) -> Queue | None:
        return self._index("queues").get(name)

    def tenant(self, name: str) -> Tenant | None:
        return self._index("tenants").get(name)

    def flavor_of(self, node: NodeCapability) -> Flavor | None:
        """The first flavor, in catalog order, whose selector the node satisfies."""
        return next((flavor for flavor in self.flavors if flavor.selector.matches(node)), None)

    def _index(self, field: str) -> dict:
        if field not in self._by_name:
            self._by_name[field] = {item.name: item for item in getattr(self, field)}
        return self._by_name[field]
