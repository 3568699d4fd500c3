"""Who may evict whom: reclaim and reservations respect queue priority and the preemptible flag,
work that can never be preempted never takes what is lent, damping bounds repeated preemption, and
a starving head holds only what it waits for."""

from __future__ import annotations

import pytest

from jupyter_hetero.engine import Engine, render

from ..builders import ServiceLoop, job, kernel, node, queues, server, snapshot, tenant

LENDER_BORROWER = [tenant("lender").quota("a100-80g", devices=2), tenant("borrower").quota("a100-80g", devices=2)]


@pytest.mark.parametrize(
    ("queue", "escalated"),
    [pytest.param("training", True, id="training past its max wait borrows"),
     pytest.param("experiment", False, id="experiment borrows")],
)
def test_a_lender_with_lower_priority_work_does_not_reclaim_a_borrower_over_and_over(queue, escalated):
    """The issue's sequence, played cycle after cycle: the borrower's higher-priority job takes the
    whole node, the lender then submits batch work. Reclaiming it would requeue the borrower, which
    would evict the batch job by priority, which would reclaim again, and so on."""
    loop = ServiceLoop(Engine(), snapshot(now=0, nodes=[node("a1").gpus(4)], tenants=LENDER_BORROWER))
    borrower = job(1).tenant("borrower").queue(queue).gpus(4).runtime(3000)
    loop.submit(borrower.escalated() if escalated else borrower)
    [admission] = loop.cycle().admissions
    assert admission.placement.borrowing
    loop.advance(60)
    loop.submit(job(2).tenant("lender").queue("batch").gpus(1).runtime(600))
    for _ in range(60):
        decisions = loop.tick(60)
        if 2 in decisions.pending:
            assert decisions.pending[2].blockers[0].kind == "cohort"
    assert loop.preemptions == []
    assert loop.starts == {1: [0], 2: [3000]}  # the lender's job starts when the borrower's ends


@pytest.mark.parametrize("queue", ["urgent", "inference"])
def test_queues_that_are_never_preempted_do_not_borrow_lent_quota(queue):
    snap = snapshot(nodes=[node("a1").gpus(4)], pending=[job(1).tenant("borrower").queue(queue).gpus(3)],
                    tenants=LENDER_BORROWER, queue_policies=queues(inference={"reserved": {}}))
    decisions = Engine().cycle(snap)
    assert decisions.admissions == []
    [blocker] = decisions.pending[1].blockers
    # Three devices against a quota of two, in a queue that never borrows: it can never run as asked (issue 37).
    assert render(blocker) == ("request exceeds the tenant's quota: it can never run as asked (it asks 3 devices of "
                               f"flavor a100-80g; tenant borrower has a quota of 2, and queue {queue} is never "
                               "preempted, so it borrows none)")
    assert decisions.pending[1].inadmissible
    # Two, within its own quota but with the lender's work on the rest, wait for quota as before.
    snap = snapshot(nodes=[node("a1").gpus(4)], pending=[job(1).tenant("borrower").queue(queue).gpus(2)],
                    running=[job(9).tenant("borrower").queue("batch").gpus(1).on("a1", 0)],
                    tenants=LENDER_BORROWER, queue_policies=queues(inference={"reserved": {}}))
    blocker = next(b for b in Engine().cycle(snap).pending[1].blockers if b.kind == "quota-not-preemptible")
    assert render(blocker) == (f"quota: tenant borrower uses 1/2 devices of flavor a100-80g; queue {queue} is never "
                               "preempted, so it does not borrow quota that would have to be given back")
    assert render(blocker, "zh").startswith("配额：租户 borrower 已使用规格 a100-80g 的 设备 1/2；")


def test_queues_that_are_never_preempted_do_not_use_another_queues_reservation():
    snap = snapshot(nodes=[node("t1", "t4").gpus(1, 16, model="T4")],
                    pending=[job(1).queue("urgent").gpus(1).flavors("t4")], tenants=[tenant("vision").quota("t4", devices=4)])
    decisions = Engine().cycle(snap)
    assert decisions.admissions == []
    assert render(decisions.pending[1].blockers[0]) == "reserved for inference: 1 devices of flavor t4 are kept for queue inference"


def _cohort(*running, pending):
    tenants = [tenant("lender").quota("a100-80g", devices=2).quota("t4", devices=2),
               tenant("borrower").quota("a100-80g", devices=2).quota("t4", devices=2)]
    return snapshot(nodes=[node("a1").gpus(4), node("t1", "t4").gpus(2, 16, model="T4")], running=list(running),
                    pending=[pending], tenants=tenants)


def _borrowed(builder, own: str = "training"):
    """The borrower holding the whole a100 node: two devices of its own in queue ``own``, the last
    two borrowed by ``builder``."""
    return [job(10).tenant("borrower").queue(own).gpus(2).on("a1", 0, 1),
            builder.tenant("borrower").gpus(2).on("a1", 2, 3, borrowing=True)]


@pytest.mark.parametrize(
    ("running", "pending", "victims"),
    [
        pytest.param(_borrowed(job(11).queue("training")), job(1).tenant("lender").queue("batch").gpus(1),
                     [], id="a batch lender does not reclaim from a training borrower"),
        pytest.param(_borrowed(job(11).queue("batch")), job(1).tenant("lender").queue("training").gpus(1),
                     [(11, "reclaim")], id="a training lender reclaims from a batch borrower"),
        pytest.param(_borrowed(job(11).queue("training")), job(1).tenant("lender").queue("training").gpus(1),
                     [(11, "reclaim")], id="equal priority reclaims"),
        pytest.param(_borrowed(job(11).queue("batch"), own="batch"), job(1).tenant("lender").queue("urgent").gpus(1),
                     [(11, "reclaim")], id="lent quota goes back before the borrower's own share"),
        pytest.param(_borrowed(kernel(11)), job(1).tenant("lender").queue("training").gpus(1),
                     [(11, "reclaim")], id="a busy kernel gives back the quota it borrowed"),
        pytest.param([kernel(11).tenant("borrower").gpus(4).on("a1", 0, 1, 2, 3)], job(1).tenant("lender").queue("urgent").gpus(1),
                     [], id="but a busy kernel is not preempted by priority"),
        pytest.param([kernel(11).tenant("borrower").idle().gpus(4).on("a1", 0, 1, 2, 3)],
                     job(1).tenant("lender").queue("urgent").gpus(1), [(11, "priority")], id="an idle kernel is"),
        pytest.param(_borrowed(job(11).queue("inference"), own="inference"), job(1).tenant("lender").queue("urgent").gpus(1),
                     [], id="inference is never reclaimed, even by urgent work"),
        pytest.param([job(12).queue("urgent").gpus(1).flavors("t4").on("t1", 0, on_reservation=True),
                      job(13).queue("batch").gpus(1).flavors("t4").on("t1", 1)],
                     job(1).tenant("lender").queue("inference").gpus(1).flavors("t4"),
                     [(13, "priority")], id="urgent work on a reservation is not taken back"),
        pytest.param([job(12).queue("training").gpus(1).flavors("t4").on("t1", 0, on_reservation=True),
                      job(13).queue("urgent").gpus(1).flavors("t4").on("t1", 1)],
                     job(1).tenant("lender").queue("inference").gpus(1).flavors("t4"),
                     [(12, "reservation")], id="training work on a reservation is"),
        pytest.param([kernel(12).gpus(1).flavors("t4").on("t1", 0, on_reservation=True),
                      job(13).queue("urgent").gpus(1).flavors("t4").on("t1", 1)],
                     job(1).tenant("lender").queue("inference").gpus(1).flavors("t4"),
                     [(12, "reservation")], id="so is a busy kernel"),
        pytest.param(_borrowed(server(11)), job(1).tenant("lender").queue("training").gpus(1),
                     [], id="a hub user's server keeps even what it borrowed (only the hub stops it)"),
        pytest.param([server(11).tenant("borrower").idle().gpus(4).on("a1", 0, 1, 2, 3)],
                     job(1).tenant("lender").queue("urgent").gpus(1), [], id="and is never preempted by priority"),
        pytest.param([server(12).gpus(1).flavors("t4").on("t1", 0, on_reservation=True),
                      job(13).queue("urgent").gpus(1).flavors("t4").on("t1", 1)],
                     job(1).tenant("lender").queue("inference").gpus(1).flavors("t4"),
                     [], id="nor taken off a reservation"),
    ],
)
def test_reclaim_and_reservations_respect_priority_and_the_preemptible_flag(running, pending, victims):
    decisions = Engine().cycle(_cohort(*running, pending=pending))
    assert [(p.victim, p.reason) for p in decisions.preemptions] == victims


def test_lent_quota_is_reclaimed_only_from_a_tenant_that_still_borrows():
    """Vision's job 10 was admitted borrowing, but vision is back within its nominal quota: reclaiming
    it would push vision below its share. Speech really borrows."""
    tenants = [tenant("vision").quota("a100-80g", devices=2), tenant("nlp").quota("a100-80g", devices=2),
               tenant("speech").quota("a100-80g", devices=0)]
    snap = snapshot(
        nodes=[node("a1").gpus(4)],
        running=[job(10).queue("batch").gpus(2).on("a1", 0, 1, started=500, borrowing=True),
                 job(12).tenant("speech").queue("batch").gpus(2).on("a1", 2, 3, started=100, borrowing=True)],
        pending=[job(1).tenant("nlp").queue("batch").gpus(2)],
        tenants=tenants,
    )
    assert [(p.victim, p.reason) for p in Engine().cycle(snap).preemptions] == [(12, "reclaim")]


# -- damping ----------------------------------------------------------------------------------

def _urgent_needs_the_batch_device(*preempted_at, limits=None, now=4000.0):
    snap = snapshot(now=now, nodes=[node("a1").gpus(1)],
                    running=[job(10).queue("batch").gpus(1).preempted(*preempted_at).on("a1", 0)],
                    pending=[job(1).queue("urgent").gpus(1)], tenants=[tenant("vision").quota("a100-80g", devices=8)])
    return Engine(**(limits or {})).cycle(snap)


def test_a_workload_preempted_too_often_is_protected_and_the_preemptor_says_why():
    decisions = _urgent_needs_the_batch_device(1000, 2000, 3000)
    assert decisions.preemptions == []
    blocker = decisions.pending[1].blockers[0]
    assert render(blocker) == ("preemption: the 1 workload(s) that could make room on flavor a100-80g were each "
                               "preempted 3 times in the last 3600 s and are protected from preemption for 600 s more")
    assert render(blocker, "zh") == "抢占：规格 a100-80g 上可腾出资源的 1 个作业在过去 3600 秒内已各被抢占 3 次，还将受保护 600 秒不被抢占"


@pytest.mark.parametrize(
    ("preempted_at", "limits", "protected"),
    [
        pytest.param((100, 2000, 3000), {}, False, id="the oldest preemption left the window"),
        pytest.param((2000, 3000), {}, False, id="twice is below the limit"),
        pytest.param((3900,), {"preemption_limit": 1, "preemption_window_s": 600}, True, id="a configured limit"),
        pytest.param((3300,), {"preemption_limit": 1, "preemption_window_s": 600}, False, id="a configured window"),
    ],
)
def test_damping_counts_preemptions_within_the_window(preempted_at, limits, protected):
    decisions = _urgent_needs_the_batch_device(*preempted_at, limits=limits)
    assert [p.victim for p in decisions.preemptions] == ([] if protected else [10])


def test_a_protected_workload_runs_only_on_what_cannot_be_taken_back():
    tenants = [tenant("vision").quota("a100-80g", devices=1).quota("t4", devices=2), tenant("nlp").quota("a100-80g", devices=2)]
    snap = snapshot(
        now=4000, nodes=[node("a1").gpus(4), node("t1", "t4").gpus(1, 16, model="T4")],
        running=[job(10).queue("batch").gpus(1).on("a1", 0)],
        pending=[job(1).queue("batch").gpus(1).preempted(3000, 3500, 3900).flavors("a100-80g", "t4")],
        tenants=tenants,
    )
    decisions = Engine().cycle(snap)
    assert decisions.admissions == []
    blockers = {b.flavor: b for b in decisions.pending[1].blockers}
    assert {flavor: b.kind for flavor, b in blockers.items()} == {"a100-80g": "quota-protected", "t4": "reservation"}
    assert render(blockers["a100-80g"], "zh").startswith("配额：租户 vision 已使用规格 a100-80g 的 设备 1/1；该作业近期被抢占次数过多")


def test_damping_bounds_how_often_one_workload_is_preempted():
    """Urgent jobs arrive one after another, each needing the device a long batch job holds. The
    batch job is evicted for the first three; the fourth waits until the hour has passed."""
    loop = ServiceLoop(Engine(), snapshot(now=0, nodes=[node("a1").gpus(1)], tenants=[tenant("vision").quota("a100-80g", devices=8)]))
    loop.submit(job(1).queue("batch").gpus(1).runtime(100_000))
    loop.cycle()
    waiting = []  # why the fourth urgent job waits, cycle by cycle
    for step in range(1, 80):
        if step in (10, 20, 30, 40):
            loop.submit(job(100 + step).queue("urgent").gpus(1).runtime(120))
        loop.tick(60)
        if 140 in loop.last.pending:
            waiting.append(loop.last.pending[140].blockers[0].kind)
    times = [at for at, p in loop.preemptions if p.victim == 1]
    assert times == [600, 1200, 1800, 4200]  # the fourth waited from 2400 until the first left the hour
    assert waiting == ["protected"] * 30 + ["preempting"]
    assert loop.starts[140] == [4260]  # once its victim's 30 s grace was over


# -- holds ------------------------------------------------------------------------------------

def test_a_head_starving_for_its_own_tenants_quota_holds_the_flavor_only_against_its_tenant():
    snap = snapshot(
        now=100_000,
        nodes=[node("a1").gpus(4)],
        running=[job(10).queue("batch").gpus(1).on("a1", 0)],
        pending=[job(1).queue("batch").gpus(2).submitted(0),
                 job(2).tenant("nlp").queue("batch").gpus(1).submitted(99_990),
                 job(3).queue("batch").gpus(1).submitted(99_995)],
        tenants=[tenant("vision").quota("a100-80g", devices=2, borrowing=0), tenant("nlp").quota("a100-80g", devices=2)],
    )
    decisions = Engine().cycle(snap)
    assert [a.workload for a in decisions.admissions] == [2]
    assert decisions.pending[1].blockers[0].kind == "quota"
    assert decisions.pending[3].blockers[0].kind == "held"


def test_a_hold_does_not_keep_a_queue_from_its_own_reservation():
    """The starving urgent job may not use inference's reserved T4, so holding the flavor against
    inference would keep that reservation from its owner for nothing."""
    snap = snapshot(
        now=100_000,
        nodes=[node("t1", "t4").gpus(2, 16, model="T4")],
        running=[job(10).queue("training").gpus(1).flavors("t4").on("t1", 0)],
        pending=[job(1).queue("urgent").gpus(2).flavors("t4").submitted(0),
                 job(2).queue("inference").gpus(1).flavors("t4").submitted(99_000)],
        tenants=[tenant("vision").quota("t4", devices=4)],
    )
    decisions = Engine().cycle(snap)
    assert [a.workload for a in decisions.admissions] == [2]
    assert decisions.preemptions == []


def test_the_damping_limit_must_be_positive():
    with pytest.raises(ValueError, match="preemption_limit"):
        Engine(preemption_limit=0)


def test_a_borrower_of_a_reservation_holds_it_so_a_never_preempted_queue_takes_the_free_device():
    """The audit test's sequence on a loaded machine: urgent work evicts a batch job, which comes back on
    inference's reserved T4 (lent, preemptible); an admin requeues the urgent job. The free T4 is then the
    urgent job's: the reservation is held by the batch job, which inference can still take back. Holding the free
    T4 back for inference too evicted the batch job a second time, and it came back to the same reserved T4."""
    loop = ServiceLoop(Engine(), snapshot(now=0, nodes=[node("t1", "t4").gpus(2, 16, model="T4")],
                                          tenants=[tenant("vision").quota("t4", devices=4)]))
    loop.submit(job(11).queue("batch").gpus(1).flavors("t4").runtime(3600))
    loop.cycle()
    loop.submit(job(1).queue("urgent").gpus(1).flavors("t4").runtime(3600))
    assert [(p.victim, p.reason) for p in loop.cycle().preemptions] == [(11, "priority")]
    loop.tick(30)  # the batch job's grace ends: requeued, then the urgent job is admitted and the batch job borrows
    assert loop.running[11].placement.on_reservation and not loop.running[1].placement.on_reservation
    loop.requeue(1)  # a platform admin preempts the urgent job
    decisions = loop.tick(1)
    assert decisions.preemptions == [] and [a.workload for a in decisions.admissions] == [1]
    assert [(p.victim, p.preemptor) for _at, p in loop.preemptions] == [(11, 1)]
    # The reservation still holds: inference takes back its T4 from the borrower.
    loop.submit(job(2).queue("inference").gpus(1).flavors("t4").runtime(3600))
    assert [(p.victim, p.reason) for p in loop.tick(1).preemptions] == [(11, "reservation")]
