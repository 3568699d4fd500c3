"""Vendor-neutral capability records.

A :class:`NodeCapability` says what one machine offers, whatever its source: local discovery
(psutil, NVML, ``npu-smi``, ``rocm-smi``), Kubernetes node labels, or an emulated node declared
in configuration. Units are normalised on the way in: CPU in milli-cores, memory in MiB.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .units import CpuMilli, MemoryMiB, friendly_quantities

__all__ = [
    "Accelerator",
    "AcceleratorFamily",
    "DeviceInfo",
    "Held",
    "Interconnect",
    "Network",
    "NodeCapability",
    "Sharing",
    "family_of",
]


class AcceleratorFamily(str, Enum):
    """The software stack a device needs; runtime variants of templates are chosen by it."""

    CPU = "cpu"
    NVIDIA = "nvidia"
    AMD = "amd"
    INTEL = "intel"
    ASCEND = "ascend"
    CAMBRICON = "cambricon"
    HYGON = "hygon"


# Vendors whose devices share a software stack with another vendor's.
_FAMILY_OF_VENDOR = {"huawei": AcceleratorFamily.ASCEND}


def family_of(vendor: str | None) -> AcceleratorFamily:
    """The accelerator family for a vendor name; ``None`` means a CPU-only node."""
    if not vendor:
        return AcceleratorFamily.CPU
    vendor = vendor.lower()
    return _FAMILY_OF_VENDOR.get(vendor) or AcceleratorFamily(vendor)


# The fast links between devices: NVIDIA NVLink/NVSwitch, Huawei HCCS, AMD xGMI, Intel Xe Link, Cambricon MLU-Link.
Interconnect = Literal["nvlink", "hccs", "xgmi", "xelink", "mlulink", "pcie", "none"]
Sharing = Literal["whole", "milli", "memory-slice"]

class _Record(BaseModel):
    # A dump writes every field, so the API's schema of an answer embedding one marks them all required.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, json_schema_serialization_defaults_required=True)


class Network(_Record):
    """How the node talks to its peers: plain Ethernet or RDMA, and at what speed."""

    rdma: bool = False
    bandwidth_gbps: float = Field(default=10, ge=0)


_USABLE_HEALTH = frozenset({"warning"})


class DeviceInfo(_Record):
    """One device of an accelerator group: where it sits, for placement that keeps a gang's devices close."""

    index: int = Field(ge=0, description="The device's index as its vendor's runtime numbers it.")
    link_domain: str | None = Field(
        default=None,
        description="Devices with the same name share a fast link: an NVLink or NVSwitch island, an HCCS ring, "
        "an xGMI hive. None: the device reaches the others over PCIe only.",
    )
    numa_node: int | None = Field(default=None, description="The NUMA node the device is attached to.")
    pci_bus: str | None = Field(default=None, description="PCI bus id, e.g. '0000:3b:00.0'.")
    health: str | None = Field(
        default=None,
        description="What its vendor's tool says of it when not healthy. A device in any state but a warning "
        "(npu-smi's 'Warning', a general alarm) is not placed on until its health clears.",
    )

    @property
    def placeable(self) -> bool:
        """Whether work may be placed on it: healthy, or only warned of (npu-smi's general alarm, on a chip that
        still runs); Critical, Alarm, 'GPU in bad state', a driver/firmware mismatch ... are not."""
        return self.health is None or self.health.strip().lower() in _USABLE_HEALTH


class Accelerator(_Record):
    """A group of identical accelerator devices on one node."""

    vendor: str
    model: str
    count: int = Field(ge=1)
    memory_mib: MemoryMiB = Field(ge=0, description="Device memory per device.")
    driver_version: str | None = None
    runtime: str | None = Field(
        default=None, description="Runtime and version, e.g. 'cuda 12.4', 'cann 8.0', 'rocm 6.1'."
    )
    interconnect: Interconnect = "pcie"
    sharing: Sharing = "whole"
    resource: str | None = Field(
        default=None,
        description="The extended resource pods request these devices by, e.g. 'nvidia.com/gpu', "
        "'nvidia.com/mig-1g.10gb', 'huawei.com/Ascend910'; None outside Kubernetes.",
    )
    frameworks: list[str] = Field(default_factory=list)
    inference_engines: list[str] = Field(default_factory=list)
    firmware_version: str | None = None
    devices: list[DeviceInfo] = Field(
        default_factory=list, description="Per-device locality, where discovery or the declaration gives it."
    )

    @property
    def family(self) -> AcceleratorFamily:
        return family_of(self.vendor)

    @property
    def runtime_version(self) -> str | None:
        """The version part of ``runtime`` (``"cuda 12.4"`` -> ``"12.4"``)."""
        if not self.runtime:
            return None
        return self.runtime.split()[-1]


class NodeCapability(_Record):
    """What one node offers: CPU, memory, architecture, labels and its accelerators."""

    name: str = Field(min_length=1)
    cpu_milli: CpuMilli = Field(ge=0)
    memory_mib: MemoryMiB = Field(ge=0)
    arch: str = "x86_64"
    labels: dict[str, str] = Field(default_factory=dict)
    accelerator: Accelerator | None = None
    network: Network = Field(default_factory=Network)
    frameworks: list[str] = Field(default_factory=list)
    emulated: bool = False
    source: str = Field(default="config", description="Where the record came from.")
    notes: list[str] = Field(
        default_factory=list, description="Facts found during discovery, e.g. a driver that did not load."
    )

    _quantities = model_validator(mode="before")(friendly_quantities)

    @property
    def family(self) -> AcceleratorFamily:
        return family_of(self.accelerator.vendor if self.accelerator else None)

    @property
    def device_count(self) -> int:
        return self.accelerator.count if self.accelerator else 0


@dataclass(frozen=True)
class Held:
    """Capacity held: what work this platform did not place holds on a node (a cluster's other pods, which the
    engine must not count as free though the node has it), or what admitted workloads hold, added up per tenant
    and flavor."""

    cpu_milli: int = 0
    memory_mib: int = 0
    device_milli: int = 0

    def __add__(self, other: Held) -> Held:
        return Held(self.cpu_milli + other.cpu_milli, self.memory_mib + other.memory_mib,
                    self.device_milli + other.device_milli)

    @property
    def devices(self) -> int:
        """Whole devices held (others' pods on a node always hold whole devices)."""
        return self.device_milli // 1000
