"""The scheduling cycle: a pure function from a snapshot to decisions.

    decisions = Engine().cycle(snapshot)

1. Escalate: workloads that waited past their queue's ``max_wait_s`` get its escalation.
2. Order heads: effective priority, then the tenant's weighted dominant share (DRF), then
   submit time, then id.
3. Nominate each head on its eligible flavors in template order: static match, quota,
   reservation, capacity. ``FIT`` admits at once and charges the snapshot.
4. A head that fits nowhere may preempt (see :mod:`.preemption`); a head that waited past its
   queue's bound holds its preferred flavor so smaller work cannot starve it.
5. Every workload left waiting gets its position, ranked blockers and an ETA.
The snapshot is never mutated; the same snapshot always gives the same decisions.
"""

from __future__ import annotations

import copy
import heapq
from collections import deque
from dataclasses import dataclass, field

from .accounting import Accounting
from .blockers import capacity_blocker, quota_blocker, static_blockers
from .capacity import NodeScorer, Policy
from .decisions import Admission, Blocker, Decisions, Escalation, Pending, Preemption
from .explain import estimate_eta, rank
from .model import ZERO, NodeState, Placement, QueuePolicy, Res, TenantQuota, Workload
from .preemption import eviction_reason, select_victims
from .quota import QuotaVerdict

__all__ = ["Engine", "Snapshot", "free_capacity"]


@dataclass(slots=True)
class Snapshot:
    """Everything one cycle looks at. Nodes carry full capacity; running work is charged by the engine."""

    now: float
    nodes: list[NodeState]
    queues: dict[str, QueuePolicy]
    tenants: dict[str, TenantQuota]
    running: list[Workload] = field(default_factory=list)
    pending: list[Workload] = field(default_factory=list)


@dataclass(slots=True)
class _Head:
    workload: Workload
    priority: int
    may_borrow: bool
    allow_any_lower: bool
    starving: bool


class Engine:
    """Scheduling decisions over snapshots; holds only configuration, never state between cycles."""

    def __init__(self, *, policy: str = Policy.FRAGMENTATION, node_scorer: NodeScorer | None = None,
                 eta: bool = True):
        if policy not in Policy.ALL:
            raise ValueError(f"unknown placement policy {policy!r}; choose one of {', '.join(Policy.ALL)}")
        self.policy = policy
        self.node_scorer = node_scorer
        self.eta = eta

    def cycle(self, snapshot: Snapshot) -> Decisions:
        state = Accounting(snapshot, self.policy, self.node_scorer)
        decisions = Decisions(now=snapshot.now)
        heads = self._escalate(snapshot, decisions)
        blocked: dict[int, tuple[Blocker, ...]] = {}
        order: list[_Head] = []
        holds: dict[str, tuple[int, int]] = {}  # flavor -> (priority, workload) held for a starving head
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
            heads.append(_Head(
                workload=workload,
                priority=queue.priority + boost,
                may_borrow=queue.can_borrow or (escalated and queue.escalation == "allow-borrowing"),
                allow_any_lower=escalated and queue.escalation == "allow-preemption",
                starving=starving,
            ))
        return heads

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

    def _nominate(self, state: Accounting, head: _Head, holds: dict[str, tuple[int, int]],
                  decisions: Decisions, *, nominal_only: bool = False) -> tuple[bool, tuple[Blocker, ...]]:
        """Admit ``head`` on the first flavor where it fits; else (unless ``nominal_only``) preempt or
        hold, and say why it waits."""
        workload = head.workload
        request, total = workload.request, workload.request.total
        blockers: list[Blocker] = []
        preemptable: list[str] = []
        for flavor in workload.flavors:
            eligibility = state.cluster.eligibility(flavor, request, workload.constraints)
            if not eligibility.nodes:
                blockers.extend(static_blockers(flavor, eligibility.mismatches))
                continue
            hold = holds.get(flavor)
            if hold is not None and hold[1] != workload.id and hold[0] >= head.priority:
                blockers.append(Blocker("held", flavor, {"holder": hold[1]}, 0.5))
                continue
            check = state.quotas.check(workload.tenant, flavor, total, may_borrow=head.may_borrow and not nominal_only)
            if not check.ok:
                blockers.append(quota_blocker(state, workload, flavor, check, total))
                if check.verdict >= QuotaVerdict.OVER_LIMIT:
                    preemptable.append(flavor)
                continue
            outstanding = state.reservations.outstanding(flavor, excluding=workload.queue) if total.dev else 0
            on_reservation = outstanding > 0 and state.cluster.free_devices_milli(flavor) - total.dev < outstanding
            slots = state.cluster.place(flavor, request, workload.constraints)
            if slots is not None:
                placement = Placement(flavor, slots, on_reservation=on_reservation, borrowing=check.borrowing)
                state.charge(workload, placement, allocated=True)  # place() allocated the slots already
                admitted = copy.copy(workload)
                admitted.placement, admitted.started_at = placement, state.now
                admitted.expected_end = state.now + workload.runtime_s
                state.add_running(admitted)
                state.admitted_now.add(workload.id)
                decisions.admissions.append(Admission(workload.id, placement))
                for held in [f for f, (_priority, holder) in holds.items() if holder == workload.id]:
                    del holds[held]  # admitted: it holds nothing any more
                return True, ()
            blockers.append(capacity_blocker(state, flavor, workload, outstanding))
            preemptable.append(flavor)
        if nominal_only:
            _hold(holds, head, preemptable)  # a starving head keeps its flavor from pass 1 on
            return False, ()
        return False, self._preempt_or_hold(state, head, preemptable, blockers, holds, decisions)

    def _preempt_or_hold(self, state: Accounting, head: _Head, flavors: list[str], blockers: list[Blocker],
                         holds: dict[str, tuple[int, int]], decisions: Decisions) -> tuple[Blocker, ...]:
        workload = head.workload
        # Victims already leaving for this workload: wait for them rather than evict more.
        for flavor in flavors if workload.id in state.evicting_for else ():
            evicting = [w for w in state.evicting_for[workload.id] if w.placement and w.placement.flavor == flavor]
            if evicting and self._fits_without(state, workload, flavor, evicting, head.may_borrow):
                grace = max(state.preempting[w.id] for w in evicting) - state.now
                return (Blocker("preempting", flavor, {"count": len(evicting), "grace_s": int(max(grace, 0))}, 0.9),
                        *rank(blockers))
        for flavor in flavors:
            reclaim_quota = state.quotas.check(workload.tenant, flavor, workload.request.total).verdict == QuotaVerdict.COHORT_FULL
            candidates = self._candidates(state, head, flavor, reclaim_quota)
            if not candidates:
                continue
            if not _could_free_enough(state, workload, flavor, candidates):
                continue
            chosen = select_victims(state, workload, flavor, candidates, state.queues, state.now, head.may_borrow)
            if chosen:
                deadline = 0.0
                for victim, reason in chosen:
                    grace = state.queues[victim.queue].grace_s if victim.queue in state.queues else 0
                    state.preempting[victim.id] = state.now + grace
                    deadline = max(deadline, state.now + grace)
                    decisions.preemptions.append(Preemption(victim.id, workload.id, reason, state.now + grace))
                return (Blocker("preempting", flavor, {"count": len(chosen), "grace_s": int(deadline - state.now)}, 0.9),
                        *rank(blockers))
        _hold(holds, head, flavors)
        return rank(blockers)

    @staticmethod
    def _candidates(state: Accounting, head: _Head, flavor: str, reclaim_quota: bool) -> list[tuple[Workload, str]]:
        """Running workloads on ``flavor`` this head may evict, each with the reason."""
        workload = head.workload
        # Whom a head may evict depends on its queue, tenant and flags, not on the head itself.
        key = (flavor, workload.queue, workload.tenant, reclaim_quota, head.allow_any_lower, workload.kind)
        cached = state.candidates.get(key)
        if cached is not None:
            return [pair for pair in cached if pair[0].id not in state.preempting]
        policy = state.queues[workload.queue]
        reclaim_reservation = state.reservations.owns(workload.queue, flavor)
        by_queue = state.running_by_queue.get(flavor, {})
        if reclaim_quota or reclaim_reservation or head.allow_any_lower:
            pools = list(by_queue.values())  # borrowed capacity may sit in any queue
        else:
            pools = [by_queue.get(queue, ()) for queue in sorted(policy.may_preempt)]
        cohort = state.quotas.quotas[workload.tenant].cohort if workload.tenant in state.quotas.quotas else None
        candidates = []
        for pool in pools:
            for running in pool:
                if running.id in state.preempting or running.id in state.admitted_now:
                    continue
                if reclaim_quota and getattr(state.quotas.quotas.get(running.tenant), "cohort", None) != cohort:
                    continue
                reason = eviction_reason(workload, running, state.queues, reclaim_reservation=reclaim_reservation,
                                         reclaim_quota=reclaim_quota, allow_any_lower=head.allow_any_lower)
                if reason is not None:
                    candidates.append((running, reason))
        state.candidates[key] = candidates
        return candidates

    @staticmethod
    def _fits_without(state: Accounting, workload: Workload, flavor: str, evicting: list[Workload],
                      may_borrow: bool) -> bool:
        for victim in evicting:
            state.remove(victim)
        try:
            return state.fits(workload, flavor, may_borrow)
        finally:
            for victim in evicting:
                state.restore(victim)

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
                by_quota = any(b.kind in ("quota", "cohort") for b in blockers)
                key = (workload.request.shape, workload.constraints, workload.flavors,
                       workload.tenant if by_quota else None, workload.queue)
                if key not in etas:
                    if workload.flavors not in merged:
                        merged[workload.flavors] = sorted(
                            (pair for flavor in workload.flavors for pair in _releases(state, flavor, releases)),
                            key=lambda pair: (pair[0], pair[1].id),
                        )
                    etas[key] = estimate_eta(state, workload, workload.flavors, merged[workload.flavors], state.now,
                                             head.may_borrow)
                eta = etas[key]
            decisions.pending[workload.id] = Pending(workload.id, position, blockers, eta[0], eta[1])


# Blockers that running work ends; the others (driver, labels, ...) need an admin, not time.
_WAITS_FOR_CAPACITY = frozenset({"capacity", "quota", "cohort", "reservation", "held"})


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
            head.may_borrow, head.allow_any_lower, head.priority)


def _hold(holds: dict[str, tuple[int, int]], head: _Head, flavors: list[str]) -> None:
    """A head past its queue's max wait holds its preferred flavor against equal or lower work."""
    if head.starving and flavors and flavors[0] not in holds:
        holds[flavors[0]] = (head.priority, head.workload.id)


def _could_free_enough(state: Accounting, workload: Workload, flavor: str, candidates: list[tuple[Workload, str]]) -> bool:
    """A cheap bound before a victim search: free devices plus everything the candidates hold."""
    need = workload.request.total.dev
    if not need:
        return True
    held = sum(victim.request.total.dev for victim, _reason in candidates)
    return state.cluster.free_devices_milli(flavor) + held >= need
