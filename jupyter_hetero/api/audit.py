"""What the REST API answers about governance (the audit log, alerts), as pydantic models (see ``responses.py``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .responses import Answer

__all__ = ["Alert", "AuditEntry", "AuditPage", "AuditVerdict", "CapacityAdvice", "CatalogChange", "CatalogReload",
           "CatalogSaid", "Onboarding", "Usage", "UsageRow"]


class AuditEntry(Answer):
    """One admin action or denial; its hash covers its fields and the entry before it."""

    id: int
    at: float = Field(description="Epoch seconds.")
    actor: str
    action: str = Field(description="e.g. workload.preempt, service.delete, audit.read.")
    target: str = Field(description="e.g. workload/7, service/resnet, audit.")
    outcome: str = Field(description="allowed, denied, or done (by the scheduler itself).")
    detail: dict[str, Any]
    prev_hash: str
    hash: str


class AuditPage(Answer):
    entries: list[AuditEntry] = Field(description="Oldest first.")
    next_after: int | None = Field(description="Pass as ?after= for the next page; None on the last one.")


class AuditVerdict(Answer):
    """Whether every entry still hashes to what it was written with and follows the one before it."""

    intact: bool
    entries: int = Field(description="Entries checked (up to the first bad one).")
    first_bad: int | None = Field(description="The first entry that breaks the chain.")
    problem: str | None = Field(description="What is wrong with it, in words.")


class Alert(Answer):
    """A rule that found something wrong with a subject, from when it fired until it resolved."""

    id: int
    rule: str = Field(description="The catalog's alert rule.")
    kind: Literal["queue-wait", "node-lost", "failure-rate", "quota-nearly-exhausted", "device-memory-near-limit",
                  "onboarding-failed"]
    subject: str = Field(description="queue/<name>, node/<name>, tenant/<name>/<flavor>, workload/<id> or, for "
                                     "onboarding, <kind>/<name>.")
    tenant: str | None = Field(description="Whose it is, when it is one tenant's.")
    severity: Literal["info", "warning", "critical"]
    state: Literal["firing", "resolved"]
    message: str
    message_zh: str
    figures: dict[str, Any] = Field(description="What the rule found (the message is made from them).")
    fired_at: float
    resolved_at: float | None
    deliveries: list[dict[str, Any]] = Field(description="Each webhook call: status, at, outcome.")


class UsageRow(Answer):
    """What one group held over the period."""

    key: str = Field(description="The tenant, user, queue, template, cost centre or flavor.")
    cost_centre: str | None = Field(default=None, description="The tenant's, when grouped by tenant.")
    device_hours: float = Field(description="Devices held (fractions as such) times hours.")
    accelerator_hours: float = Field(description="Device-hours normalised by each flavor's accelerator_weight "
                                                 "(an A100 80GB is 1).")
    idle_device_hours: float = Field(description="The held device-hours its devices measurably did not use.")
    unmeasured_device_hours: float = Field(description="Device-hours whose use was not measured (emulated, pods).")
    core_hours: float
    cost: float = Field(description="At the catalog's price_per_hour: per device-hour, per core-hour for CPU "
                                    "flavors.")
    attempts: int


class Usage(Answer):
    by: Literal["tenant", "user", "queue", "template", "cost_centre", "flavor"]
    since: float
    until: float
    scope: Literal["all", "tenant", "own"] = Field(description="Whose attempts are counted: everyone's (platform "
                                                               "admins), the tenant's (its admins), one's own.")
    rows: list[UsageRow] = Field(description="Costliest first.")
    total: dict[str, float]


class QueueWaits(Answer):
    queue: str
    max_wait_s: float | None
    recorded_p95_s: float | None = Field(description="As it happened (a workload still waiting counts until now).")
    replayed_p95_s: float | None = Field(description="Replaying the recorded workload on the nodes as they are now; "
                                                     "None when some never start.")
    workloads: int
    over_max_wait: bool


class MoreCapacity(Answer):
    queue: str
    flavor: str | None = Field(description="The flavor its waiting workloads asked for first.")
    nodes: int | None = Field(description="Nodes like ``like`` to add; None when no number up to the limit is enough.")
    devices: int | None
    like: str | None
    replayed_p95_s: float | None = Field(description="The queue's p95 wait replayed with them.")
    max_wait_s: float
    note: str | None = None


class ShiftFlavor(Answer):
    queue: str
    template: str = Field(description="Whose workloads could also be offered ``to_flavor``: one the template's "
                                      "runtime variants run on, which they did not ask for.")
    to_flavor: str
    replayed_p95_s: float | None
    max_wait_s: float


class LessCapacity(Answer):
    flavor: str
    node: str = Field(description="A node whose devices could be released: the replay without it keeps every queue "
                                  "within its max wait.")
    devices: int
    allocated_share: float = Field(description="Share of the flavor's device-hours allocated over the period.")
    of_devices: int


class CapacityAdvice(Answer):
    quantile: float
    period_s: float
    queues: list[QueueWaits]
    add: list[MoreCapacity]
    shift: list[ShiftFlavor] = Field(description="Templates that, also offering a compatible flavor, would bring a "
                                                 "queue back within its max wait on today's nodes.")
    release: list[LessCapacity]


class OnboardingStep(Answer):
    name: str = Field(description="node: capability, driver, sample, fault, metrics; tenant: quota, permissions, "
                                  "member-submits, non-member-refused; chip: nodes, facts, flavor, onboarded; "
                                  "framework: variant, node, imports; model: node, run, outputs, latency, memory.")
    ok: bool = Field(description="False only when the step failed (a skipped step is no failure).")
    status: Literal["passed", "failed", "skipped"] = Field(
        description="skipped: the check cannot run here; its evidence says what it needs ('skipped: needs ...').")
    evidence: str
    at: float


class Onboarding(Answer):
    """A node's or tenant's onboarding checklist with the evidence of each step."""

    kind: Literal["node", "tenant", "chip", "framework", "model"]
    name: str
    state: Literal["requested", "verifying", "accepted", "rejected"]
    failed_step: str | None
    steps: list[OnboardingStep]
    by: str
    updated_at: float


class CatalogChange(Answer):
    action: str = Field(description="The audit action: tenant.added, tenant.member-added, quota.changed, "
                                    "queue.removed, template.changed, flavor.added, platform-admin.added, ...")
    target: str
    detail: dict[str, Any] = Field(description="What changed, before and after.")
    message: str
    message_zh: str


class CatalogSaid(Answer):
    message: str = Field(description="What the reload says rather than does: a tenant over a lowered quota keeps its "
                                     "running work, and its new work waits.")
    message_zh: str


class CatalogReload(Answer):
    file: str
    version: int = Field(description="The catalog's version once taken up.")
    applies: str = Field(description="When the changes take effect: at the next tick (onboarding and alerts at once).")
    applies_zh: str
    in_effect: bool = Field(description="Whether the scheduler had taken the catalog up when the answer was sent.")
    changes: list[CatalogChange] = Field(description="Each change, as the audit log records it with the reloading "
                                                     "admin as its actor.")
    said: list[CatalogSaid]
    applied: list[str] = Field(description="Sections changed.")
    unchanged: list[str]
