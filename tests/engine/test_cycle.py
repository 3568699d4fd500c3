"""The scheduling cycle, rule by rule, on small hand-made clusters."""

from __future__ import annotations

import pytest

from jupyter_hetero.engine import Engine, LabelReq, Policy, Slot, render

from ..builders import job, kernel, node, queues, snapshot, tenant

VISION = tenant("vision").quota("a100-80g", devices=8).quota("t4", devices=8).quota("cpu-standard", devices=0)


def admitted(decisions) -> dict[int, tuple]:
    return {a.workload: (a.placement.flavor, a.placement.nodes) for a in decisions.admissions}


def first_blocker(decisions, wid: int, language: str = "en") -> str:
    return render(decisions.pending[wid].blockers[0], language)


def test_a_gpu_job_is_admitted_on_a_free_device():
    snap = snapshot(nodes=[node("a1").gpus(2)], pending=[job(1).gpus(1)], tenants=[VISION])
    decisions = Engine().cycle(snap)
    [admission] = decisions.admissions
    assert admission.workload == 1
    assert admission.placement.flavor == "a100-80g"
    assert admission.placement.slots == (Slot("a1", ((0, 1000, 80 * 1024),)),)
    assert not decisions.pending


def test_flavors_are_tried_in_template_order():
    snap = snapshot(
        nodes=[node("a1").gpus(1), node("t1", "t4").gpus(1, 16, model="T4")],
        running=[job(9).gpus(1).on("a1", 0)],
        pending=[job(1).gpus(1).flavors("a100-80g", "t4")],
        tenants=[VISION],
    )
    assert admitted(Engine().cycle(snap)) == {1: ("t4", ("t1",))}


@pytest.mark.parametrize(
    ("builder", "workload", "message"),
    [
        pytest.param(node("t1", "t4").gpus(1, 16, driver="470.82"), job(1).gpus(1).flavors("t4").needs(min_driver="535"),
                     "driver: template needs driver >= 535, nodes of flavor t4 have 470.82", id="old driver"),
        pytest.param(node("t1", "t4").gpus(1, 16, runtime="11.8"), job(1).gpus(1).flavors("t4").needs(min_runtime="12.1"),
                     "runtime: template needs runtime >= 12.1, nodes of flavor t4 have 11.8", id="old runtime"),
        pytest.param(node("t1", "t4").gpus(1, 16), job(1).gpus(1, mem_gib=40).flavors("t4"),
                     "capacity: no ready node of flavor t4 has >= 40Gi device memory; nodes have 16Gi", id="too little device memory"),
        pytest.param(node("n1", "ascend-910b").gpus(1, 64, family="ascend", model="910B3", runtime="8.0.RC1"),
                     job(1).gpus(1).flavors("ascend-910b").needs(min_runtime="8.0", family="ascend"),
                     "runtime: template needs runtime >= 8.0, nodes of flavor ascend-910b have 8.0.RC1",
                     id="a release candidate is below its release"),
        pytest.param(node("t1", "t4").gpus(1, 16).frameworks("onnxruntime"), job(1).gpus(1).flavors("t4").needs(frameworks=("vllm",)),
                     "frameworks: template needs vllm, nodes of flavor t4 provide onnxruntime", id="missing framework"),
        pytest.param(node("t1", "t4").gpus(2, 16, interconnect="pcie"), job(1).gpus(2).flavors("t4").needs(interconnect=("nvlink",)),
                     "interconnect: template needs nvlink, nodes of flavor t4 have pcie", id="needs nvlink"),
        pytest.param(node("t1", "t4").gpus(1, 16).labels(zone="b"),
                     job(1).gpus(1).flavors("t4").needs(labels=(LabelReq("zone", "In", ("a",)),)),
                     "labels: nodes of flavor t4 do not satisfy zone In a (have b)", id="label mismatch"),
        pytest.param(node("t1", "t4").gpus(1, 16).pending_onboarding(), job(1).gpus(1).flavors("t4"),
                     "onboarding: nodes of flavor t4 are still onboarding", id="node not onboarded"),
        pytest.param(node("c1", "cpu-standard"), job(1).gpus(1).flavors("cpu-standard"),
                     "capacity: flavor cpu-standard has no accelerators", id="cpu node for a gpu job"),
        pytest.param(node("a1").gpus(2), job(1).gpus(4),
                     "capacity: a replica needs 4 devices on one node, nodes of flavor a100-80g have 2", id="too many devices per node"),
        pytest.param([node("c1", "cpu-standard").cpu(32), node("c2", "cpu-standard").cpu(16)], job(1).cpu(48).flavors("cpu-standard"),
                     "capacity: 48 CPU must fit on one node; the largest node of flavor cpu-standard has 32 CPU",
                     id="more cores than any node"),
        pytest.param(node("c1", "cpu-standard").mem(64), job(1).cpu(1).mem(128).flavors("cpu-standard"),
                     "capacity: 128Gi memory must fit on one node; the largest node of flavor cpu-standard has 64Gi",
                     id="more memory than any node"),
        pytest.param(node("c1", "cpu-standard").cpu(32), job(1).cpu(20).replicas(2, "same-node").flavors("cpu-standard"),
                     "capacity: 40 CPU must fit on one node; the largest node of flavor cpu-standard has 32 CPU",
                     id="replicas that share a node"),
    ],
)
def test_static_mismatches_are_explained(builder, workload, message):
    nodes = builder if isinstance(builder, list) else [builder]
    decisions = Engine().cycle(snapshot(nodes=nodes, pending=[workload], tenants=[VISION]))
    assert not decisions.admissions
    assert first_blocker(decisions, 1).startswith(message)
    assert decisions.pending[1].inadmissible  # each of these only a change of the inventory can lift


def test_quota_blocks_and_says_how_much_is_used():
    snap = snapshot(
        nodes=[node("a1").gpus(8), node("a2").gpus(8)],
        running=[job(10 + i).gpus(1).on("a1", i) for i in range(8)],
        pending=[job(1).gpus(1)],
        tenants=[VISION],
    )
    decisions = Engine().cycle(snap)
    assert not decisions.admissions
    assert first_blocker(decisions, 1) == (
        "quota: tenant vision uses 8/8 devices of flavor a100-80g in queue training (borrowing limit 0)"
    )
    assert first_blocker(decisions, 1, "zh").startswith("配额：租户 vision 在队列 training 中已使用规格 a100-80g")


def _two_tenants(borrowing=None, lending=None):
    return [
        tenant("vision").quota("a100-80g", devices=2, borrowing=borrowing),
        tenant("nlp").quota("a100-80g", devices=2, lending=lending),
    ]


@pytest.mark.parametrize(
    ("queue", "borrowing", "lending", "expected"),
    [
        pytest.param("batch", None, None, {1, 2, 3, 4}, id="batch borrows the idle tenant's quota"),
        pytest.param("batch", 1, None, {1, 2, 3}, id="borrowing limit 1 stops the fourth"),
        pytest.param("batch", None, 0, {1, 2}, id="a lender with lending limit 0 lends nothing"),
        pytest.param("training", None, None, {1, 2}, id="training does not borrow before max wait"),
    ],
)
def test_borrowing_within_a_cohort(queue, borrowing, lending, expected):
    snap = snapshot(
        nodes=[node("a1").gpus(8)],
        pending=[job(i).gpus(1).queue(queue).submitted(990) for i in (1, 2, 3, 4)],
        tenants=_two_tenants(borrowing, lending),
    )
    decisions = Engine().cycle(snap)
    assert set(admitted(decisions)) == expected
    borrowed = [a for a in decisions.admissions if a.placement.borrowing]
    assert len(borrowed) == len(expected) - 2


def test_training_may_borrow_after_its_max_wait():
    snap = snapshot(
        now=10_000,
        nodes=[node("a1").gpus(8)],
        pending=[job(i).gpus(1).submitted(0) for i in (1, 2, 3)],
        tenants=_two_tenants(),
    )
    decisions = Engine().cycle(snap)
    assert set(admitted(decisions)) == {1, 2, 3}
    assert {e.action for e in decisions.escalations} == {"allow-borrowing"}


def test_a_lender_reclaims_its_quota_by_preempting_a_borrower_of_equal_priority():
    snap = snapshot(
        nodes=[node("a1").gpus(4)],
        running=[job(10 + i).queue("training").gpus(1).on("a1", i, started=100 * i, borrowing=i >= 2) for i in range(4)],
        pending=[job(1).tenant("nlp").queue("training").gpus(1)],
        tenants=_two_tenants(),
    )
    decisions = Engine().cycle(snap)
    assert [(p.victim, p.preemptor, p.reason) for p in decisions.preemptions] == [(13, 1, "reclaim")]
    assert decisions.pending[1].blockers[0].kind == "preempting"


def _full_node(*running):
    return snapshot(nodes=[node("a1").gpus(len(running))], running=list(running),
                    pending=[], tenants=[VISION, tenant("nlp").quota("a100-80g", devices=8)])


@pytest.mark.parametrize(
    ("running", "pending", "victims"),
    [
        pytest.param([job(10).queue("batch").gpus(1).on("a1", 0), job(11).queue("training").gpus(1).on("a1", 1)],
                     job(1).queue("urgent").gpus(1), [10], id="urgent takes batch before training"),
        pytest.param([kernel(10).gpus(1).idle().on("a1", 0, started=100), job(11).queue("batch").gpus(1).on("a1", 1)],
                     job(1).queue("urgent").gpus(1), [11], id="lowest queue class first"),
        pytest.param([kernel(10).gpus(1).on("a1", 0), kernel(11).gpus(1).idle().on("a1", 1)],
                     job(1).queue("urgent").gpus(1), [11], id="busy experiment kernels are not preemptible"),
        pytest.param([job(10).queue("batch").gpus(1).on("a1", 0, started=0),
                      job(11).queue("batch").gpus(1).checkpoint(900).on("a1", 1, started=0)],
                     job(1).queue("urgent").gpus(1), [11], id="checkpointed work goes first"),
        pytest.param([job(10).queue("batch").gpus(1).on("a1", 0, started=100),
                      job(11).queue("batch").gpus(1).on("a1", 1, started=900)],
                     job(1).queue("urgent").gpus(1), [11], id="least lost work goes first"),
        pytest.param([job(10).queue("batch").gpus(1).on("a1", 0), job(11).queue("batch").gpus(1).on("a1", 1)],
                     job(1).queue("urgent").gpus(2), [10, 11], id="two victims when two devices are needed"),
        pytest.param([job(10).queue("batch").gpus(1).on("a1", 0), job(11).queue("training").gpus(1).on("a1", 1)],
                     job(1).queue("experiment").gpus(1), [], id="experiment preempts nobody"),
        pytest.param([job(10).queue("training").gpus(1).on("a1", 0), job(11).queue("training").gpus(1).on("a1", 1)],
                     job(1).queue("training").gpus(1), [], id="no preemption within the same priority"),
        pytest.param([job(10).queue("batch").gpus(1).preempting(1030, for_workload=1).on("a1", 0),
                      job(11).queue("batch").gpus(1).on("a1", 1)],
                     job(1).queue("urgent").gpus(1), [], id="waits for its victim already being evicted"),
        pytest.param([job(10).queue("batch").gpus(1).preempting(1030, for_workload=7).on("a1", 0),
                      job(11).queue("batch").gpus(1).on("a1", 1)],
                     job(1).queue("urgent").gpus(1), [11], id="another workload's victim is not counted as room"),
    ],
)
def test_preemption_picks_the_cheapest_victims(running, pending, victims):
    snap = _full_node(*running)
    snap.pending.append(pending.build())
    decisions = Engine().cycle(snap)
    assert [p.victim for p in decisions.preemptions] == victims
    assert not decisions.admissions
    for preemption in decisions.preemptions:
        assert preemption.grace_deadline == snap.now + snap.queues[next(
            w.queue for w in snap.running if w.id == preemption.victim)].grace_s


def test_a_pending_workload_waits_for_its_victims_with_an_eta_at_the_grace_end():
    snap = _full_node(job(10).queue("batch").gpus(1).preempting(1030, for_workload=1).on("a1", 0))
    snap.pending.append(job(1).queue("urgent").gpus(1).build())
    pending = Engine().cycle(snap).pending[1]
    assert pending.blockers[0].kind == "preempting"
    assert pending.eta == 1030


def test_borrowed_reservation_is_admitted_preemptibly_and_reclaimed_by_inference():
    tenants = [tenant("vision").quota("t4", devices=4)]
    nodes = [node("t1", "t4").gpus(2, 16, model="T4")]
    first = Engine().cycle(snapshot(nodes=nodes, pending=[job(1).queue("batch").gpus(1).flavors("t4"),
                                                         job(2).queue("batch").gpus(1).flavors("t4")], tenants=tenants))
    assert [(a.workload, a.placement.on_reservation) for a in first.admissions] == [(1, False), (2, True)]
    later = snapshot(
        nodes=nodes,
        running=[job(1).queue("batch").gpus(1).flavors("t4").on("t1", 0),
                 job(2).queue("batch").gpus(1).flavors("t4").on("t1", 1, on_reservation=True)],
        pending=[job(3).queue("inference").gpus(1).flavors("t4")],
        tenants=tenants,
    )
    decisions = Engine().cycle(later)
    assert [(p.victim, p.reason) for p in decisions.preemptions] == [(2, "reservation")]


def test_a_reservation_its_queue_lends_none_of_is_never_taken_by_other_queues():
    tenants = [tenant("vision").quota("t4", devices=4)]
    nodes = [node("t1", "t4").gpus(2, 16, model="T4")]
    strict = queues(inference={"lends_reserved": False})
    batch = [job(1).queue("batch").gpus(1).flavors("t4"), job(2).queue("batch").gpus(1).flavors("t4")]
    decisions = Engine().cycle(snapshot(nodes=nodes, pending=batch, tenants=tenants, queue_policies=strict))
    assert [(a.workload, a.placement.on_reservation) for a in decisions.admissions] == [(1, False)]
    [blocker, *_] = decisions.pending[2].blockers
    assert (blocker.kind, blocker.params["owner"]) == ("reservation", "inference")
    assert not decisions.preemptions  # nothing to take: the batch job waits
    # A gang of two cannot take it either, even with the node idle; the inference queue itself can.
    pair = job(3).queue("batch").gpus(2).flavors("t4")
    assert not Engine().cycle(snapshot(nodes=nodes, pending=[pair], tenants=tenants, queue_policies=strict)).admissions
    served = Engine().cycle(snapshot(nodes=nodes, pending=[job(4).queue("inference").gpus(2).flavors("t4")],
                                     tenants=tenants, queue_policies=strict))
    assert [a.workload for a in served.admissions] == [4]


def test_reserved_capacity_is_explained_to_those_who_cannot_borrow_it():
    tenants = [tenant("vision").quota("t4", devices=4)]
    snap = snapshot(nodes=[node("t1", "t4").gpus(1, 16, model="T4")], pending=[job(1).gpus(1).flavors("t4")],
                    tenants=tenants, queue_policies=queues())
    decisions = Engine().cycle(snap)
    # Borrowing reserved capacity is allowed (preemptibly), so the job is admitted on the reservation.
    assert decisions.admissions[0].placement.on_reservation


@pytest.mark.parametrize(
    ("nodes", "workload", "expected_nodes"),
    [
        pytest.param([node("a1").gpus(2), node("a2").gpus(2)], job(1).gpus(2).replicas(2),
                     ("a1", "a2"), id="gang across nodes"),
        pytest.param([node("a1").gpus(2), node("a2").gpus(4)], job(1).gpus(2).replicas(2, "same-node"),
                     ("a2", "a2"), id="gang on one node"),
        pytest.param([node("a1").gpus(2).domain("x"), node("a2").gpus(2).domain("y"), node("a3").gpus(2).domain("y")],
                     job(1).gpus(2).replicas(2, "same-interconnect"), ("a2", "a3"), id="gang inside one interconnect domain"),
        pytest.param([node("a1").gpus(2), node("a2").gpus(2)], job(1).gpus(2).replicas(3), None, id="gang too big: nothing"),
    ],
)
def test_gangs_are_all_or_nothing(nodes, workload, expected_nodes):
    decisions = Engine().cycle(snapshot(nodes=nodes, pending=[workload, job(2).gpus(1).submitted(5)], tenants=[VISION]))
    placed = admitted(decisions)
    if expected_nodes is None:
        assert 1 not in placed
        assert 2 in placed  # the smaller job still runs: the failed gang released everything it tried
    else:
        assert tuple(sorted(placed[1][1])) == expected_nodes


@pytest.mark.parametrize(
    ("policy", "same_device"),
    [pytest.param(Policy.BINPACK, True, id="binpack shares a device"),
     pytest.param(Policy.SPREAD, False, id="spread uses separate devices")],
)
def test_fractional_gpus_pack_by_policy(policy, same_device):
    snap = snapshot(nodes=[node("t1", "t4").gpus(2, 16, model="T4")],
                    pending=[job(i).queue("batch").fraction(400, 4).flavors("t4").submitted(i) for i in (1, 2)],
                    tenants=[VISION], queue_policies=queues(inference={"reserved": {}}))
    decisions = Engine(policy=policy).cycle(snap)
    devices = [a.placement.slots[0].devices[0][0] for a in decisions.admissions]
    assert len(devices) == 2
    assert (devices[0] == devices[1]) is same_device


def test_fractions_never_overcommit_a_device():
    snap = snapshot(nodes=[node("t1", "t4").gpus(1, 16, model="T4")],
                    pending=[job(i).queue("batch").fraction(400, 4).flavors("t4").submitted(i) for i in (1, 2, 3)],
                    tenants=[VISION], queue_policies=queues(inference={"reserved": {}}))
    decisions = Engine(policy=Policy.BINPACK).cycle(snap)
    assert sorted(admitted(decisions)) == [1, 2]
    assert decisions.pending[3].blockers[0].kind == "capacity"


def test_escalation_raises_priority_past_max_wait():
    snap = snapshot(
        now=100_000,
        nodes=[node("a1").gpus(1)],
        pending=[job(1).queue("batch").gpus(1).submitted(0), job(2).queue("experiment").gpus(1).submitted(99_000)],
        tenants=[VISION],
    )
    decisions = Engine().cycle(snap)
    assert [(e.workload, e.action, e.priority_boost) for e in decisions.escalations] == [(1, "raise-priority", 100)]
    # batch (100 + 100) still ranks below experiment (200) only on ties; experiment goes first at 200 vs 200 by submit time
    assert admitted(decisions) == {1: ("a100-80g", ("a1",))}


def test_fair_share_serves_the_tenant_with_the_smaller_dominant_share():
    tenants = [tenant("vision").quota("a100-80g", devices=8), tenant("nlp").quota("a100-80g", devices=8)]
    snap = snapshot(
        nodes=[node("a1").gpus(4)],
        running=[job(10).gpus(1).on("a1", 0), job(11).gpus(1).on("a1", 1)],
        pending=[job(1).gpus(1).submitted(1), job(2).gpus(1).submitted(2), job(3).tenant("nlp").gpus(1).submitted(3),
                 job(4).tenant("nlp").gpus(1).submitted(4)],
        tenants=tenants,
    )
    assert sorted(admitted(Engine().cycle(snap))) == [3, 4]


def test_weights_scale_the_share():
    tenants = [tenant("vision").quota("a100-80g", devices=8).weight(4), tenant("nlp").quota("a100-80g", devices=8)]
    snap = snapshot(
        nodes=[node("a1").gpus(4)],
        running=[job(10).gpus(1).on("a1", 0), job(11).tenant("nlp").gpus(1).on("a1", 1)],
        pending=[job(1).gpus(1).submitted(1), job(3).tenant("nlp").gpus(1).submitted(3)],
        tenants=tenants,
    )
    decisions = Engine().cycle(snap)
    assert [a.workload for a in decisions.admissions][0] == 1


def test_a_starving_head_holds_its_flavor_against_smaller_later_work():
    snap = snapshot(
        now=100_000,
        nodes=[node("a1").gpus(4)],
        running=[job(10).gpus(2).on("a1", 0, 1, ends=100_500)],
        pending=[job(1).queue("experiment").gpus(4).submitted(0), job(2).queue("batch").gpus(1).submitted(99_990)],
        tenants=[VISION],
    )
    decisions = Engine().cycle(snap)
    assert not decisions.admissions
    assert decisions.pending[2].blockers[0].kind == "held"
    assert decisions.pending[1].eta == 100_500


def test_eta_names_the_running_workload_whose_end_makes_room():
    snap = snapshot(
        nodes=[node("a1").gpus(2)],
        running=[job(10).gpus(1).on("a1", 0, ends=5000), job(11).gpus(1).on("a1", 1, ends=2500)],
        pending=[job(1).gpus(1), job(2).gpus(2).submitted(1)],
        tenants=[VISION],
    )
    decisions = Engine().cycle(snap)
    assert (decisions.pending[1].eta, decisions.pending[1].eta_because) == (2500, 11)
    assert (decisions.pending[2].eta, decisions.pending[2].eta_because) == (5000, 10)
    assert [decisions.pending[w].position for w in (1, 2)] == [1, 2]


def test_same_snapshot_same_decisions():
    def build():
        return snapshot(
            nodes=[node(f"a{i}").gpus(2) for i in range(4)] + [node("t1", "t4").gpus(2, 16)],
            running=[job(10).queue("batch").gpus(1).on("a0", 0)],
            pending=[job(i).queue(q).gpus(g).flavors("a100-80g", "t4").submitted(i)
                     for i, (q, g) in enumerate([("urgent", 2), ("batch", 1), ("training", 2), ("experiment", 1)] * 3, 1)],
            tenants=[VISION],
        )
    first, second = Engine().cycle(build()), Engine().cycle(build())
    assert first == second


def test_the_snapshot_is_not_mutated():
    snap = snapshot(nodes=[node("a1").gpus(2)], pending=[job(1).gpus(2)], tenants=[VISION])
    Engine().cycle(snap)
    assert snap.nodes[0].devices[0].free_milli == 1000
    assert snap.nodes[0].free_cpu == 64_000


def test_work_admitted_in_this_cycle_is_never_a_victim_in_the_same_cycle():
    # Job 1 goes first (escalated to priority 200) and borrows nlp's device; nlp's job 2 could reclaim
    # it (same queue), but not in the cycle that admitted it.
    snap = snapshot(
        nodes=[node("a1").gpus(2)],
        pending=[job(1).queue("batch").escalated().gpus(2).submitted(1), job(2).tenant("nlp").queue("batch").gpus(1).submitted(2)],
        tenants=[tenant("vision").quota("a100-80g", devices=1), tenant("nlp").quota("a100-80g", devices=1)],
    )
    decisions = Engine().cycle(snap)
    assert [a.workload for a in decisions.admissions] == [1]
    assert decisions.admissions[0].placement.borrowing is True
    assert not decisions.preemptions
    assert decisions.pending[2].blockers[0].kind == "cohort"


def test_the_fragmentation_aware_default_keeps_whole_devices_for_whole_device_work():
    from jupyter_hetero.engine import Request
    from jupyter_hetero.engine.scoring import fragmentation_scorer

    typical = [Request(cpu=1000, mem=1024, devices=1), Request(cpu=1000, mem=1024, device_milli=500)]
    snap = snapshot(
        nodes=[node("t1", "t4").gpus(3, 16, model="T4")],
        running=[job(10).queue("batch").fraction(700).flavors("t4").on("t1", 1, milli=700),
                 job(11).queue("batch").fraction(400).flavors("t4").on("t1", 2, milli=400)],
        pending=[job(1).queue("batch").fraction(300).flavors("t4")],
        tenants=[VISION], queue_policies=queues(inference={"reserved": {}}),
    )
    placed = Engine(node_scorer=fragmentation_scorer(typical)).cycle(snap).admissions[0].placement
    # free: GPU0 1000, GPU1 300, GPU2 600. The 300 slot fits exactly; GPU0 stays whole for whole-GPU work.
    assert placed.slots[0].devices[0][0] == 1


def test_a_head_that_may_not_borrow_does_not_evict_work_it_could_not_use():
    tenants = [tenant("a").quota("a100-80g", devices=2), tenant("b").quota("a100-80g", devices=6)]
    snap = snapshot(
        nodes=[node("n1").gpus(8)],
        running=[job(10).tenant("a").queue("training").gpus(2).on("n1", 0, 1),
                 job(11).tenant("b").queue("batch").gpus(6).on("n1", 2, 3, 4, 5, 6, 7)],
        pending=[job(1).tenant("a").queue("training").gpus(2).submitted(990)],
        tenants=tenants,
    )
    decisions = Engine().cycle(snap)
    assert decisions.preemptions == []
    assert decisions.pending[1].blockers[0].kind == "quota"


def test_a_lender_within_its_nominal_quota_goes_before_a_borrower():
    tenants = [tenant("a").quota("a100-80g", devices=6), tenant("b").quota("a100-80g", devices=2)]
    snap = snapshot(
        now=40,
        nodes=[node("n1").gpus(8)],
        running=[job(10).tenant("a").queue("batch").gpus(4).on("n1", 0, 1, 2, 3),
                 job(11).tenant("b").queue("batch").gpus(2).on("n1", 4, 5)],
        pending=[job(1).tenant("b").queue("batch").gpus(1).submitted(40), job(2).tenant("a").queue("batch").gpus(2).submitted(0)],
        tenants=tenants,
    )
    assert [a.workload for a in Engine().cycle(snap).admissions] == [2]
