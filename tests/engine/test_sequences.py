"""The engine driven through random sequences of what happens to a cluster, with the service played
between cycles (tests/builders.ServiceLoop): submissions, ends (success, failure, cancellation),
nodes that come, go or come back smaller, quota changes and the clock. After every step:

- the cycle did not raise, and running work whose node or devices are gone was reported lost;
- every workload is in exactly one state, and the decisions only move work the way states allow;
- no node or device is over-allocated;
- no admission takes a tenant beyond nominal + borrowing limit, and its ``borrowing`` flag is right;
- work that can never be preempted (its queue, or damping) neither borrows nor uses a reservation;
- capacity reserved for inference is admitted onto only as ``on_reservation``, and while inference
  work it is owed waits, nobody holds it without being evicted (so it is back within the grace);
- every eviction follows the rules (preemptible victim, never above the preemptor's priority);
- no workload is preempted more than the damping limit within any window.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import count

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from jupyter_hetero.engine import Engine, Workload, WorkloadKind
from jupyter_hetero.engine.quota import QuotaBook

from ..builders import ServiceLoop, job, kernel, node, queues, snapshot, tenant

LIMIT, WINDOW = 1, 3600.0
QUEUES = queues(inference={"reserved": {"t4": 1}})
TENANTS = ("vision", "nlp", "speech")
NEVER_PREEMPTED = {name for name, policy in QUEUES.items() if not policy.preemptible}


def _quotas(vision: int = 2, nlp: int = 2, speech: int = 0):
    return [
        tenant("vision").quota("a100-80g", devices=vision).quota("t4", devices=1).quota("cpu-standard", cpu=16),
        tenant("nlp").quota("a100-80g", devices=nlp, borrowing=2).quota("t4", devices=1).quota("cpu-standard", cpu=16),
        tenant("speech").quota("a100-80g", devices=speech).quota("t4", devices=0, borrowing=1).quota("cpu-standard", cpu=8),
    ]


class EngineSequence(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        nodes = [node("a0").gpus(4), node("t0", "t4").gpus(2, 16, model="T4"), node("c0", "cpu-standard").cpu(16)]
        self.loop = ServiceLoop(Engine(preemption_limit=LIMIT, preemption_window_s=WINDOW),
                                snapshot(now=0.0, nodes=nodes, tenants=_quotas(), queue_policies=QUEUES))
        self.ids = count(1)
        self.submitted: set[int] = set()
        self.removed_nodes: list[str] = []

    # -- what happens -----------------------------------------------------------------------

    @initialize(fillers=st.lists(st.tuples(st.sampled_from(["batch", "experiment", "training"]), st.sampled_from(TENANTS),
                                           st.sampled_from([("a100-80g",), ("t4", "a100-80g")])), min_size=2, max_size=6))
    def long_work_fills_the_cluster(self, fillers):
        """Long, low-priority work first, so that what arrives later has to preempt, reclaim or wait."""
        for queue, who, flavors in fillers:
            wid = next(self.ids)
            self.loop.submit(job(wid).queue(queue).tenant(who).gpus(1).flavors(*flavors).runtime(7200).cpu(2).mem(8))
            self.submitted.add(wid)
        self.step()

    @rule(batch=st.lists(st.tuples(
        st.sampled_from(sorted(QUEUES)), st.sampled_from(TENANTS), st.sampled_from(["cpu", "one", "two", "gang", "fraction"]),
        st.sampled_from([60, 300, 1800]), st.booleans(), st.booleans()), min_size=1, max_size=3))
    def submit(self, batch):
        for queue, who, shape, runtime, idle_kernel, t4_first in batch:
            wid = next(self.ids)
            builder = (kernel(wid).idle(idle_kernel) if queue == "experiment" and shape != "cpu" else job(wid))
            builder.queue(queue).tenant(who).runtime(runtime).cpu(2).mem(8)
            gpus = ("t4", "a100-80g") if t4_first else ("a100-80g", "t4")
            if queue == "inference" or shape == "one":
                builder.gpus(1).flavors(*(("t4",) if queue == "inference" else gpus))
            elif shape == "cpu":
                builder.cpu(4).flavors("cpu-standard")
            elif shape == "two":
                builder.gpus(2).flavors(*gpus)
            elif shape == "gang":
                builder.gpus(1).replicas(2).flavors("a100-80g")
            else:  # fractions only where nothing is reserved, so freeing a reservation frees whole devices
                builder.fraction(500, 8).flavors("a100-80g")
            self.loop.submit(builder)
            self.submitted.add(wid)
        self.step()

    @rule(seconds=st.sampled_from([15, 30, 60, 120, 300]))
    def time_passes(self, seconds):
        self.loop.advance(seconds)
        self.step()

    # Rules pick their target by index (modulo what exists) and do nothing when nothing does: a
    # precondition would make hypothesis give up on sequences that reach an empty cluster.

    @rule(pick=st.integers(0, 99), how=st.sampled_from(["succeeded", "failed", "retried", "cancelled"]))
    def running_work_ends(self, pick, how):
        if self.loop.running:
            wid = sorted(self.loop.running)[pick % len(self.loop.running)]
            self.loop.requeue(wid) if how == "retried" else self.loop.end(wid, how)
        self.step()

    @rule(pick=st.integers(0, 99))
    def pending_work_is_cancelled(self, pick):
        if self.loop.pending:
            self.loop.end(sorted(self.loop.pending)[pick % len(self.loop.pending)], "cancelled")
        self.step()

    @rule(flavor=st.sampled_from(["a100-80g", "t4", "cpu-standard"]), devices=st.integers(1, 4), comes_back=st.booleans())
    def node_added(self, flavor, devices, comes_back):
        taken = {n.name for n in self.loop.nodes}
        name = self.removed_nodes.pop() if comes_back and self.removed_nodes else f"n{len(taken) + len(self.removed_nodes)}"
        if name not in taken:
            builder = node(name, flavor)
            if flavor == "t4":
                builder.gpus(devices, 16, model="T4")
            elif flavor == "a100-80g":
                builder.gpus(devices)
            else:
                builder.cpu(16)
            self.loop.nodes.append(builder.build())
        self.step()

    @rule(pick=st.integers(0, 99))
    def node_removed(self, pick):
        if self.loop.nodes:
            gone = self.loop.nodes[pick % len(self.loop.nodes)].name
            self.loop.nodes = [n for n in self.loop.nodes if n.name != gone]
            self.removed_nodes.append(gone)
        self.step()

    @rule(pick=st.integers(0, 99), keep=st.integers(1, 3))
    def node_comes_back_smaller(self, pick, keep):
        larger = [n for n in self.loop.nodes if len(n.devices) > keep]
        if larger:
            name = larger[pick % len(larger)].name
            self.loop.nodes = [replace(n, devices=[replace(d) for d in n.devices[:keep]]) if n.name == name else n
                               for n in self.loop.nodes]
        self.step()

    @rule(vision=st.integers(0, 4), nlp=st.integers(0, 4), speech=st.integers(0, 2))
    def quota_changes(self, vision, nlp, speech):
        self.loop.tenants = {t.build().tenant: t.build() for t in _quotas(vision, nlp, speech)}
        self.step()

    # -- one cycle, then the checks -----------------------------------------------------------

    def step(self):
        before = set(self.loop.running)
        decisions = self.loop.cycle()  # must not raise, whatever the inventory did
        snap = self.loop.seen
        nodes = {n.name: n for n in snap.nodes}
        gone = {w.id for w in snap.running if not _placed_on(w, nodes)}
        assert {lost.workload for lost in decisions.lost} == gone
        admitted = [a.workload for a in decisions.admissions]
        victims = [p.victim for p in decisions.preemptions]
        pending_ids = {w.id for w in snap.pending}
        assert len(admitted) == len(set(admitted)) and set(admitted) <= pending_ids
        assert len(victims) == len(set(victims)) and set(victims) <= set(before) - gone
        assert not set(decisions.pending) & set(admitted)
        assert set(decisions.pending) | set(admitted) == {w.id for w in snap.pending if w.queue in snap.queues}
        self._check_admissions(snap, decisions, gone)
        self._check_evictions(snap, decisions)
        # How often the interesting paths run (pytest --hypothesis-show-statistics).
        kinds = {b.kind for waiting in decisions.pending.values() for b in waiting.blockers}
        reasons = {p.reason for p in decisions.preemptions}
        for what, happened in (("lost", decisions.lost), ("preempted", reasons), ("protected", "protected" in kinds),
                               ("reclaimed or taken back", reasons - {"priority"})):
            if happened:
                event(f"a cycle with work {what}")

    def _check_admissions(self, snap, decisions, gone):
        """Quota limits, borrowing flags, work that must stay guaranteed, reservations: in the order
        the cycle admitted, against what ran before plus what it admitted earlier."""
        by_id = {w.id: w for w in snap.pending}
        book = QuotaBook(snap.tenants, _usage(w for w in snap.running if w.id not in gone))
        capacity, used, by_inference, lent = _devices(snap, [w for w in snap.running if w.id not in gone])
        for admission in decisions.admissions:
            workload, placement = by_id[admission.workload], admission.placement
            flavor, total = placement.flavor, workload.request.total
            quota = snap.tenants[workload.tenant]
            after = book.used(workload.tenant, flavor) + total
            nominal = quota.nominal[flavor]
            assert placement.borrowing == any(a > n for a, n, r in zip(after, nominal, total) if r > 0)
            limit = quota.borrowing_limit.get(flavor)
            if limit is not None:
                assert all(a <= n + b for a, n, b, r in zip(after, nominal, limit, total) if r > 0)
            if workload.queue in NEVER_PREEMPTED or _protected(workload, snap.now):
                assert not placement.borrowing and not placement.on_reservation, workload
            reserved = QUEUES["inference"].reserved.get(flavor, 0) * 1000
            if workload.queue != "inference" and total.dev and reserved:
                # Inference's unused reservation is free capacity or held by work on it, which it takes back.
                outstanding = max(0, reserved - by_inference.get(flavor, 0) - lent.get(flavor, 0))
                if capacity.get(flavor, 0) - used.get(flavor, 0) - total.dev < outstanding:
                    assert placement.on_reservation, workload
            book.charge(workload.tenant, flavor, total)
            used[flavor] = used.get(flavor, 0) + total.dev
            if workload.queue == "inference":
                by_inference[flavor] = by_inference.get(flavor, 0) + total.dev
            elif placement.on_reservation:
                lent[flavor] = lent.get(flavor, 0) + total.dev

    def _check_evictions(self, snap, decisions):
        running = {w.id: w for w in snap.running}
        pending = {w.id: w for w in snap.pending}
        for preemption in decisions.preemptions:
            victim, preemptor = running[preemption.victim], pending[preemption.preemptor]
            mine, theirs = snap.queues[preemptor.queue], snap.queues[victim.queue]
            assert victim.preempting_until is None and theirs.preemptible and theirs.priority <= mine.priority
            assert not _protected(victim, snap.now)
            if preemption.reason == "priority":
                assert theirs.priority < mine.priority
                assert victim.idle or not (theirs.idle_kernels_only and victim.kind == WorkloadKind.KERNEL)
            elif preemption.reason == "reclaim":
                assert victim.placement.borrowing and victim.tenant != preemptor.tenant
            else:
                assert preemption.reason == "reservation" and victim.placement.on_reservation

    # -- invariants over the state the service keeps --------------------------------------------

    @invariant()
    def each_workload_is_in_exactly_one_state(self):
        running, pending, ended = set(self.loop.running), set(self.loop.pending), set(self.loop.ended)
        assert not (running & pending or running & ended or pending & ended)
        assert running | pending | ended == self.submitted

    @invariant()
    def no_node_or_device_is_over_allocated(self):
        nodes = {n.name: n.clone() for n in self.loop.nodes}
        for workload in self.loop.running.values():
            assert _placed_on(workload, nodes), workload  # lost work was requeued
            for slot in workload.placement.slots:
                target = nodes[slot.node]
                target.free_cpu -= workload.request.cpu
                target.free_mem -= workload.request.mem
                for index, milli, mem in slot.devices:
                    target.devices[index].free_milli -= milli
                    target.devices[index].free_mem -= mem
        for target in nodes.values():
            assert target.free_cpu >= 0 and target.free_mem >= 0, target.name
            assert all(d.free_milli >= 0 and d.free_mem >= 0 for d in target.devices), target.name

    @invariant()
    def reserved_capacity_comes_back_to_inference_within_the_grace(self):
        """While inference work that its reservation has room for waits (and its tenant's nominal
        quota has room too), nobody else holds the reservation without being evicted from it."""
        decisions, snap = self.loop.last, self.loop.seen
        if decisions is None:
            return
        running = list(self.loop.running.values())
        book = QuotaBook(snap.tenants, _usage(running))
        reserved = QUEUES["inference"].reserved["t4"] * 1000
        inference = sum(w.request.total.dev for w in running if w.queue == "inference" and w.placement.flavor == "t4")
        holders = [w for w in running if w.placement.on_reservation and w.placement.flavor == "t4"
                   and w.preempting_until is None]
        for wid, waiting in decisions.pending.items():
            workload = self.loop.pending.get(wid)
            if workload is None or workload.queue != "inference" or waiting.blockers[0].kind == "preempting":
                continue
            owed = inference + workload.request.total.dev <= reserved
            if owed and book.check(workload.tenant, "t4", workload.request.total, may_borrow=False).ok:
                assert not holders, (wid, waiting.blockers, holders)

    @invariant()
    def no_workload_is_preempted_more_than_the_damping_allows(self):
        times: dict[int, list[float]] = {}
        for at, preemption in self.loop.preemptions:
            times.setdefault(preemption.victim, []).append(at)
        for history in times.values():
            for at in history:
                assert sum(1 for t in history if at - WINDOW < t <= at) <= LIMIT, history


def _placed_on(workload: Workload, nodes) -> bool:
    return all(slot.node in nodes and all(0 <= i < len(nodes[slot.node].devices) for i, _m, _mem in slot.devices)
               for slot in workload.placement.slots)


def _protected(workload: Workload, now: float) -> bool:
    return sum(1 for t in workload.preempted_at if t > now - WINDOW) >= LIMIT


def _usage(workloads):
    usage = {}
    for workload in workloads:
        key = (workload.tenant, workload.placement.flavor)
        usage[key] = usage[key] + workload.request.total if key in usage else workload.request.total
    return usage


def _devices(snap, running):
    """Device-milli per flavor: schedulable capacity, in use, in use by inference, and in use by others' work
    placed on inference's reservation."""
    capacity: dict[str, int] = {}
    for n in snap.nodes:
        if n.schedulable:
            capacity[n.flavor] = capacity.get(n.flavor, 0) + len(n.devices) * 1000
    used: dict[str, int] = {}
    by_inference: dict[str, int] = {}
    lent: dict[str, int] = {}
    for workload in running:
        flavor, dev = workload.placement.flavor, workload.request.total.dev
        used[flavor] = used.get(flavor, 0) + dev
        if workload.queue == "inference":
            by_inference[flavor] = by_inference.get(flavor, 0) + dev
        elif workload.placement.on_reservation:
            lent[flavor] = lent.get(flavor, 0) + dev
    return capacity, used, by_inference, lent


EngineSequence.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None,
                                            suppress_health_check=[HealthCheck.too_slow])
test_engine_sequences = EngineSequence.TestCase
