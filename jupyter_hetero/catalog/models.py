"""The catalog: flavors, templates, queues and tenants, declared once by the platform team.

Everything a user can request and everything the scheduler enforces comes from here. Models
are strict (unknown keys are errors) so a typo in a catalog file is reported, not ignored.
Each part has its module (:mod:`.flavors`, :mod:`.templates`, :mod:`.queues`, :mod:`.tenants`);
this one holds the platform's own rules (onboarding, models, alerts) and the :class:`Catalog` that
ties them together, and re-exports every part.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from ..capability import NodeCapability
from ..units import DurationS
from .base import CatalogModel, Localized, PackageRequirement
from .flavors import Flavor, FlavorSelector, LabelRequirement
from .queues import Escalation, EscalationAction, FailurePolicy, PreemptionPolicy, Queue, QueueClass
from .templates import (
    AdvancedParameter,
    CanaryPolicy,
    MetricTarget,
    NetworkRequirement,
    ResourceRequest,
    RuntimeVariant,
    TaskType,
    Template,
    WorkloadKind,
)
from .tenants import FlavorQuota, Resources, Role, Tenant

__all__ = [
    "DEFAULT_ALERTS",
    "AdvancedParameter",
    "AlertKind",
    "AlertRule",
    "CanaryPolicy",
    "Catalog",
    "Escalation",
    "EscalationAction",
    "FailurePolicy",
    "Flavor",
    "FlavorQuota",
    "FlavorSelector",
    "LabelRequirement",
    "Localized",
    "MetricTarget",
    "ModelEntry",
    "NetworkRequirement",
    "Onboarding",
    "PackageRequirement",
    "PreemptionPolicy",
    "Queue",
    "QueueClass",
    "ResourceRequest",
    "Resources",
    "Role",
    "RuntimeVariant",
    "TaskType",
    "Template",
    "Tenant",
    "WorkloadKind",
]


class Onboarding(CatalogModel):
    """How new nodes join: with ``nodes: required`` a node takes no work until it passed its checklist (capability
    recorded, driver at or above ``min_driver`` of its family, a sample job and a failing one run on it, its
    metrics visible); emulated nodes are accepted at once when ``accept_emulated``."""

    nodes: Literal["off", "required"] = "off"
    accept_emulated: bool = Field(default=True, description="Emulated nodes (demos) are accepted at once, without "
                                                            "their checklist.")
    min_driver: dict[str, str] = Field(default_factory=dict, description="Per accelerator family: nvidia, ascend, "
                                                                         "amd ...")
    sample_timeout_s: DurationS = Field(default=300, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data):
        # One word per concept: "admit" is the engine's (a workload may start); a node is accepted by onboarding.
        if isinstance(data, dict) and "pre_admit_emulated" in data:
            raise ValueError("pre_admit_emulated is now accept_emulated: write "
                             f"'accept_emulated: {str(data['pre_admit_emulated']).lower()}' instead")
        return data


class ModelEntry(CatalogModel):
    """A model the platform serves, onboarded by running it on a node its template matches: its outputs for the
    reference ``inputs`` within ``tolerance`` of ``expected``, its p95 latency and peak memory within bounds."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    template: str = "online-inference"
    code: str = Field(min_length=1, description="Python source defining predict(inputs) -> outputs.")
    inputs: list[Any] = Field(min_length=1, description="Reference inputs, one call each.")
    expected: list[Any] = Field(min_length=1, description="The reference outputs, one per input.")
    tolerance: float = Field(default=1e-6, ge=0, description="Largest absolute difference allowed, number by number.")
    max_latency_ms: float = Field(default=1000, gt=0, description="Bound of the p95 latency of one call.")
    max_memory_mib: float = Field(default=4096, gt=0, description="Bound of the process's peak resident memory.")
    repeats: int = Field(default=20, ge=1, le=10_000, description="Calls per input, for the latency.")

    @model_validator(mode="after")
    def _pairs(self) -> ModelEntry:
        if len(self.inputs) != len(self.expected):
            raise ValueError("inputs and expected must have as many entries")
        return self


AlertKind = Literal["queue-wait", "node-lost", "failure-rate", "quota-nearly-exhausted", "device-memory-near-limit",
                    "onboarding-failed"]


class AlertRule(CatalogModel):
    """What the server watches for, each evaluation; every subject it finds fires one alert until it resolves.

    ``queue-wait``: a queue's longest-waiting workload past the queue's ``max_wait``; ``node-lost``: a node lost
    or not ready; ``failure-rate``: a queue's failed share of the attempts ended in ``window_s`` over
    ``threshold`` (with at least ``min_attempts``); ``quota-nearly-exhausted``: a tenant's devices in use at
    ``threshold`` of its quota of a flavor; ``device-memory-near-limit``: a running replica's device memory at
    ``threshold`` of its devices' (where measured); ``onboarding-failed``: a node, chip, framework, model or
    tenant rejected by its onboarding checklist."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    kind: AlertKind
    severity: Literal["info", "warning", "critical"] = "warning"
    threshold: float | None = Field(default=None, gt=0, description="A share (0..1) for the kinds that have one.")
    window_s: DurationS = Field(default=3600, ge=1)
    min_attempts: int = Field(default=5, ge=1)
    queues: list[str] = Field(default_factory=list, description="Only these queues (every queue when empty).")


DEFAULT_ALERTS = [
    AlertRule(name="queue-wait", kind="queue-wait"),
    AlertRule(name="node-lost", kind="node-lost", severity="critical"),
    AlertRule(name="failure-rate", kind="failure-rate", threshold=0.25),
    AlertRule(name="quota-nearly-exhausted", kind="quota-nearly-exhausted", threshold=0.9, severity="info"),
    AlertRule(name="device-memory-near-limit", kind="device-memory-near-limit", threshold=0.9),
    AlertRule(name="onboarding-failed", kind="onboarding-failed"),
]


class Catalog(CatalogModel):
    """The whole catalog; cross-references are checked by :func:`jupyter_hetero.catalog.validate`."""

    version: Literal[1] = 1
    flavors: list[Flavor] = Field(min_length=1)
    templates: list[Template] = Field(min_length=1)
    queues: list[Queue] = Field(min_length=1)
    tenants: list[Tenant] = Field(min_length=1)
    platform_admins: list[str] = Field(default_factory=list)
    onboarding: Onboarding = Field(default_factory=Onboarding)
    models: list[ModelEntry] = Field(default_factory=list, description="Models onboarded against a reference.")
    alerts: list[AlertRule] = Field(default_factory=lambda: list(DEFAULT_ALERTS),
                                    description="What the server alerts on; a catalog that names none gets these.")
    platform_admin_groups: list[str] = Field(default_factory=list)
    default_tenant: str | None = Field(
        default=None,
        description="Tenant of the server's owner when no tenant names them (the single-user default); other users "
        "whom no tenant names belong to none.",
    )
    _by_name: dict[str, dict] = PrivateAttr(default_factory=dict)

    def flavor(self, name: str) -> Flavor | None:
        return self._index("flavors").get(name)

    def template(self, name: str) -> Template | None:
        return self._index("templates").get(name)

    def queue(self, name: str) -> Queue | None:
        return self._index("queues").get(name)

    def tenant(self, name: str) -> Tenant | None:
        return self._index("tenants").get(name)

    def flavor_of(self, node: NodeCapability) -> Flavor | None:
        """The first flavor, in catalog order, whose selector the node satisfies."""
        return next((flavor for flavor in self.flavors if flavor.selector.matches(node)), None)

    def _index(self, field: str) -> dict:
        if field not in self._by_name:
            self._by_name[field] = {item.name: item for item in getattr(self, field)}
        return self._by_name[field]
