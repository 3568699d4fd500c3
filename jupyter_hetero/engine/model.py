"""The engine's view of the world: plain, slotted dataclasses built once per cycle.

Nothing here does I/O. The platform translates catalog and store rows into these types; the engine
never sees pydantic models or database rows, which keeps a cycle fast and replayable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = [
    "Constraints",
    "Device",
    "NodeState",
    "Placement",
    "QueuePolicy",
    "Request",
    "Res",
    "Slot",
    "Snapshot",
    "TenantQuota",
    "VariantNeed",
    "Workload",
    "WorkloadKind",
]


@dataclass(frozen=True, slots=True)
class Res:
    """A resource vector: CPU milli-cores, memory MiB, device milli (1000 = one whole device)."""

    cpu: int = 0
    mem: int = 0
    dev: int = 0

    def __add__(self, other: Res) -> Res:
        return Res(self.cpu + other.cpu, self.mem + other.mem, self.dev + other.dev)

    def __sub__(self, other: Res) -> Res:
        return Res(self.cpu - other.cpu, self.mem - other.mem, self.dev - other.dev)

    def scale(self, n: int) -> Res:
        return Res(self.cpu * n, self.mem * n, self.dev * n)

    def fits_in(self, limit: Res) -> bool:
        return self.cpu <= limit.cpu and self.mem <= limit.mem and self.dev <= limit.dev

    def exceeded(self, limit: Res) -> list[str]:
        """Names of the resources where this vector is above ``limit``."""
        return [name for name, mine, cap in zip(("cpu", "memory", "devices"), self, limit) if mine > cap]

    def __iter__(self):
        return iter((self.cpu, self.mem, self.dev))


ZERO = Res()
UNLIMITED = Res(1 << 60, 1 << 60, 1 << 60)


# The one definition: the catalog's templates and the API name these kinds too.
class WorkloadKind(str, Enum):
    KERNEL = "kernel"
    JOB = "job"
    SERVICE = "service"
    # A hub user's single-user server, started by its spawner once placed: interactive, like a kernel, but never
    # idle here.
    SERVER = "server"


@dataclass(frozen=True, slots=True)
class Request:
    """What one replica needs; ``devices`` whole devices or a ``device_milli`` fraction of one."""

    cpu: int
    mem: int
    devices: int = 0
    device_milli: int = 0
    device_mem: int = 0
    replicas: int = 1
    placement: str = "any"  # any | same-node | same-interconnect
    # Derived once: requests are read millions of times per cycle on a large cluster.
    per_replica: Res = field(init=False, repr=False, compare=False)
    total: Res = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        per_replica = Res(self.cpu, self.mem, self.devices * 1000 + self.device_milli)
        object.__setattr__(self, "per_replica", per_replica)
        object.__setattr__(self, "total", per_replica.scale(self.replicas))

    @property
    def uses_devices(self) -> bool:
        return bool(self.devices or self.device_milli)

    @property
    def shape(self) -> tuple:
        """Workloads with equal shapes fit exactly the same places; used to memoise within a cycle."""
        return (self.cpu, self.mem, self.devices, self.device_milli, self.device_mem, self.replicas, self.placement)


@dataclass(frozen=True, slots=True)
class VariantNeed:
    """What the template's variant for one accelerator family needs of a node: minimum driver, runtime and
    firmware, and requirement strings (``torch_npu>=2.1``) its frameworks or inference engines must satisfy."""

    family: str
    min_driver: str | None = None
    min_runtime: str | None = None
    frameworks: tuple[str, ...] = ()  # what the variant's image brings; not asked of the node
    min_firmware: str | None = None
    requires: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Constraints:
    """Node constraints of a workload beyond raw capacity; equal constraints share match results."""

    labels: tuple = ()  # of matching.LabelReq
    frameworks: tuple[str, ...] = ()  # requirement strings: "torch", "torch>=2.3"
    interconnect: tuple[str, ...] = ()
    variants: tuple[VariantNeed, ...] = ()
    inference_engines: tuple[str, ...] = ()  # requirement strings: "vllm>=0.6"
    rdma: bool = False
    min_bandwidth_gbps: float = 0
    # Constraints key several per-cycle caches; hashing nested tuples on every lookup adds up.
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.labels, self.frameworks, self.interconnect, self.variants,
                                                self.inference_engines, self.rdma, self.min_bandwidth_gbps)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def fast_link(self) -> bool:
        """Whether the devices of one replica must share a fast link (the template accepts no PCIe)."""
        return bool(self.interconnect) and not ({"pcie", "none"} & set(self.interconnect))

    def variant(self, family: str) -> VariantNeed | None:
        return next((v for v in self.variants if v.family == family), None)


@dataclass(slots=True)
class Device:
    """Free capacity of one accelerator device, and where it sits on its node."""

    index: int
    free_milli: int = 1000
    free_mem: int = 0
    mem: int = 0
    link: int = -1  # its link domain on the node (NVLink island, HCCS mesh, xGMI hive); -1: none, a domain of its own
    numa: int = -1  # the NUMA node it is attached to; -1: unknown


@dataclass(slots=True)
class NodeState:
    """A node's static facts and its free capacity, updated in place as the cycle allocates."""

    name: str
    flavor: str
    cpu: int
    mem: int
    free_cpu: int
    free_mem: int
    devices: list[Device] = field(default_factory=list)
    family: str = "cpu"
    model: str = ""
    driver: str | None = None
    runtime: str | None = None
    interconnect: str = "none"
    frameworks: frozenset[str] = frozenset()  # as declared: "torch==2.4.1", "torch 2.4.1" or "torch"
    labels: dict[str, str] = field(default_factory=dict)
    domain: str = ""  # interconnect domain; gangs with placement=same-interconnect stay inside one
    schedulable: bool = True
    shares_devices: bool = True  # whether a replica may have a fraction of a device here (MPS, HAMi ...)
    inference_engines: frozenset[str] = frozenset()  # as declared, like frameworks
    firmware: str | None = None
    rdma: bool = False
    bandwidth_gbps: float = 0
    # The most devices that share one fast-link domain (NVLink island, HCCS ring, xGMI hive); None where the
    # node gives no per-device links, and then its interconnect links all its devices.
    largest_link_domain: int | None = None
    # Why a node that is not schedulable is not (onboarding, cordoned, lost), so a blocker can say which.
    readiness: str = "ready"

    def clone(self) -> NodeState:
        """A copy whose free capacity can change without touching this one (cheaper than deepcopy)."""
        copy = NodeState.__new__(NodeState)
        for name in self.__slots__:
            setattr(copy, name, getattr(self, name))
        copy.devices = [Device(d.index, d.free_milli, d.free_mem, d.mem, d.link, d.numa) for d in self.devices]
        return copy

    @property
    def whole_free(self) -> int:
        return sum(1 for d in self.devices if d.free_milli == 1000)

    @property
    def device_free_milli(self) -> int:
        return sum(d.free_milli for d in self.devices)


@dataclass(frozen=True, slots=True)
class Slot:
    """One replica's place: a node and, per device index, the milli it takes there."""

    node: str
    devices: tuple[tuple[int, int, int], ...] = ()  # (device index, milli, device memory MiB) taken


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an admitted workload runs: its flavor and one slot per replica."""

    flavor: str
    slots: tuple[Slot, ...]
    on_reservation: bool = False  # borrowed another queue's reserved capacity: preemptible by it
    borrowing: bool = False  # admitted beyond the tenant's nominal quota: reclaimable by lenders

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(slot.node for slot in self.slots)


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    """The scheduling-relevant rules of one queue."""

    name: str
    priority: int
    max_wait_s: float
    escalation: str  # raise-priority | allow-borrowing | allow-preemption | notify
    priority_boost: int = 0
    may_preempt: frozenset[str] = frozenset()
    preemptible: bool = False
    idle_kernels_only: bool = False
    grace_s: float = 30
    reserved: dict[str, int] = field(default_factory=dict)  # flavor -> whole devices
    lends_reserved: bool = True  # others may borrow its idle reserved devices, preemptibly
    can_borrow: bool = True


@dataclass(frozen=True, slots=True)
class TenantQuota:
    """A tenant's quota per flavor, with Kueue's borrowing and lending limits (None: unlimited)."""

    tenant: str
    cohort: str = "default"
    weight: float = 1.0
    nominal: dict[str, Res] = field(default_factory=dict)
    borrowing_limit: dict[str, Res | None] = field(default_factory=dict)
    lending_limit: dict[str, Res | None] = field(default_factory=dict)


@dataclass(slots=True)
class Workload:
    """A workload as the engine sees it, pending or running."""

    id: int
    tenant: str
    queue: str
    request: Request
    flavors: tuple[str, ...]
    submitted_at: float
    kind: WorkloadKind = WorkloadKind.JOB
    constraints: Constraints = Constraints()
    user: str = ""
    # Snapshot times at which it was chosen as a victim before, oldest first; the service keeps them
    # across requeues. Damping: see Engine(preemption_limit=..., preemption_window_s=...).
    preempted_at: tuple[float, ...] = ()
    # Running workloads only:
    placement: Placement | None = None
    started_at: float | None = None
    expected_end: float | None = None
    idle: bool = False
    checkpoint_at: float | None = None
    preempting_until: float | None = None  # already chosen as a victim; holds capacity until then
    preempted_for: int | None = None  # the workload this victim makes room for
    # Pending workloads only:
    priority_boost: int = 0
    escalated: bool = False
    runtime_s: float = 3600.0  # declared or template-typical run time, for ETAs


@dataclass(slots=True)
class Snapshot:
    """Everything one cycle looks at. Nodes carry full capacity; running work is charged by the engine."""

    now: float
    nodes: list[NodeState]
    queues: dict[str, QueuePolicy]
    tenants: dict[str, TenantQuota]
    running: list[Workload] = field(default_factory=list)
    pending: list[Workload] = field(default_factory=list)
