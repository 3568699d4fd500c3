"""Discover this machine: psutil for CPU and memory, then each vendor's devices through :data:`VENDORS`.

Each accelerator source is optional. A missing library or tool is a fact recorded in the
node's ``notes``, never an error: a laptop without a GPU is a perfectly good node.
"""

from __future__ import annotations

import platform
import shutil
import socket
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil
import yaml
from pydantic import ValidationError

from ...capability import Accelerator, DeviceInfo, NodeCapability
from .vendors import DeviceFacts, Runner, Which, amd, ascend, cambricon, hygon, intel, nvidia, run_tool

__all__ = [
    "VENDORS",
    "EmulatedNodesError",
    "discover_local_node",
    "group_devices",
    "load_emulated_nodes",
    "vendor_module",
]

_MIB = 1024 * 1024
# The vendor modules discovery walks, in order; each offers discover(run, which) and sample(indexes, run, which).
# A machine's accelerators are those of the first module that finds any; every module's notes are kept.
VENDORS: tuple[ModuleType, ...] = (nvidia, amd, ascend, intel, cambricon, hygon)


def vendor_module(family: str) -> ModuleType | None:
    """The vendor module for an accelerator family (``"ascend"`` -> ``vendors.ascend``); None for CPU or unknown."""
    return next((module for module in VENDORS if module.__name__.rpartition(".")[2] == family), None)


def discover_local_node(name: str | None = None, *, run: Runner = run_tool, which: Which = shutil.which,
                        vendors: tuple[ModuleType, ...] = VENDORS) -> NodeCapability:
    """This machine as a node; accelerators from the first vendor module that finds any."""
    notes: list[str] = []
    accelerator = None
    for vendor in vendors:
        devices, found_notes = vendor.discover(run, which)
        notes.extend(found_notes)
        if devices and accelerator is None:
            accelerator, note = group_devices(devices)
            notes.extend([note] if note else [])
            notes.extend(_withheld(accelerator))
    hostname = name or socket.gethostname() or "localhost"
    return NodeCapability(
        name=hostname,
        cpu_milli=(psutil.cpu_count(logical=True) or 1) * 1000,
        memory_mib=psutil.virtual_memory().total // _MIB,
        arch=platform.machine() or "unknown",
        labels={"kubernetes.io/hostname": hostname, "kubernetes.io/arch": _k8s_arch(platform.machine())},
        accelerator=accelerator,
        emulated=False,
        source="local",
        notes=notes,
    )


def _k8s_arch(machine: str) -> str:
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def group_devices(devices: list[DeviceFacts]) -> tuple[Accelerator, str | None]:
    """One accelerator group from per-device facts; a mixed machine keeps its most common model. A device its
    tool could not read (no memory, a health saying why) is one of the group, counted and never placed on."""
    unread = {device for device in devices if device.health and not device.memory_mib}
    counts = Counter(device.model for device in devices if device not in unread) or Counter(d.model for d in unread)
    model, _ = counts.most_common(1)[0]
    chosen = sorted(unread | {d for d in devices if d.model == model}, key=lambda device: device.index)
    first, count = next(device for device in chosen if device.model == model), len(chosen)
    note = None
    if len(counts) > 1:
        others = ", ".join(f"{n}x {m}" for m, n in counts.items() if m != model)
        note = f"{first.vendor}: mixed models on one node; scheduling uses {count}x {model}, not {others}"
    linked = [device.interconnect for device in chosen if device.link_domain]
    return Accelerator(
        vendor=first.vendor, model=model, count=count, memory_mib=min((d.memory_mib for d in chosen if d.memory_mib), default=0),
        driver_version=first.driver_version, runtime=first.runtime, firmware_version=first.firmware_version,
        interconnect=linked[0] if linked else "pcie", sharing="milli" if first.vendor == "nvidia" else "whole",
        devices=[DeviceInfo(index=d.index, link_domain=d.link_domain, numa_node=d.numa_node, pci_bus=d.pci_bus,
                            health=d.health) for d in chosen],
    ), note


def _withheld(accelerator: Accelerator) -> list[str]:
    """A note naming the devices nothing is placed on, for their health."""
    withheld = [f"{device.index} ({device.health})" for device in accelerator.devices if not device.placeable]
    if not withheld:
        return []
    return [f"{accelerator.vendor}: nothing is placed on device {', '.join(withheld)} until its health clears"]


class EmulatedNodesError(ValueError):
    """An emulated-nodes file that cannot be used; the message names the entry and field."""


def load_emulated_nodes(source: str | Path | list[dict[str, Any]]) -> list[NodeCapability]:
    """Emulated nodes from a YAML file (a list, or ``{nodes: [...]}``) or a list of dicts.

    An entry may carry ``replicas: N`` to declare N identical nodes named ``<name>-0..N-1``, and its
    accelerator a ``topology`` shorthand for the per-device ``devices`` list: consecutive devices
    grouped by size, e.g. two NVLink islands of 4, one per NUMA node::

        accelerator: {vendor: nvidia, model: H100, count: 8, interconnect: nvlink,
                      topology: {link_domains: [4, 4], numa_nodes: [4, 4]}}
    """
    if isinstance(source, (str, Path)):
        data = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
        where = str(source)
    else:
        data, where = source, "emulated_nodes"
    if isinstance(data, dict):
        data = data.get("nodes")
    if not isinstance(data, list):
        raise EmulatedNodesError(f"{where}: expected a list of nodes (or a mapping with 'nodes')")
    nodes: list[NodeCapability] = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise EmulatedNodesError(f"{where}: nodes[{i}] is not a mapping")
        entry = dict(entry)
        try:
            _expand_topology(entry)
        except ValueError as exc:
            raise EmulatedNodesError(f"{where}: nodes[{i}].accelerator.topology: {exc}") from None
        replicas = entry.pop("replicas", None)
        names = [entry.get("name")] if replicas is None else [f"{entry.get('name')}-{n}" for n in range(int(replicas))]
        for name in names:
            try:
                nodes.append(NodeCapability.model_validate({**entry, "name": name, "emulated": True, "source": "emulated"}))
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(part) for part in first["loc"])
                raise EmulatedNodesError(f"{where}: nodes[{i}].{field}: {first['msg']}") from None
    seen = Counter(node.name for node in nodes)
    duplicated = [name for name, count in seen.items() if count > 1]
    if duplicated:
        raise EmulatedNodesError(f"{where}: node names used twice: {', '.join(duplicated)}")
    return nodes


_TOPOLOGY_KEYS = {"link_domains", "numa_nodes"}


def _expand_topology(entry: dict[str, Any]) -> None:
    """Replace ``accelerator.topology`` (group sizes over consecutive devices) by the ``devices`` it means."""
    accelerator = entry.get("accelerator")
    if not isinstance(accelerator, dict) or "topology" not in accelerator:
        return
    accelerator = entry["accelerator"] = dict(accelerator)
    topology = accelerator.pop("topology")
    if not isinstance(topology, dict) or not set(topology) <= _TOPOLOGY_KEYS:
        raise ValueError(f"expected a mapping with {' and/or '.join(sorted(_TOPOLOGY_KEYS))}")
    if accelerator.get("devices"):
        raise ValueError("give either topology or devices, not both")
    count = accelerator.get("count")
    if not isinstance(count, int):
        raise ValueError("needs the accelerator's count")
    prefix = accelerator.get("interconnect") or "link"
    links = _group_of(topology.get("link_domains"), count, "link_domains")
    numa = _group_of(topology.get("numa_nodes"), count, "numa_nodes")
    accelerator["devices"] = [
        {"index": i, "link_domain": None if links is None else f"{prefix}-{links[i]}",
         "numa_node": None if numa is None else numa[i]}
        for i in range(count)
    ]


def _group_of(sizes: Any, count: int, field: str) -> list[int] | None:
    """Per device, the number of its group; ``[4, 4]`` -> ``[0, 0, 0, 0, 1, 1, 1, 1]``."""
    if sizes is None:
        return None
    if not isinstance(sizes, list) or not all(isinstance(n, int) and n > 0 for n in sizes) or sum(sizes) != count:
        raise ValueError(f"{field} must be positive group sizes adding up to count ({count}), not {sizes!r}")
    return [group for group, size in enumerate(sizes) for _ in range(size)]
