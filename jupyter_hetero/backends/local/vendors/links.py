"""Fast-link islands and PCI locality, shared by the vendor modules.

    link_domains([(0, 1), (1, 2), (4, 5)], "xgmi")  # -> {0: "xgmi-0", 1: "xgmi-0", 2: "xgmi-0", 4: "xgmi-1", 5: "xgmi-1"}
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["link_domains", "numa_node_of", "pci_address_in", "pci_bus_id"]

_ADDRESS = re.compile(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")

# Where Linux says which NUMA node a PCI device hangs off; a test or a container may point elsewhere.
SYS_PCI_DEVICES = Path("/sys/bus/pci/devices")


def link_domains(pairs: Iterable[tuple[int, int]], kind: str) -> dict[int, str]:
    """Name each group of devices that reach each other over ``pairs`` of fast links, numbered by lowest index."""
    parent: dict[int, int] = {}

    def root(index: int) -> int:
        while parent.setdefault(index, index) != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    for a, b in pairs:
        if a != b:
            parent[max(root(a), root(b))] = min(root(a), root(b))
    groups = sorted({root(index) for index in parent})
    return {index: f"{kind}-{groups.index(root(index))}" for index in sorted(parent)}


def pci_bus_id(text: str | None) -> str | None:
    """A PCI address in the kernel's spelling (``0000:3b:00.0``) from a tool's (``00000000:3B:00.0``, ``3b:00.0``)."""
    if not text or text.strip().upper() in ("NA", "N/A", "-"):
        return None
    parts = text.strip().lower().split(":")
    if len(parts) == 2:
        parts.insert(0, "0000")
    if len(parts) != 3:
        return None
    return f"{parts[0][-4:].rjust(4, '0')}:{parts[1]}:{parts[2]}"


def pci_address_in(text: str | None) -> str | None:
    """The first PCI address (``0000:1B:00.0``) inside a tool's cell or field, in the kernel's spelling."""
    found = _ADDRESS.search(text or "")
    return pci_bus_id(found.group(0)) if found else None


def numa_node_of(bus: str | None, root: Path = SYS_PCI_DEVICES) -> int | None:
    """The NUMA node sysfs gives the device at ``bus``; None off Linux, for an unknown device, or -1 (no affinity)."""
    if not bus:
        return None
    try:
        node = int((root / bus / "numa_node").read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None
