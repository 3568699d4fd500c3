"""Templates: a task type's default request, eligible flavors, runtime variants and bounded parameters."""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import Field, model_validator

from ..capability import AcceleratorFamily, Interconnect
from ..engine.model import WorkloadKind
from ..units import CpuMilli, DurationS, MemoryMiB, friendly_quantities, parse_duration_s, parse_memory_mib
from .base import CatalogModel, Localized, PackageRequirement
from .flavors import LabelRequirement

__all__ = [
    "AdvancedParameter",
    "CanaryPolicy",
    "MetricTarget",
    "NetworkRequirement",
    "ResourceRequest",
    "RuntimeVariant",
    "TaskType",
    "Template",
    "WorkloadKind",
]


class ResourceRequest(CatalogModel):
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


class RuntimeVariant(CatalogModel):
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
    python: str | None = Field(
        default=None, pattern=r"^/", description="The interpreter of this variant's environment on the local backend "
        "(an absolute path, e.g. /opt/envs/torch/bin/python): onboarding imports the frameworks with it. None: the "
        "server's own environment stands in, and the onboarding check says so.")


class AdvancedParameter(CatalogModel):
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


class NetworkRequirement(CatalogModel):
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


class MetricTarget(CatalogModel):
    """A metric a rollout judges a canary by: a bound of its own (``max``) and/or against the stable revision
    (``max_ratio`` of stable's value, ``max_increase`` over it); a ratio is missed only past ``tolerance``."""

    name: Literal["error_rate", "request_latency_p50", "request_latency_p95", "request_latency_p99"]
    max: float | None = Field(default=None, ge=0, description="error_rate as a share; latencies in ms.")
    max_ratio: float | None = Field(default=None, gt=0)
    max_increase: float | None = Field(default=None, ge=0)
    tolerance: float = Field(default=0, ge=0, description="A canary within this of stable (ms for latencies) never "
                                                          "misses max_ratio: at a few ms, ratios are noise.")


class CanaryPolicy(CatalogModel):
    """How a service's new revision is tried: replicas, share of traffic, and the window it is judged over."""

    replicas: int = Field(default=1, ge=1, le=8)
    traffic: float = Field(default=0.2, gt=0, lt=1, description="Share of requests the canary answers.")
    window_s: DurationS = Field(default=60, ge=1, description="Judged this long after its first ready replica.")
    min_requests: int = Field(default=20, ge=1, description="Canary requests needed in the window to judge.")


class Template(CatalogModel):
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
