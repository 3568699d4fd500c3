"""What each vendor's tool says of its devices, in one shape.

A vendor module (``nvidia``, ``amd``, ``ascend``, ``intel``, ``cambricon``, ``hygon``) turns its tool's or
library's output into :class:`DeviceFacts` (what a device is) and :class:`DeviceUsage` (what it is doing now).
Its parsers are pure functions of the tool's text, tested against recorded outputs; running the tool, its
absence and its timeout are the discovery's business, not the parser's.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DeviceFacts", "DeviceUsage"]


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    """One device as discovered; ``link_domain`` names the fast-link island it shares with its peers."""

    index: int
    vendor: str
    model: str
    memory_mib: int
    driver_version: str | None = None
    runtime: str | None = None  # "cuda 12.4", "rocm 6.1", "cann 8.0", "level-zero 1.3", "neuware 3.9"
    firmware_version: str | None = None
    interconnect: str = "pcie"  # nvlink | hccs | xgmi | pcie
    link_domain: str | None = None
    numa_node: int | None = None
    pci_bus: str | None = None
    health: str | None = None  # None when healthy; the tool's words otherwise


@dataclass(frozen=True, slots=True)
class DeviceUsage:
    """One device's utilisation and memory in use at one moment; None where the tool does not say."""

    index: int
    util_pct: float | None = None
    memory_used_mib: float | None = None
