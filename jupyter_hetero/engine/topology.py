"""Which whole devices of a node a replica takes: the fewest link domains, then the fewest NUMA nodes.

    choose_devices(node.devices, 4)   # 4 free devices, inside one NVLink island and NUMA node if one has room
    locality(node.devices, 4)         # Locality.SAME_NUMA: the best such a choice can be on this node

A device's ``link`` names its link domain on the node (an NVLink/NVSwitch island, an HCCS mesh, an
xGMI hive); ``-1`` means it has none, so it is a domain of its own. The choice, in order:

1. one link domain and one NUMA node, the tightest such group that fits;
2. one link domain across NUMA nodes, the tightest domain that fits, its fullest NUMA nodes first;
3. the fewest link domains.

"Tightest" (the group with the fewest free devices that still holds the request) keeps larger free
groups whole for later, bigger requests; remaining ties go to the lowest device index, so the
choice is deterministic. Without link domains every device is its own domain and the choice is the
lowest free indexes, which is what topology-blind placement takes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import IntEnum

from .model import Device

__all__ = ["Locality", "choose_devices", "domain_of", "locality"]


class Locality(IntEnum):
    """How close the devices of one replica can be on a node; lower is better (a rank component)."""

    SAME_NUMA = 0  # one link domain and one NUMA node
    SAME_DOMAIN = 1  # one link domain, across NUMA nodes
    SPLIT = 2  # more than one link domain: some traffic crosses PCIe or the host


def domain_of(device: Device) -> int:
    """The device's link domain; a device without one is a domain of its own (a negative id)."""
    return device.link if device.link >= 0 else ~device.index


def locality(devices: Sequence[Device], k: int) -> Locality:
    """The best locality ``k`` whole devices can have among the free ones (SPLIT when fewer are free)."""
    cells: dict[tuple[int, int], int] = {}
    domains: dict[int, int] = {}
    for device in devices:
        if device.free_milli == 1000:
            domain = domain_of(device)
            cell = (domain, device.numa)
            cells[cell] = cells.get(cell, 0) + 1
            domains[domain] = domains.get(domain, 0) + 1
    if max(cells.values(), default=0) >= k:
        return Locality.SAME_NUMA
    if max(domains.values(), default=0) >= k:
        return Locality.SAME_DOMAIN
    return Locality.SPLIT


def choose_devices(devices: Sequence[Device], k: int) -> list[Device]:
    """``k`` free whole devices, closest first (see the module's docstring), in index order.

    The caller has checked that at least ``k`` are free."""
    free = [device for device in devices if device.free_milli == 1000]
    cells = _groups(free, lambda d: (domain_of(d), d.numa))
    fitting = [cell for cell in cells if len(cell) >= k]
    if fitting:
        return _tightest(fitting)[:k]
    domains = _groups(free, domain_of)
    fitting = [domain for domain in domains if len(domain) >= k]
    if fitting:
        return _fewest_groups(_tightest(fitting), k, lambda d: d.numa)
    return _fewest_groups(free, k, domain_of)


def _groups(devices: list[Device], key: Callable[[Device], object]) -> list[list[Device]]:
    grouped: dict[object, list[Device]] = {}
    for device in devices:
        grouped.setdefault(key(device), []).append(device)
    return list(grouped.values())


def _tightest(groups: list[list[Device]]) -> list[Device]:
    return min(groups, key=lambda group: (len(group), group[0].index))


def _fewest_groups(devices: list[Device], k: int, key: Callable[[Device], object]) -> list[Device]:
    """``k`` devices from as few groups as possible: the largest groups whole, then the tightest group
    that holds the rest (taking the largest ones first needs the fewest; the last one need not be large)."""
    groups = sorted(_groups(devices, key), key=lambda group: (-len(group), group[0].index))
    chosen: list[Device] = []
    for i, group in enumerate(groups):
        need = k - len(chosen)
        if len(group) >= need:
            chosen += _tightest([g for g in groups[i:] if len(g) >= need])[:need]
            break
        chosen += group
    return sorted(chosen, key=lambda device: device.index)
