"""Choosing victims: who may be evicted for whom, in which order, and the fewest that suffice.

Rules, in the order they are applied:
- a workload already being evicted is never chosen again;
- capacity reserved for a queue is taken back from workloads that borrowed it (any queue);
- quota lent to a cohort is reclaimed from tenants that borrowed it;
- otherwise only workloads of a *strictly lower* queue priority, in a queue the preemptor's queue
  may preempt, that is preemptible (kernels of idle-only queues just when idle). Strictness is
  what rules out ping-pong: A can evict B only if B could never evict A.
Victims are tried cheapest first: lowest queue class, idle kernels before busy work, work with a
checkpoint before work without, least run time lost, newest first. Once enough is freed, victims
that turn out not to be needed are given back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from .model import QueuePolicy, Workload, WorkloadKind

__all__ = ["WhatIf", "eviction_reason", "loss_key", "select_victims"]


class WhatIf(Protocol):
    """A cycle state that can try a workload's admission with some running workloads removed."""

    def remove(self, workload: Workload) -> None: ...
    def restore(self, workload: Workload) -> None: ...
    def fits(self, workload: Workload, flavor: str, may_borrow: bool = True) -> bool: ...


def eviction_reason(preemptor: Workload, victim: Workload, policies: dict[str, QueuePolicy], *,
                    reclaim_reservation: bool, reclaim_quota: bool, allow_any_lower: bool) -> str | None:
    """Why ``preemptor`` may evict ``victim`` (``reservation``, ``reclaim``, ``priority``), or None."""
    if victim.preempting_until is not None or victim.placement is None or victim.id == preemptor.id:
        return None
    if reclaim_reservation and victim.placement.on_reservation and victim.queue != preemptor.queue:
        return "reservation"
    if reclaim_quota and victim.placement.borrowing and victim.tenant != preemptor.tenant:
        return "reclaim"
    mine, theirs = policies[preemptor.queue], policies.get(victim.queue)
    if theirs is None or theirs.priority >= mine.priority or not theirs.preemptible:
        return None
    if theirs.idle_kernels_only and victim.kind == WorkloadKind.KERNEL and not victim.idle:
        return None
    if victim.queue in mine.may_preempt or allow_any_lower:
        return "priority"
    return None


def loss_key(victim: Workload, policies: dict[str, QueuePolicy], now: float) -> tuple:
    """Sort key, cheapest eviction first."""
    started = victim.started_at if victim.started_at is not None else now
    saved = max(started, victim.checkpoint_at or started)
    return (
        policies[victim.queue].priority if victim.queue in policies else 0,
        0 if (victim.kind == WorkloadKind.KERNEL and victim.idle) else 1,
        0 if victim.checkpoint_at is not None else 1,
        now - saved,
        -started,
        victim.id,
    )


def select_victims(state: WhatIf, preemptor: Workload, flavor: str,
                   candidates: Iterable[tuple[Workload, str]], policies: dict[str, QueuePolicy],
                   now: float, may_borrow: bool = True) -> list[tuple[Workload, str]] | None:
    """The cheapest set of (victim, reason) whose eviction lets ``preemptor`` fit, or None.

    The state is left exactly as it was found.
    """
    # Borrowed capacity (a reservation, lent quota) is taken back before anyone's own share.
    ordered = sorted(candidates, key=lambda pair: (pair[1] == "priority", loss_key(pair[0], policies, now)))
    out: dict[int, Workload] = {}  # removed right now, to be restored whatever happens

    def take(victim: Workload) -> None:
        state.remove(victim)
        out[victim.id] = victim

    def give_back(victim: Workload) -> None:
        state.restore(victim)
        del out[victim.id]

    try:
        chosen: list[tuple[Workload, str]] = []
        for pair in ordered:
            take(pair[0])
            chosen.append(pair)
            if state.fits(preemptor, flavor, may_borrow):
                break
        else:
            return None
        # Keep, most expensive first, every victim the preemptor turns out not to need.
        for pair in reversed(chosen[:-1]):
            give_back(pair[0])
            if state.fits(preemptor, flavor, may_borrow):
                chosen.remove(pair)
            else:
                take(pair[0])
        return chosen
    finally:
        for victim in list(out.values()):
            give_back(victim)
