"""Static matching: can this node ever run this workload, whatever is free right now?

Checks accelerator presence and device memory, the template variant's minimum driver and
runtime (version-aware), frameworks, interconnect and label expressions. The answer depends only
on facts that do not change within a cycle, so it is cached per (constraints, flavor).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..units import compare_versions, format_memory
from .model import Constraints, NodeState, Request

__all__ = ["LabelReq", "Mismatch", "mismatch"]


@dataclass(frozen=True, slots=True)
class LabelReq:
    """A hashable label requirement: ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        value = labels.get(self.key)
        op = self.operator
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if op == "In":
            return value in self.values
        if op == "NotIn":
            return value not in self.values
        try:
            number, bound = float(value), float(self.values[0])  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False
        return number > bound if op == "Gt" else number < bound

    def __str__(self) -> str:
        values = ",".join(self.values)
        return f"{self.key} {self.operator} {values}".strip()


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Why a node can never run a workload: a kind (driver, runtime, ...) and the facts."""

    kind: str
    need: str
    have: str


def mismatch(node: NodeState, request: Request, constraints: Constraints) -> Mismatch | None:
    """The first reason ``node`` can never run the workload, or None when it could."""
    if not node.schedulable:
        return Mismatch("not-admitted", "an admitted node", "pending onboarding")
    if request.uses_devices:
        if not node.devices:
            return Mismatch("no-accelerator", "an accelerator", "CPU only")
        device_mem = node.devices[0].mem
        if request.device_mem and device_mem < request.device_mem:
            return Mismatch("device-memory", format_memory(request.device_mem), format_memory(device_mem))
        if request.devices > len(node.devices):
            return Mismatch("device-count", str(request.devices), str(len(node.devices)))
        if request.device_milli and not node.shares_devices:
            return Mismatch("device-sharing", "a share of a device", "whole devices only")
        if request.replicas > 1 or request.devices > 1:
            if constraints.interconnect and node.interconnect not in constraints.interconnect:
                return Mismatch("interconnect", "|".join(constraints.interconnect), node.interconnect)
    variant = constraints.variant(node.family)
    if constraints.variants and variant is None:
        return Mismatch("variant", "a runtime variant for " + node.family, "none in the template")
    if variant is not None:
        if variant.min_driver and (node.driver is None or compare_versions(node.driver, variant.min_driver) < 0):
            return Mismatch("driver", f">= {variant.min_driver}", node.driver or "unknown")
        if variant.min_runtime and (node.runtime is None or compare_versions(node.runtime, variant.min_runtime) < 0):
            return Mismatch("runtime", f">= {variant.min_runtime}", node.runtime or "unknown")
    missing = [f for f in constraints.frameworks if f not in node.frameworks]
    if missing:
        return Mismatch("frameworks", ",".join(constraints.frameworks), ",".join(sorted(node.frameworks)) or "none")
    for requirement in constraints.labels:
        if not requirement.matches(node.labels):
            return Mismatch("labels", str(requirement), node.labels.get(requirement.key, "absent"))
    return None
