"""The scheduling cycle: a pure function from a snapshot to decisions.

    decisions = Engine().cycle(snapshot)

1. Escalate: workloads that waited past their queue's ``max_wait_s`` get its escalation.
2. Order heads: effective priority, then the tenant's weighted dominant share (DRF), then
   submit time, then id.
3. Nominate each head on its eligible flavors in template order: static match, quota,
   reservation, capacity. ``FIT`` admits at once and charges the snapshot.
4. A head that fits nowhere may preempt (see :mod:`.preemption` for who may evict whom, and
   damping); a head that waited past its queue's bound holds its preferred flavor so smaller work
   cannot starve it (:mod:`.holds`).
5. Every workload left waiting gets its position, ranked blockers and an ETA; one whose every
   eligible flavor fails statically (no node of the inventory could ever hold it) is flagged
   ``inadmissible``, since waiting cannot help it.
Running work whose node or devices left the inventory is charged nowhere and reported in
``Decisions.lost`` (:mod:`.accounting`). The snapshot is never mutated; the same snapshot always
gives the same decisions.
"""

from __future__ import annotations

import copy
import heapq
from collections import deque
from dataclasses import dataclass

from .accounting import Accounting
from .blockers import capacity_blocker, exceeds_quota_blocker, inadmissible, quota_blocker, static_blockers
from .capacity import NodeScorer, Policy
from .decisions import Admission, Blocker, Decisions, Escalation, Pending, Preemption
from .explain import estimate_eta, rank
from .holds import Hold, hold, release
from .model import ZERO, Placement, Res, Snapshot, Workload
from .preemption import find_candidates, protected_until, select_victims
from .quota import QuotaVerdict

__all__ = ["Engine", "free_capacity"]


@dataclass(slots=True)
class _Head:
    workload: Workload
    priority: int
    may_borrow: bool
    allow_any_lower: bool
    starving: bool
    # Must stay on what nobody can take back (its own nominal quota, unreserved capacity): its queue
    # is not preemptible, or damping protects it now. Lent quota and others' reservations are lent
    # on the condition that they can be taken back.
    guaranteed: bool = False
    no_borrow: str | None = None  # why a queue that borrows may not now: not-preemptible | protected
    # Whether its queue ever lets it borrow (now, or once escalated); a never-preempted queue never does, which
    # ``never_borrows`` says ("not-preemptible") where the queue would borrow otherwise.
    ever_borrows: bool = True
    never_borrows: str | None = None


class Engine:
    """Scheduling decisions over snapshots; holds only configuration, never state between cycles.

    ``preemption_limit``/``preemption_window_s``: a workload chosen as a victim that many times within
    the window is not chosen again until the window passes (damping); a preemptor that fits only by
    evicting it waits, with a ``protected`` blocker. ``topology=False`` places several whole devices
    without regard to their link domains and NUMA nodes (the lowest free indexes): a baseline for benchmarks.
    """

    def __init__(self, *, policy: str = Policy.FRAGMENTATION, node_scorer: NodeScorer | None = None,
                 eta: bool = True, preemption_limit: int = 3, preemption_window_s: float = 3600.0,
                 topology: bool = True):
        if policy not in Policy.ALL:
            raise ValueError(f"unknown placement policy {policy!r}; choose one of {', '.join(Policy.ALL)}")
        if preemption_limit < 1:
            raise ValueError(f"preemption_limit must be at least 1, not {preemption_limit!r}")
        if preemption_window_s < 0:
            raise ValueError(f"preemption_window_s must not be negative, not {preemption_window_s!r}")
        self.policy = policy
        self.node_scorer = node_scorer
        self.eta = eta
        self.preemption_limit = preemption_limit
        self.preemption_window_s = preemption_window_s
        self.topology = topology

    def cycle(self, snapshot: Snapshot) -> Decisions:
        state = Accounting(snapshot, self.policy, self.node_scorer, topology=self.topology)
        decisions = Decisions(now=snapshot.now)
        heads = self._escalate(snapshot, decisions)
        blocked: dict[int, tuple[Blocker, ...]] = {}
        order: list[_Head] = []
        holds: dict[str, list[Hold]] = {}  # flavor -> claims of starving heads
        failed: dict[tuple, tuple[Blocker, ...]] = {}
        failed_nominal: set[tuple] = set()
        for level in self._levels(heads):
            # Pass 1: what fits within its tenant's nominal quota, without evicting anyone. Lenders
            # reclaiming their share so come before borrowers, who would otherwise take it again.
            rest = []
            for head in self._fair(level, state):
                key = _memo_key(head)
                if key in failed_nominal or not self._nominate(state, head, holds, decisions, nominal_only=True)[0]:
                    failed_nominal.add(key)
                    rest.append(head)
            # Pass 2: the rest may borrow (if their queue lets them) and preempt.
            for head in self._fair(rest, state):
                workload = head.workload
                key = _memo_key(head)
                # Within a cycle capacity only shrinks and holds only grow: a shape that failed fails again.
                if key in failed:
                    blocked[workload.id] = failed[key]
                    order.append(head)
                    continue
                admitted, blockers = self._nominate(state, head, holds, decisions)
                if admitted:
                    continue
                if not any(b.kind == "preempting" for b in blockers):
                    failed[key] = blockers
                blocked[workload.id] = blockers
                order.append(head)
        self._explain(state, order, blocked, decisions)
        decisions.lost = state.lost
        return decisions

    # -- 1. escalation -----------------------------------------------------------------------

    def _escalate(self, snapshot: Snapshot, decisions: Decisions) -> list[_Head]:
        heads = []
        for workload in snapshot.pending:
            queue = snapshot.queues.get(workload.queue)
            if queue is None:
                continue
            waited = snapshot.now - workload.submitted_at
            starving = waited >= queue.max_wait_s
            if starving and not workload.escalated:
                boost = queue.priority_boost if queue.escalation == "raise-priority" else 0
                decisions.escalations.append(Escalation(workload.id, queue.escalation, boost, waited))
            escalated = starving or workload.escalated
            boost = workload.priority_boost or (queue.priority_boost if escalated and queue.escalation == "raise-priority" else 0)
            would_borrow = queue.can_borrow or (escalated and queue.escalation == "allow-borrowing")
            could_borrow = queue.can_borrow or queue.escalation == "allow-borrowing"  # now or once escalated
            protected = queue.preemptible and bool(workload.preempted_at) and self._protected(workload, snapshot.now) is not None
            guaranteed = not queue.preemptible or protected
            heads.append(_Head(
                workload=workload,
                priority=queue.priority + boost,
                may_borrow=would_borrow and not guaranteed,
                allow_any_lower=escalated and queue.escalation == "allow-preemption",
                starving=starving,
                guaranteed=guaranteed,
                no_borrow=("protected" if protected else "not-preemptible") if guaranteed and would_borrow else None,
                ever_borrows=queue.preemptible and could_borrow,
                never_borrows=None if queue.preemptible or not could_borrow else "not-preemptible",
            ))
        return heads

    def _protected(self, workload: Workload, now: float) -> float | None:
        return protected_until(workload, now, self.preemption_limit, self.preemption_window_s)

    # -- 2. order ----------------------------------------------------------------------------

    @staticmethod
    def _levels(heads: list[_Head]) -> list[list[_Head]]:
        """Heads grouped by effective priority, highest first, each group by submit time."""
        levels: dict[int, list[_Head]] = {}
        for head in sorted(heads, key=lambda h: (h.workload.submitted_at, h.workload.id)):
            levels.setdefault(head.priority, []).append(head)
        return [levels[priority] for priority in sorted(levels, reverse=True)]

    @staticmethod
    def _fair(heads: list[_Head], state: Accounting):
        """The heads of one priority; the tenant with the smallest weighted share goes next."""
        tenants: dict[str, deque[_Head]] = {}
        for head in heads:
            tenants.setdefault(head.workload.tenant, deque()).append(head)
        heap = [(state.share(tenant), tenant) for tenant in sorted(tenants)]
        heapq.heapify(heap)
        while heap:
            _share, tenant = heapq.heappop(heap)
            queue = tenants[tenant]
            yield queue.popleft()
            if queue:
                heapq.heappush(heap, (state.share(tenant), tenant))

    # -- 3./4. nominate, admit, preempt ------------------------------------------------------

    def _nominate(self, state: Accounting, head: _Head, holds: dict[str, list[Hold]],
                  decisions: Decisions, *, nominal_only: bool = False) -> tuple[bool, tuple[Blocker, ...]]:
        """Admit ``head`` on the first flavor where it fits; else (unless ``nominal_only``) preempt or
        hold, and say why it waits."""
        workload = head.workload
        request, total = workload.request, workload.request.total
        blockers: list[Blocker] = []
        preemptable: list[tuple[str, str | None]] = []  # (flavor, tenant a hold there would be limited to)
        for flavor in workload.flavors:
            eligibility = state.cluster.eligibility(flavor, request, workload.constraints)
            if not eligibility.nodes:
                blockers.extend(static_blockers(flavor, eligibility.mismatches))
                continue
            claim = next((c for c in holds.get(flavor, ()) if c.blocks(head)), None)
            # A hold never keeps a queue from its own reservation: the holder could not use it anyway.
            if claim is not None and not (total.dev and total.dev <= state.reservations.unused(workload.queue, flavor)):
                blockers.append(Blocker("held", flavor, {"holder": claim.holder}, 0.5))
                continue
            check = state.quotas.check(workload.tenant, flavor, total, may_borrow=head.may_borrow and not nominal_only)
            if not check.ok and check.verdict != QuotaVerdict.NO_QUOTA and (resource := state.quotas.beyond_ceiling(
                    workload.tenant, flavor, total, may_borrow=head.ever_borrows)):
                # No wait and no preemption ever gives the tenant this much: say so, and preempt nobody for it.
                blockers.append(exceeds_quota_blocker(state, workload, flavor, total, resource, head.ever_borrows,
                                                      head.never_borrows))
                continue
            if not check.ok:
                blockers.append(quota_blocker(state, workload, flavor, check, total, head.no_borrow))
                if check.verdict >= QuotaVerdict.OVER_LIMIT:
                    preemptable.append((flavor, workload.tenant if self._own_quota_blocks(state, head, flavor, check) else None))
                continue
            outstanding = state.reservations.outstanding(flavor, excluding=workload.queue) if total.dev else 0
            left = state.cluster.free_devices_milli(flavor) - total.dev if outstanding else 0
            on_reservation = outstanding > 0 and left < outstanding
            # What a reserving queue lends none of is out of reach; what it lends, a guaranteed workload leaves alone.
            kept = state.reservations.outstanding(flavor, excluding=workload.queue, lent_too=False) if on_reservation else 0
            slots = None if on_reservation and (head.guaranteed or left < kept) else \
                state.cluster.place(flavor, request, workload.constraints)
            if slots is not None:
                placement = Placement(flavor, slots, on_reservation=on_reservation, borrowing=check.borrowing)
                state.charge(workload, placement, allocated=True)  # place() allocated the slots already
                admitted = copy.copy(workload)
                admitted.placement, admitted.started_at = placement, state.now
                admitted.expected_end = state.now + workload.runtime_s
                state.add_running(admitted)
                state.admitted_now.add(workload.id)
                decisions.admissions.append(Admission(workload.id, placement))
                release(holds, workload.id)
                return True, ()
            blockers.append(capacity_blocker(state, flavor, workload, outstanding))
            preemptable.append((flavor, None))
        if nominal_only:
            hold(holds, head, preemptable)  # a starving head keeps its flavor from pass 1 on
            return False, ()
        return False, self._preempt_or_hold(state, head, preemptable, blockers, holds, decisions)

    @staticmethod
    def _own_quota_blocks(state: Accounting, head: _Head, flavor: str, check) -> bool:
        """Whether only the head's own tenant's quota stops it (not the cohort, not capacity)."""
        if not head.starving or check.verdict != QuotaVerdict.OVER_LIMIT:
            return False  # only a starving head holds; the answer matters for nobody else
        if not head.may_borrow:
            return True
        # In pass 1 the check left borrowing out; what stops the head is what would stop it in pass 2.
        workload = head.workload
        return state.quotas.check(workload.tenant, flavor, workload.request.total).verdict == QuotaVerdict.OVER_LIMIT

    def _preempt_or_hold(self, state: Accounting, head: _Head, flavors: list[tuple[str, str | None]],
                         blockers: list[Blocker], holds: dict[str, list[Hold]],
                         decisions: Decisions) -> tuple[Blocker, ...]:
        workload = head.workload
        terms = (head.may_borrow, not head.guaranteed)  # may borrow quota, may use others' reservations
        # Victims already leaving for this workload: wait for them rather than evict more.
        for flavor, _scope in flavors if workload.id in state.evicting_for else ():
            evicting = [w for w in state.evicting_for[workload.id] if w.placement and w.placement.flavor == flavor]
            if evicting and _fits_without(state, workload, flavor, evicting, *terms):
                grace = max(state.preempting[w.id] for w in evicting) - state.now
                return (Blocker("preempting", flavor, {"count": len(evicting), "grace_s": int(max(grace, 0))}, 0.9),
                        *rank(blockers))
        protected: Blocker | None = None
        for flavor, _scope in flavors:
            # Reclaiming lent quota is for a tenant that stays within its own nominal quota.
            reclaim_quota = state.quotas.check(workload.tenant, flavor, workload.request.total,
                                               may_borrow=False).verdict == QuotaVerdict.COHORT_FULL
            candidates, shielded = self._candidates(state, head, flavor, reclaim_quota)
            if candidates and _could_free_enough(state, workload, flavor, candidates):
                chosen = select_victims(state, workload, flavor, candidates, state.queues, state.now, *terms)
                if chosen:
                    deadline = 0.0
                    for victim, reason in chosen:
                        grace = state.queues[victim.queue].grace_s if victim.queue in state.queues else 0
                        state.preempting[victim.id] = state.now + grace
                        deadline = max(deadline, state.now + grace)
                        decisions.preemptions.append(Preemption(victim.id, workload.id, reason, state.now + grace))
                    return (Blocker("preempting", flavor, {"count": len(chosen), "grace_s": int(deadline - state.now)}, 0.9),
                            *rank(blockers))
            if shielded and protected is None:
                protected = self._protected_blocker(state, workload, flavor, candidates, shielded, terms)
        hold(holds, head, flavors)
        return rank([*blockers, protected] if protected else blockers)

    def _protected_blocker(self, state: Accounting, workload: Workload, flavor: str, candidates: list,
                           shielded: list, terms: tuple[bool, bool]) -> Blocker | None:
        """A ``protected`` blocker when evicting damped workloads would have made room, else None."""
        chosen = select_victims(state, workload, flavor, [*candidates, *shielded], state.queues, state.now, *terms)
        protected = [until for victim, _reason in chosen or () if (until := self._protected(victim, state.now))]
        if not protected:
            return None
        until = max(protected)
        return Blocker("protected", flavor, {"count": len(protected), "limit": self.preemption_limit,
                                             "window_s": int(self.preemption_window_s),
                                             "wait_s": int(until - state.now)}, 0.8)

    def _candidates(self, state: Accounting, head: _Head, flavor: str,
                    reclaim_quota: bool) -> tuple[list[tuple[Workload, str]], list[tuple[Workload, str]]]:
        """Running workloads on ``flavor`` this head may evict, each with the reason; and those it
        could evict but for damping."""
        workload = head.workload
        # Whom a head may evict depends on its queue, tenant and flags, not on the head itself.
        key = (flavor, workload.queue, workload.tenant, reclaim_quota, head.allow_any_lower)
        cached = state.candidates.get(key)
        if cached is None:
            cached = state.candidates[key] = find_candidates(
                state, workload, flavor, reclaim_quota=reclaim_quota, allow_any_lower=head.allow_any_lower,
                protected=lambda victim: bool(victim.preempted_at) and self._protected(victim, state.now) is not None)
        candidates, shielded = cached
        return ([pair for pair in candidates if pair[0].id not in state.preempting],
                [pair for pair in shielded if pair[0].id not in state.preempting])

    # -- 5. explain --------------------------------------------------------------------------

    def _explain(self, state: Accounting, order: list[_Head], blocked: dict[int, tuple[Blocker, ...]],
                 decisions: Decisions) -> None:
        positions: dict[str, int] = {}
        releases: dict[str, list[tuple[float, Workload]]] = {}
        etas: dict[tuple, tuple[float | None, int | None]] = {}
        merged: dict[tuple[str, ...], list[tuple[float, Workload]]] = {}
        for head in order:
            workload = head.workload
            position = positions[workload.queue] = positions.get(workload.queue, 0) + 1
            blockers = blocked.get(workload.id, ())
            eta: tuple[float | None, int | None] = (None, None)
            if blockers and blockers[0].kind == "preempting":
                eta = (state.now + blockers[0].params["grace_s"], None)
            elif self.eta and any(b.kind in _WAITS_FOR_CAPACITY for b in blockers):
                by_quota = any(b.kind in _QUOTA_KINDS for b in blockers)
                key = (workload.request.shape, workload.constraints, workload.flavors,
                       workload.tenant if by_quota else None, workload.queue, head.may_borrow, head.guaranteed)
                if key not in etas:
                    if workload.flavors not in merged:
                        merged[workload.flavors] = sorted(
                            (pair for flavor in workload.flavors for pair in _releases(state, flavor, releases)),
                            key=lambda pair: (pair[0], pair[1].id),
                        )
                    etas[key] = estimate_eta(state, workload, workload.flavors, merged[workload.flavors], state.now,
                                             head.may_borrow, not head.guaranteed)
                eta = etas[key]
            decisions.pending[workload.id] = Pending(workload.id, position, blockers, eta[0], eta[1],
                                                     inadmissible=inadmissible(blockers))


# Blockers that running work ends; the others (driver, labels, ...) need an admin, not time.
_QUOTA_KINDS = frozenset({"quota", "quota-not-preemptible", "quota-protected", "cohort", "cohort-borrow"})
_WAITS_FOR_CAPACITY = _QUOTA_KINDS | {"capacity", "reservation", "held", "protected"}


def _releases(state: Accounting, flavor: str, cache: dict[str, list[tuple[float, Workload]]]) -> list[tuple[float, Workload]]:
    if flavor not in cache:
        cache[flavor] = sorted(
            ((w.expected_end if w.expected_end is not None else (w.started_at or state.now) + w.runtime_s, w)
             for w in state.running.get(flavor, ())),
            key=lambda pair: (pair[0], pair[1].id),
        )
    return cache[flavor]


def free_capacity(snapshot: Snapshot) -> dict[str, tuple[Res, Res]]:
    """Per flavor, (total, free) over its schedulable nodes once running work is charged."""
    state = Accounting(snapshot, Policy.BINPACK, None)
    result: dict[str, tuple[Res, Res]] = {}
    for flavor, nodes in state.cluster.flavors.items():
        total = free = ZERO
        for node in nodes:
            if node.schedulable:
                total = total + Res(node.cpu, node.mem, len(node.devices) * 1000)
                free = free + Res(node.free_cpu, node.free_mem, node.device_free_milli)
        result[flavor] = (total, free)
    return result


def _memo_key(head: _Head) -> tuple:
    """Heads with equal keys fit (or fail) in exactly the same places within one cycle."""
    workload = head.workload
    return (workload.request.shape, workload.constraints, workload.flavors, workload.tenant, workload.queue,
            head.may_borrow, head.allow_any_lower, head.priority, head.guaranteed, head.starving)


def _fits_without(state: Accounting, workload: Workload, flavor: str, evicting: list[Workload],
                  may_borrow: bool, may_use_reserved: bool) -> bool:
    for victim in evicting:
        state.remove(victim)
    try:
        return state.fits(workload, flavor, may_borrow, may_use_reserved)
    finally:
        for victim in evicting:
            state.restore(victim)


def _could_free_enough(state: Accounting, workload: Workload, flavor: str, candidates: list[tuple[Workload, str]]) -> bool:
    """A cheap bound before a victim search: free devices plus everything the candidates hold."""
    need = workload.request.total.dev
    if not need:
        return True
    held = sum(victim.request.total.dev for victim, _reason in candidates)
    return state.cluster.free_devices_milli(flavor) + held >= need
