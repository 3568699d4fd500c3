"""Lifecycle rules of the scheduler, kept free of I/O so each rule is one small function.

    placement_problem(row.placement, inventory)      # "node gpu-t4-0 is no longer in the inventory" | None
    after_attempt(row, "failed", "exit code 3", queue.failure, retryable=True)   # -> Next(state="queued", ...)

The failure policy counts why attempts ended apart: only the job's own failures use up its
retries; a preemption or the loss of its node is not its fault and never does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...catalog import FailurePolicy
from ...store import ACTIVE_STATES
from ...store.tables import WorkloadRow
from .inventory import Inventory

# A service replica that exits starts again after this, doubling each time up to the cap.
SERVICE_BACKOFF_S = 1.0
SERVICE_BACKOFF_MAX_S = 60.0
# A launch the platform failed (its API answered 5xx or not at all) waits this long, doubling, up to the most.
LAUNCH_BACKOFF_S = 2.0
LAUNCH_BACKOFF_MAX_S = 300.0

__all__ = ["Next", "after_attempt", "may_lose", "may_requeue", "may_stop", "placement_problem"]


# A cancel always wins. The API records it on the event loop while a tick, in its worker thread, may be
# deciding on an earlier read of the same row, so each of the tick's writes below is made only if its
# rule still holds for the row as that write's own transaction reads it (Repository.update_workload_if).

def may_stop(row: WorkloadRow) -> bool:
    """Whether the scheduler may record a stop of its own (a preemption, a time limit, a failed replica):
    the workload holds a placement and nothing stops it yet, a cancel least of all."""
    return row.state in ACTIVE_STATES and row.stopping is None


def may_lose(row: WorkloadRow) -> bool:
    """Whether a lost node ends the workload's attempt as lost: it holds a placement and is not being
    cancelled (a lost node outranks a preemption or a time limit, never a cancel)."""
    return row.state in ACTIVE_STATES and row.stopping != "cancel"


def may_requeue(row: WorkloadRow) -> bool:
    """Whether a workload whose attempt ended may go back to its queue: no cancel came meanwhile."""
    return row.stopping != "cancel" and row.state != "cancelled"


def placement_problem(placement: dict[str, Any], inventory: Inventory) -> str | None:
    """Why a stored placement can no longer hold (its node is gone, lost or has fewer devices), or None."""
    for slot in placement.get("slots", ()):
        name = slot["node"]
        view = inventory.node(name)
        if view is None:
            return f"node {name} is no longer in the inventory"
        if view.state == "lost":
            return f"node {name} was lost"
        accelerator = view.capability.accelerator
        count = accelerator.count if accelerator else 0
        missing = sorted(d["index"] for d in slot.get("devices", ()) if d["index"] >= count)
        if missing:
            return (f"node {name} now has {count} device(s); device {', '.join(map(str, missing))} of this "
                    f"placement no longer exists")
    return None


@dataclass(frozen=True)
class Next:
    """What follows an attempt: the workload's next state, the event that records it, and the counts."""

    state: str  # queued | succeeded | failed | cancelled | lost
    event: str
    reason: str
    counts: dict[str, Any] = field(default_factory=dict)  # failures / preemptions / node_losses (+ preempted_at)
    retry_in_s: float | None = None  # backoff before a retry may be admitted
    said_first: tuple[tuple[str, str], ...] = ()  # events (type, reason) recorded just before ``event``

    @property
    def final(self) -> bool:
        return self.state != "queued"


def after_attempt(row: WorkloadRow, outcome: str, reason: str, policy: FailurePolicy | None, *,
                  retryable: bool = True, now_wall: float = 0.0) -> Next:
    """Apply the queue's failure policy to an attempt that ended with ``outcome``."""
    if outcome == "succeeded":
        return Next("succeeded", "succeeded", reason)
    if outcome == "cancelled":
        return Next("cancelled", "cancelled", reason)
    if outcome == "preempted":
        counts = {"preemptions": (row.preemptions or 0) + 1, "preempted_at": [*(row.preempted_at or ()), now_wall]}
        return Next("queued", "requeued", f"{row.reason or 'preempted'}; back in queue {row.queue}", counts,
                    said_first=(("preempted", row.reason or "preempted"),))
    if row.kind == "service" and outcome in ("succeeded", "failed"):
        # A service's replica is meant to run until it is scaled down: whatever ended it, it starts again.
        failures = (row.failures or 0) + 1
        delay = min(SERVICE_BACKOFF_S * 2 ** min(failures - 1, 10), SERVICE_BACKOFF_MAX_S)
        return Next("queued", "restarting", f"replica exited ({reason}); restart {failures} in {delay:g} s",
                    {"failures": failures}, retry_in_s=delay)
    if outcome == "unlaunched":
        # The platform could not be reached to launch it: back to the queue, no retry used, waiting longer each
        # time the platform fails it in a row (attempts that neither failed, nor were preempted or lost).
        tries = row.attempts - (row.failures or 0) - (row.preemptions or 0) - (row.node_losses or 0)
        delay = min(LAUNCH_BACKOFF_S * 2 ** min(max(tries - 1, 0), 10), LAUNCH_BACKOFF_MAX_S)
        return Next("queued", "requeued", f"{reason}; the platform's fault, so no retry is used: trying again in "
                                          f"{delay:g} s", retry_in_s=delay)
    if outcome == "lost":
        counts = {"node_losses": (row.node_losses or 0) + 1}
        # Requeued, "lost" is only said first: as a state it is final, and a cancel would take it at its word.
        if row.kind == "service":  # replaced on another node, at once
            why = f"lost ({reason}); a replacement replica is placed"
            return Next("queued", "requeued", why, counts, said_first=(("lost", why),))
        if policy and policy.requeue_on_node_loss:
            why = f"lost ({reason}); requeued by queue {row.queue}'s policy"
            return Next("queued", "requeued", why, counts, said_first=(("lost", why),))
        return Next("lost", "lost", reason, counts)
    failures = (row.failures or 0) + 1
    counts = {"failures": failures}
    if retryable and policy and failures <= policy.retries:
        delay = policy.backoff_s * policy.backoff_factor ** (failures - 1)
        return Next("queued", "retrying", f"attempt {row.attempts} failed ({reason}); retry {failures} of "
                                          f"{policy.retries} in {delay:g} s", counts, retry_in_s=delay)
    tries = f" after {row.attempts} attempt(s)" if row.attempts > 1 else ""
    if row.attempts > failures:
        tries += f", {failures} of them failed"
    return Next("failed", "failed", f"{reason}{tries}", counts)
