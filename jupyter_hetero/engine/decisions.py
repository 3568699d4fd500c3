"""What a cycle decides: admissions, preemptions, escalations, and why the rest still waits."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from .model import Placement

__all__ = ["Admission", "Blocker", "Decisions", "Escalation", "Fit", "Lost", "Pending", "Preemption"]


class Fit(IntEnum):
    """Outcome of nominating one workload on one flavor; larger is better."""

    NO_FIT = 0  # does not fit, even by preempting
    PREEMPT = 1  # fits once the named victims are gone
    FIT = 2  # fits now


@dataclass(frozen=True, slots=True)
class Blocker:
    """One reason a workload waits: a kind, the flavor it concerns, facts for the message, and
    how close the workload is to fitting there (1.0 = nearly fits; 0.0 = needs an admin)."""

    kind: str  # quota | cohort | capacity | reservation | held | preempting | driver | runtime | ...
    flavor: str | None
    params: dict[str, Any] = field(default_factory=dict, hash=False)
    closeness: float = 0.0


@dataclass(frozen=True, slots=True)
class Admission:
    workload: int
    placement: Placement


@dataclass(frozen=True, slots=True)
class Preemption:
    victim: int
    preemptor: int
    reason: str  # priority | reservation | reclaim
    grace_deadline: float


@dataclass(frozen=True, slots=True)
class Escalation:
    workload: int
    action: str
    priority_boost: int
    waited_s: float


@dataclass(frozen=True, slots=True)
class Pending:
    """A workload left waiting: its place in its queue, ranked blockers and an ETA; ``inadmissible``
    when every eligible flavor fails statically, so only a change of the inventory can help it."""

    workload: int
    # 1-based, among the pending workloads of its queue, in scheduling order; None: an admitter that holds it
    # (``held_by``) does not say.
    position: int | None
    blockers: tuple[Blocker, ...]
    eta: float | None = None  # earliest start time if nothing else takes the capacity first
    eta_because: int | None = None  # the running workload whose end frees the capacity
    inadmissible: bool = False  # no node of the inventory could ever hold it; waiting, quota or time cannot help
    # Launched, but held by the cluster's own admission before it may run ("kueue"): its position and blockers
    # are that admitter's.
    held_by: str | None = None


@dataclass(frozen=True, slots=True)
class Lost:
    """A running workload whose placement the inventory no longer has (its node left, or came back
    with fewer devices); the cycle charged it nowhere, and its queue's failure policy decides."""

    workload: int
    reason: str  # one English sentence; ``render(lost, "zh")`` gives it in Chinese
    kind: str = "node-gone"  # node-gone | device-gone
    params: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(slots=True)
class Decisions:
    """One cycle's output; ``lost``: running work whose placement the inventory no longer has."""

    now: float
    admissions: list[Admission] = field(default_factory=list)
    preemptions: list[Preemption] = field(default_factory=list)
    escalations: list[Escalation] = field(default_factory=list)
    pending: dict[int, Pending] = field(default_factory=dict)
    lost: list[Lost] = field(default_factory=list)
