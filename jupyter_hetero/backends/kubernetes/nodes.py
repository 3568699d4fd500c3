"""A Node, as the API sends it (a JSON dict), read as a capability record plus findings.

>>> reading = read_node({"metadata": {"name": "n1", "labels": {"kubernetes.io/arch": "arm64"}},
...                      "status": {"allocatable": {"cpu": "4", "memory": "16Gi"},
...                                 "conditions": [{"type": "Ready", "status": "True"}]}})
>>> reading.capability.cpu_milli, reading.capability.arch, reading.schedulable
(4000, 'aarch64', True)

CPU and memory are what the kubelet reports allocatable, less what pods we did not place ask
for (``foreign``); so are the accelerator's devices. ``read_node`` never raises: a node it
cannot read is unusable (``capability=None``), with the reason in ``findings``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ...capability import Held, Network, NodeCapability
from . import quantities
from .accelerators import read_accelerator

__all__ = ["NodeReading", "Requests", "pod_requests", "read_node"]

log = logging.getLogger(__name__)

_ARCH = {"amd64": "x86_64", "arm64": "aarch64"}  # Kubernetes' (Go's) names -> this product's (uname's)
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
_MIB = 2**20


@dataclass(frozen=True)
class Requests:
    """What pods ask of a node: CPU, memory and extended resources (``{"nvidia.com/gpu": 2}``)."""

    cpu_milli: int = 0
    memory_mib: int = 0
    extended: Mapping[str, int] = field(default_factory=dict, hash=False)

    def __add__(self, other: Requests) -> Requests:
        extended = dict(self.extended)
        for name, amount in other.extended.items():
            extended[name] = extended.get(name, 0) + amount
        return Requests(self.cpu_milli + other.cpu_milli, self.memory_mib + other.memory_mib, extended)


def pod_requests(pod: dict) -> Requests:
    """A pod's effective request, as kube-scheduler counts it against its node.

    Per resource: the larger of (the app containers plus restartable init containers, i.e.
    sidecars) and each ordinary init container plus the sidecars started before it; then the
    pod's ``overhead``. A limit stands in for a missing request. Finished pods ask nothing.
    Memory is rounded up to whole MiB, so the room left is never more than the kubelet's.
    """
    pod = _mapping(pod)
    spec = _mapping(pod.get("spec"))
    if _mapping(pod.get("status")).get("phase") in ("Succeeded", "Failed"):
        return Requests()
    total: dict[str, Fraction] = {}
    for container in _list(spec.get("containers")):
        _add(total, _container_requests(container))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in _list(spec.get("initContainers")):
        own = _container_requests(container)
        if _mapping(container).get("restartPolicy") == "Always":  # a sidecar runs alongside the app containers
            _add(sidecars, own)
            continue
        during = dict(sidecars)
        _add(during, own)
        for name, amount in during.items():
            init_peak[name] = max(init_peak.get(name, Fraction(0)), amount)
    _add(total, sidecars)
    for name, amount in init_peak.items():
        total[name] = max(total.get(name, Fraction(0)), amount)
    _add(total, _quantities(spec.get("overhead")))
    cpu = total.pop("cpu", Fraction(0))
    memory = total.pop("memory", Fraction(0))
    extended = {name: math.ceil(amount) for name, amount in total.items()
                if "/" in name and amount > 0 and not name.startswith(("kubernetes.io/", "requests."))}
    return Requests(max(math.ceil(cpu * 1000), 0), max(math.ceil(memory / _MIB), 0), extended)


def _container_requests(container: Any) -> dict[str, Fraction]:
    resources = _mapping(_mapping(container).get("resources"))
    # Kubernetes defaults a missing request to the limit: a pod with only limits asks for its limits.
    merged = dict(_mapping(resources.get("limits")))
    merged.update(_mapping(resources.get("requests")))
    return _quantities(merged)


def _quantities(values: Any) -> dict[str, Fraction]:
    parsed = {}
    for name, value in (values or {}).items() if isinstance(values, dict) else ():
        try:
            parsed[str(name)] = quantities.parse_quantity(value)
        except ValueError:
            log.debug("ignored an unreadable pod quantity %s=%r", name, value)
    return parsed


def _add(into: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, Fraction(0)) + amount


@dataclass(frozen=True)
class NodeReading:
    """One node as read: its capability (None when unusable), findings, whether pods may land on it, and
    what pods we did not place hold of it."""

    name: str
    capability: NodeCapability | None
    findings: tuple[str, ...]
    schedulable: bool
    taints: tuple[dict, ...]
    held: Held = field(default_factory=lambda: Held())


def read_node(node: dict, *, foreign: Requests = Requests(), tolerated: Sequence[dict] = ()) -> NodeReading:
    """A Node's reading; never raises, whatever the node holds."""
    name = "(unnamed)"
    try:
        metadata = _mapping(node.get("metadata") if isinstance(node, dict) else None)
        name = str(metadata.get("name") or "(unnamed)")
        return _read(name, metadata, node, foreign, tolerated)
    except Exception as exc:  # the reflector must survive any node: an unreadable one is a finding
        log.warning("could not read node %s", name, exc_info=True)
        return NodeReading(name, None, (f"node {name} could not be read: {exc}",), False, ())


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in _mapping(value).items()}


def _read(name: str, metadata: dict, node: dict, foreign: Requests, tolerated: Sequence[dict]) -> NodeReading:
    findings: list[str] = []
    spec, status = _mapping(node.get("spec")), _mapping(node.get("status"))
    labels = _strings(metadata.get("labels"))
    taints = tuple(t for t in _list(spec.get("taints")) if isinstance(t, dict))
    schedulable = _schedulable(name, spec, status, taints, tolerated, findings)
    if name == "(unnamed)":
        findings.append("a node without metadata.name cannot be used")
        return NodeReading(name, None, tuple(findings), False, taints)
    allocatable = _mapping(status.get("allocatable"))
    if not allocatable and status.get("capacity"):
        findings.append(f"node {name} reports no status.allocatable; using status.capacity")
        allocatable = _mapping(status.get("capacity"))
    try:
        cpu = quantities.cpu_milli(allocatable["cpu"])
        memory = quantities.memory_mib(allocatable["memory"])
    except KeyError as exc:
        findings.append(f"node {name} reports no allocatable {exc.args[0]}; it cannot be used")
        return NodeReading(name, None, tuple(findings), False, taints)
    except ValueError as exc:
        findings.append(f"node {name} allocatable: {exc}; it cannot be used")
        return NodeReading(name, None, tuple(findings), False, taints)
    if foreign.cpu_milli > cpu or foreign.memory_mib > memory:
        findings.append(f"node {name}: pods we did not place ask for more than it has allocatable")
    accelerator, device_findings = read_accelerator(name, labels, _strings(metadata.get("annotations")), allocatable)
    findings.extend(device_findings)
    devices_held = _held_devices(accelerator, foreign) if accelerator is not None and accelerator.resource else 0
    if devices_held and devices_held >= accelerator.count:
        findings.append(f"node {name}: pods we did not place hold all {accelerator.count} {accelerator.resource} devices")
    machine = labels.get("kubernetes.io/arch") or str(_mapping(status.get("nodeInfo")).get("architecture") or "")
    capability = NodeCapability(
        name=name,
        cpu_milli=cpu,
        memory_mib=memory,
        arch=_ARCH.get(machine, machine or "unknown"),
        labels=labels,
        accelerator=accelerator,
        network=Network(rdma=any(labels.get(f"feature.node.kubernetes.io/rdma.{k}") == "true"
                                 for k in ("available", "capable"))),
        emulated=False,
        source="kubernetes",
        notes=findings,
    )
    held = Held(min(foreign.cpu_milli, cpu), min(foreign.memory_mib, memory),
                1000 * min(devices_held, accelerator.count if accelerator else 0))
    return NodeReading(name, capability, tuple(findings), schedulable, taints, held)


def _held_devices(accelerator, foreign: Requests) -> int:
    if accelerator.sharing == "milli" and accelerator.resource == "nvidia.com/gpu":
        # HAMi: foreign pods hold shares of GPUs; a GPU whose cores they hold in full is gone.
        return int(foreign.extended.get("nvidia.com/gpucores", 0)) // 100
    return int(foreign.extended.get(accelerator.resource, 0))


def _schedulable(name: str, spec: dict, status: dict, taints: tuple[dict, ...], tolerated: Sequence[dict],
                 findings: list[str]) -> bool:
    ok = True
    ready = next((c for c in _list(status.get("conditions")) if isinstance(c, dict) and c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "True":
        reason = f" ({ready.get('reason')}: {ready.get('message')})" if ready and ready.get("reason") else ""
        findings.append(f"node {name} is not Ready{reason}")
        ok = False
    if spec.get("unschedulable") is True:
        findings.append(f"node {name} is cordoned (spec.unschedulable)")
        ok = False
    for taint in taints:
        if taint.get("effect") in _BLOCKING_EFFECTS and not any(_tolerates(t, taint) for t in tolerated):
            findings.append(f"node {name} has taint {taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}, "
                            f"which our pods do not tolerate")
            ok = False
    return ok


def _tolerates(toleration: dict, taint: dict) -> bool:
    """Kubernetes' rule: an empty key with Exists matches every taint; an empty effect matches every effect."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return not toleration.get("key") or toleration.get("key") == taint.get("key")
    return toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")
