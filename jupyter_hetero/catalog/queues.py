"""Queues: classes of service with a priority, a wait bound and preemption and failure rules."""

from __future__ import annotations

from enum import Enum

from pydantic import Field

from ..units import DurationS
from .base import CatalogModel, Localized

__all__ = ["Escalation", "EscalationAction", "FailurePolicy", "PreemptionPolicy", "Queue", "QueueClass"]


class QueueClass(str, Enum):
    EXPERIMENT = "experiment"
    TRAINING = "training"
    INFERENCE = "inference"
    URGENT = "urgent"
    BATCH = "batch"


class EscalationAction(str, Enum):
    RAISE_PRIORITY = "raise-priority"
    ALLOW_BORROWING = "allow-borrowing"
    ALLOW_PREEMPTION = "allow-preemption"
    NOTIFY = "notify"


class Escalation(CatalogModel):
    """What happens to a workload that waited longer than its queue's ``max_wait_s``."""

    action: EscalationAction
    priority_boost: int = Field(default=0, ge=0)


class PreemptionPolicy(CatalogModel):
    """Whom this queue's workloads may evict, and how they may be evicted themselves."""

    may_preempt: list[str] = Field(default_factory=list, description="Queues whose workloads this queue may evict.")
    preemptible: bool = False
    idle_kernels_only: bool = Field(default=False, description="Kernels of this queue are evicted only when idle.")
    grace_s: int = Field(default=30, ge=0)


class FailurePolicy(CatalogModel):
    """Retries with backoff, requeue on node loss and resume from checkpoint."""

    retries: int = Field(default=0, ge=0, le=100)
    backoff_s: float = Field(default=10, ge=0)
    backoff_factor: float = Field(default=2, ge=1)
    requeue_on_node_loss: bool = True
    resume_from_checkpoint: bool = False


class Queue(CatalogModel):
    """A class of service with a priority, a wait bound and preemption and failure rules."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    queue_class: QueueClass = Field(alias="class")
    display: Localized
    description: Localized
    priority: int
    max_wait_s: DurationS = Field(ge=1)
    escalation: Escalation
    preemption: PreemptionPolicy = Field(default_factory=PreemptionPolicy)
    failure: FailurePolicy = Field(default_factory=FailurePolicy)
    borrowing: bool = Field(
        default=True, description="Whether workloads may borrow unused quota of other tenants in the cohort."
    )
    reserved: dict[str, int] = Field(
        default_factory=dict, description="Devices per flavor that other queues may only borrow preemptibly."
    )
    lend_reserved: bool = Field(
        default=True, description="Whether other queues may borrow its reserved devices while they are idle (and "
        "give them back by preemption); false keeps them free for this queue alone."
    )
    priority_class: str | None = Field(
        default=None, description="Kubernetes PriorityClass of this queue's pods (Kubernetes backend)."
    )
    kueue_queue: str | None = Field(
        default=None,
        description="Kueue LocalQueue that must also admit this queue's pods (label kueue.x-k8s.io/queue-name); "
        "None: this scheduler alone admits them.",
    )
