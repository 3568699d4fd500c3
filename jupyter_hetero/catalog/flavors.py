"""Flavors: named classes of identical capacity, and the selectors that sort nodes into them."""

from __future__ import annotations

from pydantic import Field, PrivateAttr, model_validator

from ..capability import AcceleratorFamily, NodeCapability
from ..engine.matching import LabelOperator, LabelReq
from ..units import MemoryMiB
from .base import CatalogModel, Localized

__all__ = ["Flavor", "FlavorSelector", "LabelRequirement"]


class LabelRequirement(CatalogModel):
    """A Kubernetes-style match expression over node labels."""

    key: str = Field(min_length=1)
    operator: LabelOperator
    values: list[str] = Field(default_factory=list)
    # The engine's form, which holds the operators' rules: checked here, matched there.
    _requirement: LabelReq = PrivateAttr()

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelRequirement:
        requirement = LabelReq(self.key, self.operator, tuple(self.values))
        if (problem := requirement.problem()) is not None:
            raise ValueError(problem)
        self._requirement = requirement
        return self

    def matches(self, labels: dict[str, str]) -> bool:
        return self._requirement.matches(labels)


class FlavorSelector(CatalogModel):
    """Predicates over a capability record; a node belongs to the first flavor it satisfies."""

    family: AcceleratorFamily = AcceleratorFamily.CPU
    models: list[str] = Field(
        default_factory=list, description="Accepted accelerator models (case-insensitive prefixes)."
    )
    min_device_memory_mib: MemoryMiB | None = None
    max_device_memory_mib: MemoryMiB | None = None
    arch: list[str] = Field(default_factory=list)
    labels: list[LabelRequirement] = Field(default_factory=list)

    def matches(self, node: NodeCapability) -> bool:
        if node.family != self.family:
            return False
        if self.arch and node.arch not in self.arch:
            return False
        accelerator = node.accelerator
        if accelerator is not None:
            model = accelerator.model.lower()
            if self.models and not any(model.startswith(m.lower()) for m in self.models):
                return False
            if self.min_device_memory_mib is not None and accelerator.memory_mib < self.min_device_memory_mib:
                return False
            if self.max_device_memory_mib is not None and accelerator.memory_mib > self.max_device_memory_mib:
                return False
        return all(requirement.matches(node.labels) for requirement in self.labels)


class Flavor(CatalogModel):
    """A named class of identical capacity; quotas, reservations and prices are per flavor."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    display: Localized
    selector: FlavorSelector
    price_per_hour: float = Field(
        default=0, ge=0, description="Cost of one device-hour (one core-hour for CPU flavors)."
    )
    accelerator_weight: float = Field(
        default=1.0, ge=0, description="Normalised accelerator-hours one device-hour of this flavor counts as (an "
        "A100 80GB is 1); how usage of different chips is added up."
    )

    @property
    def family(self) -> AcceleratorFamily:
        return self.selector.family
