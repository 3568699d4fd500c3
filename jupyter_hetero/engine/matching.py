"""Static matching: can this node ever run this workload, whatever is free right now?

Checks accelerator presence, device memory, count and sharing, the interconnect and, for several
devices of one replica that need a fast link, a link domain that holds them all; the template
variant's minimum driver, runtime and firmware (version-aware) and what it requires on the node;
frameworks and inference engines against requirement strings with version ranges
(:mod:`..packages`); RDMA and bandwidth; and label expressions. The answer depends only on facts
that do not change within a cycle, so it is cached per (constraints, flavor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..packages import unmet
from ..units import compare_versions, format_amount, format_memory
from .model import Constraints, NodeState, Request, VariantNeed

__all__ = ["LabelOperator", "LabelReq", "Mismatch", "mismatch"]

# The operators of a Kubernetes node selector requirement.
LabelOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


@dataclass(frozen=True, slots=True)
class LabelReq:
    """A hashable label requirement: ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``.

    The one reading of these operators: the catalog's ``LabelRequirement`` checks and matches through it.
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def problem(self) -> str | None:
        """What is wrong with the values for the operator, or None when they fit it."""
        op = self.operator
        if op in ("In", "NotIn") and not self.values:
            return f"operator {op} needs at least one value"
        if op in ("Exists", "DoesNotExist") and self.values:
            return f"operator {op} takes no values"
        if op in ("Gt", "Lt"):
            if len(self.values) != 1:
                return f"operator {op} needs exactly one value"
            try:
                float(self.values[0])
            except ValueError:
                return f"operator {op} needs a number, not {self.values[0]!r}"
        return None

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


_UNSCHEDULABLE = {"lost": "node-lost", "cordoned": "cordoned"}


def mismatch(node: NodeState, request: Request, constraints: Constraints) -> Mismatch | None:
    """The first reason ``node`` can never run the workload, or None when it could."""
    if not node.schedulable:
        # A lost or cordoned node is said as such: "still onboarding" of a deleted node misleads.
        kind = _UNSCHEDULABLE.get(node.readiness, "not-onboarded")
        return Mismatch(kind, "a ready node", "onboarding" if kind == "not-onboarded" else node.name)
    if request.uses_devices:
        found = _devices_mismatch(node, request, constraints)
        if found is not None:
            return found
    variant = constraints.variant(node.family)
    if constraints.variants and variant is None:
        return Mismatch("variant", "a runtime variant for " + node.family, "none in the template")
    if variant is not None:
        found = _variant_mismatch(node, variant)
        if found is not None:
            return found
    if (missing := unmet(constraints.frameworks, node.frameworks)) is not None:
        return Mismatch("frameworks", *missing)
    if (missing := unmet(constraints.inference_engines, node.inference_engines)) is not None:
        return Mismatch("inference-engines", *missing)
    if constraints.rdma and not node.rdma:
        return Mismatch("rdma", "RDMA", "none")
    if node.bandwidth_gbps < constraints.min_bandwidth_gbps:
        return Mismatch("bandwidth", format_amount(constraints.min_bandwidth_gbps), format_amount(node.bandwidth_gbps))
    for requirement in constraints.labels:
        if not requirement.matches(node.labels):
            return Mismatch("labels", str(requirement), node.labels.get(requirement.key, "absent"))
    return None


def _devices_mismatch(node: NodeState, request: Request, constraints: Constraints) -> Mismatch | None:
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
    if request.devices > 1 and constraints.fast_link:
        # One replica's devices talk over the fast link only inside one domain; across domains it is PCIe.
        largest = len(node.devices) if node.largest_link_domain is None else node.largest_link_domain
        if largest < request.devices:
            return Mismatch("link-domain", str(request.devices), str(largest))
    return None


def _variant_mismatch(node: NodeState, variant: VariantNeed) -> Mismatch | None:
    minimums = (("driver", variant.min_driver, node.driver), ("runtime", variant.min_runtime, node.runtime),
                ("firmware", variant.min_firmware, node.firmware))
    for kind, need, have in minimums:
        if need and (have is None or compare_versions(have, need) < 0):
            return Mismatch(kind, f">= {need}", have or "unknown")
    if variant.requires and (missing := unmet(variant.requires, node.frameworks | node.inference_engines)):
        return Mismatch("variant-requires", *missing)
    return None
