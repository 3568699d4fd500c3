"""Property tests of the engine's invariants over random clusters, tenants and workloads.

- no device, CPU or memory of any node is over-allocated;
- no tenant holds more than nominal + borrowing limit of a flavor;
- reserved capacity is only ever borrowed as `on_reservation` (so its owner can take it back);
- every admission satisfies its request's constraints;
- the same snapshot gives the same decisions;
- evictions never go up in priority, never take a non-preemptible queue's work, never ping-pong;
- a workload that fits the cluster is admitted within a bound, even under a stream of small work.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_hetero.engine import Engine, Policy, Snapshot, Workload
from jupyter_hetero.engine.matching import mismatch

from ..builders import job, kernel, node, queues, snapshot, tenant

FLAVORS = ("a100-80g", "t4", "cpu-standard")
QUEUES = ("urgent", "inference", "training", "experiment", "batch")


@st.composite
def clusters(draw):
    nodes = []
    for i in range(draw(st.integers(1, 5))):
        flavor = draw(st.sampled_from(FLAVORS))
        builder = node(f"n{i}", flavor).cpu(draw(st.sampled_from([8, 32, 64]))).mem(draw(st.sampled_from([32, 128, 512])))
        if flavor == "a100-80g":
            builder.gpus(draw(st.integers(1, 8)), 80).domain(draw(st.sampled_from(["x", "y"])))
        elif flavor == "t4":
            builder.gpus(draw(st.integers(1, 4)), 16, model="T4", driver=draw(st.sampled_from(["470.82", "535.1"])))
        nodes.append(builder)
    return nodes


@st.composite
def tenants(draw):
    result = []
    for name in ("vision", "nlp", "speech")[: draw(st.integers(1, 3))]:
        builder = tenant(name)
        for flavor in FLAVORS:
            if draw(st.booleans()):
                builder.quota(flavor, devices=draw(st.integers(0, 8)), cpu=draw(st.sampled_from([16, 64, 1000])),
                              borrowing=draw(st.sampled_from([None, 0, 2])), lending=draw(st.sampled_from([None, 0, 1])))
        result.append(builder)
    return result


@st.composite
def workload_specs(draw, first_id: int = 1, max_size: int = 12):
    specs = []
    for i in range(draw(st.integers(0, max_size))):
        queue = draw(st.sampled_from(QUEUES))
        builder = (kernel if draw(st.booleans()) and queue == "experiment" else job)(first_id + i).queue(queue)
        builder.tenant(draw(st.sampled_from(["vision", "nlp", "speech"])))
        builder.cpu(draw(st.sampled_from([1, 2, 8]))).mem(draw(st.sampled_from([1, 8, 64])))
        shape = draw(st.sampled_from(["cpu", "whole", "fraction"]))
        if shape == "whole":
            builder.gpus(draw(st.integers(1, 4)), draw(st.sampled_from([0, 16, 40])))
        elif shape == "fraction":
            builder.fraction(draw(st.sampled_from([100, 250, 500, 900])), draw(st.sampled_from([0, 4, 12])))
        if draw(st.integers(0, 4)) == 0:
            builder.replicas(draw(st.integers(2, 3)), draw(st.sampled_from(["any", "same-node", "same-interconnect"])))
        flavors = draw(st.permutations(FLAVORS))[: draw(st.integers(1, 3))]
        builder.flavors(*flavors).submitted(float(draw(st.integers(0, 900))))
        if draw(st.integers(0, 3)) == 0:
            builder.needs(min_driver="535")
        builder.idle(draw(st.booleans())).runtime(float(draw(st.sampled_from([60, 600, 3600]))))
        specs.append(builder)
    return specs


def _start(decisions, pending: list[Workload], now: float) -> list[Workload]:
    """Turn admissions into running workloads, as the workload service would."""
    placed = {a.workload: a.placement for a in decisions.admissions}
    return [replace(w, placement=placed[w.id], started_at=now, expected_end=now + w.runtime_s)
            for w in pending if w.id in placed]


@st.composite
def snapshots(draw):
    """A snapshot whose running work was itself placed by the engine (so it is consistent)."""
    nodes, tenant_builders = draw(clusters()), draw(tenants())
    first = snapshot(nodes=nodes, pending=draw(workload_specs(1)), tenants=tenant_builders)
    running = _start(Engine().cycle(first), first.pending, first.now)
    pending = draw(workload_specs(100))
    return snapshot(now=2000.0, nodes=nodes, running=running, pending=pending, tenants=tenant_builders)


def _check_allocation(snap: Snapshot, workloads: list[Workload]) -> None:
    nodes = {n.name: n.clone() for n in snap.nodes}
    for workload in workloads:
        request = workload.request
        assert len(workload.placement.slots) == request.replicas
        for slot in workload.placement.slots:
            target = nodes[slot.node]
            target.free_cpu -= request.cpu
            target.free_mem -= request.mem
            for index, milli, mem in slot.devices:
                target.devices[index].free_milli -= milli
                target.devices[index].free_mem -= mem
    for target in nodes.values():
        assert target.free_cpu >= 0 and target.free_mem >= 0, target.name
        for device in target.devices:
            assert device.free_milli >= 0 and device.free_mem >= 0, (target.name, device)


common = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(snapshots(), st.sampled_from(Policy.ALL))
def test_no_node_or_device_is_over_allocated(snap, policy):
    decisions = Engine(policy=policy).cycle(snap)
    admitted = {a.workload: a.placement for a in decisions.admissions}
    started = [replace(w, placement=admitted[w.id]) for w in snap.pending if w.id in admitted]
    _check_allocation(snap, snap.running + started)


@common
@given(snapshots())
def test_no_tenant_exceeds_nominal_plus_borrowing(snap):
    decisions = Engine().cycle(snap)
    admitted = {a.workload: a.placement for a in decisions.admissions}
    held: dict[tuple[str, str], int] = {}
    for workload in snap.running + [replace(w, placement=admitted[w.id]) for w in snap.pending if w.id in admitted]:
        key = (workload.tenant, workload.placement.flavor)
        held[key] = held.get(key, 0) + workload.request.total.dev
    for (name, flavor), devices in held.items():
        quota = snap.tenants[name]
        assert flavor in quota.nominal
        limit = quota.borrowing_limit[flavor]
        if limit is not None:
            assert devices <= quota.nominal[flavor].dev + limit.dev


@common
@given(snapshots())
def test_reserved_capacity_is_only_borrowed_preemptibly(snap):
    snap.queues = queues(inference={"reserved": {"t4": 1, "a100-80g": 1}})
    decisions = Engine().cycle(snap)
    by_id = {w.id: w for w in snap.pending}
    free = {f: 0 for f in FLAVORS}
    for n in snap.nodes:
        free[n.flavor] += len(n.devices) * 1000
    used_by_inference = {f: 0 for f in FLAVORS}
    for workload in snap.running:
        free[workload.placement.flavor] -= workload.request.total.dev
        if workload.queue == "inference":
            used_by_inference[workload.placement.flavor] += workload.request.total.dev
    for admission in decisions.admissions:
        workload, flavor = by_id[admission.workload], admission.placement.flavor
        free[flavor] -= workload.request.total.dev
        if workload.queue == "inference":
            used_by_inference[flavor] += workload.request.total.dev
        elif workload.request.total.dev:
            reserved = snap.queues["inference"].reserved.get(flavor, 0) * 1000
            outstanding = max(0, reserved - used_by_inference[flavor])
            if free[flavor] < outstanding:
                assert admission.placement.on_reservation, (workload.id, flavor)


@common
@given(snapshots())
def test_every_admission_satisfies_its_constraints(snap):
    decisions = Engine().cycle(snap)
    by_id = {w.id: w for w in snap.pending}
    nodes = {n.name: n for n in snap.nodes}
    for admission in decisions.admissions:
        workload = by_id[admission.workload]
        placement = admission.placement
        assert placement.flavor in workload.flavors
        for slot in placement.slots:
            target = nodes[slot.node]
            assert target.flavor == placement.flavor
            assert mismatch(target, workload.request, workload.constraints) is None
            if workload.request.devices:
                assert len(slot.devices) == workload.request.devices
                assert all(milli == 1000 for _i, milli, _m in slot.devices)
            if workload.request.device_milli:
                assert [(m, mem) for _i, m, mem in slot.devices] == [
                    (workload.request.device_milli, workload.request.device_mem)]
        if workload.request.placement == "same-node":
            assert len(set(placement.nodes)) == 1
        if workload.request.placement == "same-interconnect":
            assert len({nodes[n].domain for n in placement.nodes}) == 1


@common
@given(snapshots())
def test_decisions_are_deterministic(snap):
    assert Engine().cycle(snap) == Engine().cycle(snap)


@common
@given(snapshots())
def test_preemption_only_goes_down_in_priority_or_takes_back_what_was_lent(snap):
    decisions = Engine().cycle(snap)
    running = {w.id: w for w in snap.running}
    pending = {w.id: w for w in snap.pending}
    victims = [p.victim for p in decisions.preemptions]
    assert len(victims) == len(set(victims))
    for preemption in decisions.preemptions:
        victim, preemptor = running[preemption.victim], pending[preemption.preemptor]
        assert victim.preempting_until is None
        # Whatever the reason, the victim's queue is preemptible and does not outrank the preemptor's.
        assert snap.queues[victim.queue].preemptible
        assert snap.queues[victim.queue].priority <= snap.queues[preemptor.queue].priority
        if preemption.reason == "priority":
            assert snap.queues[victim.queue].priority < snap.queues[preemptor.queue].priority
        elif preemption.reason == "reservation":
            assert victim.placement.on_reservation
        else:
            assert preemption.reason == "reclaim" and victim.placement.borrowing and victim.tenant != preemptor.tenant


def _drive(snap: Snapshot, arrivals: dict[float, list[Workload]], until: float, step: float = 30.0):
    """Run cycles every `step` seconds of simulated time; returns start times and preemption pairs."""
    engine = Engine()
    now, running, pending = snap.now, list(snap.running), list(snap.pending)
    started: dict[int, float] = {}
    pairs: list[tuple[int, int]] = []
    while now <= until:
        pending += arrivals.pop(now, [])
        leaving = [w for w in running if (w.preempting_until is not None and w.preempting_until <= now)]
        running = [w for w in running if w not in leaving and (w.expected_end is None or w.expected_end > now)]
        pending += [replace(w, placement=None, started_at=None, expected_end=None, preempting_until=None,
                            preempted_for=None) for w in leaving]
        decisions = Engine.cycle(engine, Snapshot(now, snap.nodes, snap.queues, snap.tenants, running, pending))
        for preemption in decisions.preemptions:
            pairs.append((preemption.preemptor, preemption.victim))
            running = [replace(w, preempting_until=preemption.grace_deadline, preempted_for=preemption.preemptor)
                       if w.id == preemption.victim else w for w in running]
        new = _start(decisions, pending, now)
        for workload in new:
            started.setdefault(workload.id, now)
        ids = {w.id for w in new}
        pending = [w for w in pending if w.id not in ids]
        running += new
        now += step
    return started, pairs, pending


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(QUEUES), st.integers(1, 2), st.sampled_from([60, 300, 900])), min_size=2,
                max_size=14),
       st.lists(st.integers(0, 20), min_size=14, max_size=14))
def test_no_preemption_ping_pong(specs, arrival_steps):
    arrivals: dict[float, list[Workload]] = {}
    for i, ((queue, gpus, runtime), at) in enumerate(zip(specs, arrival_steps)):
        when = 1000.0 + 30 * at
        arrivals.setdefault(when, []).append(job(i + 1).queue(queue).gpus(gpus).runtime(runtime).submitted(when).build())
    snap = snapshot(nodes=[node("a1").gpus(2)], tenants=[tenant("vision").quota("a100-80g", devices=8)])
    _started, pairs, _left = _drive(snap, arrivals, until=1000.0 + 30 * 60)
    assert not {(a, b) for a, b in pairs} & {(b, a) for a, b in pairs}


@settings(max_examples=10, deadline=None)
@given(st.integers(60, 600), st.integers(1, 3))
def test_a_big_job_is_not_starved_by_a_stream_of_small_ones(small_runtime, per_step):
    """Without the starvation hold, 1-GPU batch jobs arriving every step would keep one of the
    four GPUs busy forever and the 4-GPU job would never start."""
    max_wait = snapshot().queues["batch"].max_wait_s
    arrivals: dict[float, list[Workload]] = {}
    ids = iter(range(100, 100_000))
    for step in range(0, 80):
        when = 1000.0 + 30 * step
        arrivals[when] = [job(next(ids)).queue("batch").gpus(1).runtime(small_runtime).submitted(when).build()
                          for _ in range(per_step)]
    big = job(1).queue("batch").gpus(4).runtime(600).submitted(1060.0).build()
    arrivals[1060.0].append(big)  # after the stream has taken some of the GPUs
    snap = snapshot(nodes=[node("a1").gpus(4)], tenants=[tenant("vision").quota("a100-80g", devices=8)],
                    queue_policies=queues(batch={"max_wait_s": 600}))
    bound = 600 + small_runtime + 30  # max wait + the longest running small job + one cycle
    started, _pairs, _left = _drive(snap, arrivals, until=1060.0 + bound + 60)
    assert 1 in started, "the 4-GPU job never started"
    assert started[1] - 1060.0 <= bound
    assert max_wait == 86400  # the default bound is the catalog's; this test shortens it
