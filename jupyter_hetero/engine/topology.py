"""Which whole devices of a node a replica takes: the tightest link domain that holds them, then the
fewest NUMA nodes inside it.

    choose_devices(node.devices, 4)   # 4 free devices, inside one NVLink island, one NUMA node if it can
    one_domain_holds(node.devices, 4) # True: the choice stays inside one link domain (how nodes are ranked)

A device's ``link`` names its link domain on the node (an NVLink/NVSwitch island, an HCCS mesh, an
xGMI hive); ``-1`` means it has none, so it is a domain of its own. The choice, in order:

1. the tightest link domain that holds the request (among equals, one where a NUMA node holds it),
   and inside it the tightest NUMA node that holds it, else the fewest NUMA nodes;
2. when no domain holds it, the fewest link domains.

"Tightest" (the group with the fewest free devices that still holds the request) keeps larger free
groups whole for later, bigger requests; remaining ties go to the lowest device index, so the
choice is deterministic. The domain comes before NUMA: taking a NUMA node of a whole domain when a
tighter domain spans two NUMA nodes left the whole domain broken for the next four-device job, which
cost waiting time on the 910A's two HCCS rings (docs/benchmarks.md). Without link domains every device
is its own domain and the choice is the lowest free indexes, which is what topology-blind placement takes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import IntEnum

from .model import Device

__all__ = ["Locality", "choose_devices", "domain_of", "one_domain_holds"]


class Locality(IntEnum):
    """How close the devices of one replica can be on a node; lower is better (a rank component)."""

    SAME_DOMAIN = 0  # one link domain
    SPLIT = 1  # more than one link domain: some traffic crosses PCIe or the host


def domain_of(device: Device) -> int:
    """The device's link domain; a device without one is a domain of its own (a negative id)."""
    return device.link if device.link >= 0 else ~device.index


def one_domain_holds(devices: Sequence[Device], k: int) -> bool:
    """Whether one link domain has ``k`` free whole devices: then, and only then, ``choose_devices`` keeps
    the replica inside one domain."""
    free: dict[int, int] = {}
    for device in devices:
        if device.free_milli == 1000:
            free[domain_of(device)] = free.get(domain_of(device), 0) + 1
    return any(count >= k for count in free.values())


def choose_devices(devices: Sequence[Device], k: int) -> list[Device]:
    """``k`` free whole devices, tightest domain first (see the module's docstring), in index order.

    The caller has checked that at least ``k`` are free."""
    free = [device for device in devices if device.free_milli == 1000]
    fitting = []
    for domain in _groups(free, domain_of):
        if len(domain) >= k:
            cells = [cell for cell in _groups(domain, _numa) if len(cell) >= k]
            fitting.append((len(domain), not cells, domain[0].index, domain, cells))
    if not fitting:
        return _fewest_groups(free, k, domain_of)
    *_, domain, cells = min(fitting, key=lambda entry: entry[:3])
    return _tightest(cells)[:k] if cells else _fewest_groups(domain, k, _numa)


def _numa(device: Device) -> int:
    return device.numa


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
