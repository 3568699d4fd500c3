"""Choosing victims: who may be evicted for whom, in which order, and the fewest that suffice.

Who can be a victim at all: a running workload in a preemptible queue, not already being evicted,
not admitted in this cycle, and not protected by damping (chosen as a victim ``limit`` times within
the last ``window_s`` seconds). Then one of:
- ``reservation``: the preemptor's queue reserved capacity on the flavor and the victim, of another
  queue whose priority is not above the preemptor's, was admitted onto it (``on_reservation``);
- ``reclaim``: the preemptor stays within its tenant's nominal quota, its cohort's lent quota is in
  use, and the victim, of another tenant of the cohort that holds more than its nominal quota and
  of a queue whose priority is not above the preemptor's, was admitted ``borrowing``;
- ``priority``: the victim's queue priority is *strictly* lower, the preemptor's queue may preempt
  it (or escalated to ``allow-preemption``), and, in an idle-only queue, a kernel is idle. (Lent
  quota and reservations are taken back from busy kernels too: they were admitted preemptibly.)
Why this cannot ping-pong: every rule needs the victim's priority <= the preemptor's, so the victim
could only strike back at equal priority, where ``priority`` never applies and ``reclaim`` needs a
``borrowing`` placement, which a reclaimer (admitted within its nominal quota) does not have.
Damping bounds whatever cycle the rules still allow.

Victims are tried cheapest first: lowest queue class, idle kernels before busy work, work with a
checkpoint before work without, least run time lost, newest first. Once enough is freed, victims
that turn out not to be needed are given back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from .model import QueuePolicy, Workload, WorkloadKind

__all__ = ["WhatIf", "eviction_reason", "find_candidates", "loss_key", "preemptible", "protected_until", "select_victims"]


class WhatIf(Protocol):
    """A cycle state that can try a workload's admission with some running workloads removed."""

    def remove(self, workload: Workload) -> None: ...
    def restore(self, workload: Workload) -> None: ...
    def fits(self, workload: Workload, flavor: str, may_borrow: bool = True, may_use_reserved: bool = True) -> bool: ...
    def borrowing(self, tenant: str, flavor: str) -> bool: ...


def preemptible(workload: Workload, policy: QueuePolicy | None) -> bool:
    """Whether the workload's queue lets it be evicted by priority now (idle-only queues: idle kernels only)."""
    if policy is None or not policy.preemptible:
        return False
    if workload.kind == WorkloadKind.SERVER:
        return False  # a hub user's server is stopped by the hub only: nothing here could evict it
    return not (policy.idle_kernels_only and workload.kind == WorkloadKind.KERNEL and not workload.idle)


def protected_until(workload: Workload, now: float, limit: int, window_s: float) -> float | None:
    """When damping lets ``workload`` be chosen as a victim again, or None if it may be now.

    >>> from .model import Request
    >>> w = Workload(1, "t", "batch", Request(1, 1), (), 0.0, preempted_at=(100.0, 200.0, 300.0))
    >>> protected_until(w, 400.0, 3, 3600.0), protected_until(w, 3800.0, 3, 3600.0)
    (3700.0, None)
    """
    recent = sorted(at for at in workload.preempted_at if at > now - window_s)
    if len(recent) < limit:
        return None
    return recent[len(recent) - limit] + window_s


def eviction_reason(preemptor: Workload, victim: Workload, policies: dict[str, QueuePolicy], *,
                    reclaim_reservation: bool, reclaim_quota: bool, allow_any_lower: bool) -> str | None:
    """Why ``preemptor`` may evict ``victim`` (``reservation``, ``reclaim``, ``priority``), or None.

    Damping and the victim tenant's current borrowing are the caller's to check: they depend on the
    cycle, not on the pair.
    """
    if victim.preempting_until is not None or victim.placement is None or victim.id == preemptor.id:
        return None
    if victim.kind in (WorkloadKind.SERVER, WorkloadKind.SERVICE):
        # A hub user's server is stopped by the hub only, and an online service's replica is never preempted:
        # whatever they borrowed or reserved.
        return None
    mine, theirs = policies[preemptor.queue], policies.get(victim.queue)
    if theirs is None or not theirs.preemptible or theirs.priority > mine.priority:
        return None
    # What was lent is taken back from a busy kernel too: its admission said it was preemptible.
    if reclaim_reservation and victim.placement.on_reservation and victim.queue != preemptor.queue:
        return "reservation"
    if reclaim_quota and victim.placement.borrowing and victim.tenant != preemptor.tenant:
        return "reclaim"
    if not preemptible(victim, theirs):
        return None
    if theirs.priority < mine.priority and (victim.queue in mine.may_preempt or allow_any_lower):
        return "priority"
    return None


def find_candidates(state: Any, preemptor: Workload, flavor: str, *, reclaim_quota: bool, allow_any_lower: bool,
                    protected: Callable[[Workload], bool]) -> tuple[list[tuple[Workload, str]], list[tuple[Workload, str]]]:
    """Running workloads on ``flavor`` of a cycle's accounting (``state``) that ``preemptor`` may evict,
    each with the reason; and those it could evict but for damping (``protected``)."""
    policy = state.queues[preemptor.queue]
    reclaim_reservation = state.reservations.owns(preemptor.queue, flavor)
    by_queue = state.running_by_queue.get(flavor, {})
    if reclaim_quota or reclaim_reservation or allow_any_lower:
        pools = list(by_queue.values())  # borrowed capacity may sit in any queue
    else:
        pools = [by_queue.get(queue, ()) for queue in sorted(policy.may_preempt)]
    quotas = state.quotas.quotas
    cohort = quotas[preemptor.tenant].cohort if preemptor.tenant in quotas else None
    candidates, shielded = [], []
    for pool in pools:
        for running in pool:
            if running.id in state.preempting or running.id in state.admitted_now:
                continue
            if reclaim_quota and getattr(quotas.get(running.tenant), "cohort", None) != cohort:
                continue
            reason = eviction_reason(preemptor, running, state.queues, reclaim_reservation=reclaim_reservation,
                                     reclaim_quota=reclaim_quota, allow_any_lower=allow_any_lower)
            if reason is not None:
                (shielded if protected(running) else candidates).append((running, reason))
    return candidates, shielded


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
                   now: float, may_borrow: bool = True, may_use_reserved: bool = True) -> list[tuple[Workload, str]] | None:
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
            # Lent quota is taken back only while the victim's tenant still holds more than its own.
            if pair[1] == "reclaim" and not state.borrowing(pair[0].tenant, flavor):
                continue
            take(pair[0])
            chosen.append(pair)
            if state.fits(preemptor, flavor, may_borrow, may_use_reserved):
                break
        else:
            return None
        # Keep, most expensive first, every victim the preemptor turns out not to need.
        for pair in reversed(chosen[:-1]):
            give_back(pair[0])
            if state.fits(preemptor, flavor, may_borrow, may_use_reserved):
                chosen.remove(pair)
            else:
                take(pair[0])
        return chosen
    finally:
        for victim in list(out.values()):
            give_back(victim)
