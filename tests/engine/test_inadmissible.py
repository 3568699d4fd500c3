"""Inadmissible workloads: every eligible flavor fails statically, so only the inventory can help.

Quota, capacity, holds and preemption are a matter of time; a workload they block stays queued."""

from __future__ import annotations

import pytest

from jupyter_hetero.engine import Engine, render

from ..builders import job, node, snapshot, tenant

VISION = tenant("vision").quota("a100-80g", devices=8).quota("t4", devices=8).quota("cpu-standard", devices=0)


def pending(nodes, workload, *, running=(), tenants=(VISION,)):
    decisions = Engine().cycle(snapshot(nodes=nodes, running=running, pending=[workload], tenants=tenants))
    assert not decisions.admissions
    return decisions.pending[workload.build().id]


@pytest.mark.parametrize(
    ("nodes", "workload"),
    [
        pytest.param([node("a1").gpus(2), node("t1", "t4").gpus(1, 16)], job(1).gpus(4).flavors("a100-80g", "t4"),
                     id="more devices per replica than any node of either flavor"),
        pytest.param([node("a1").gpus(2)], job(1).gpus(1).flavors("h100-80g", "a100-80g").needs(min_driver="999"),
                     id="no node of one flavor, an old driver on the other"),
        pytest.param([node("c1", "cpu-standard").cpu(32)], job(1).cpu(64).flavors("cpu-standard"),
                     id="more cores than the largest node"),
        pytest.param([node("t1", "t4").gpus(1, 16).pending_onboarding()], job(1).gpus(1).flavors("t4"),
                     id="the only node waits for onboarding"),
        pytest.param([node("a1").gpus(2)], job(1).gpus(1).replicas(3).flavors("a100-80g"),
                     id="a gang of more devices than the flavor has"),
        pytest.param([node("t1", "t4").gpus(1, 16)], job(1).fraction(500).replicas(3).flavors("t4"),
                     id="fractions adding up to more than the flavor's devices"),
    ],
)
def test_a_workload_no_node_could_ever_hold_is_inadmissible(nodes, workload):
    waiting = pending(nodes, workload)
    assert waiting.inadmissible
    assert waiting.blockers and waiting.eta is None


@pytest.mark.parametrize(
    ("nodes", "workload", "running", "tenants", "kind"),
    [
        pytest.param([node("a1").gpus(2)], job(1).gpus(2), [job(9).gpus(1).on("a1", 0)], (VISION,), "capacity",
                     id="capacity is a matter of time"),
        pytest.param([node("a1").gpus(8)], job(1).gpus(1), [job(10 + i).gpus(1).on("a1", i) for i in range(8)],
                     (VISION,), "quota", id="quota is a matter of time"),
        pytest.param([node("a1").gpus(2)], job(1).gpus(1), [], (tenant("vision").quota("t4", devices=1),), "no-quota",
                     id="no quota for the only flavor with a node is not the inventory's fault"),
        pytest.param([node("a1").gpus(2), node("t1", "t4").gpus(1, 16)], job(1).gpus(2).flavors("t4", "a100-80g"),
                     [job(9).gpus(1).on("a1", 1)], (VISION,), "capacity",
                     id="one flavor fails statically, another only for now"),
    ],
)
def test_a_workload_that_waits_for_quota_or_capacity_stays_queued(nodes, workload, running, tenants, kind):
    waiting = pending(nodes, workload, running=running, tenants=tenants)
    assert not waiting.inadmissible
    assert kind in {b.kind for b in waiting.blockers}


def test_the_reason_names_every_flavor_in_both_languages():
    waiting = pending([node("a1").gpus(2), node("t1", "t4").gpus(1, 16)], job(1).gpus(4).flavors("a100-80g", "t4"))
    assert [render(b) for b in waiting.blockers] == [
        "capacity: a replica needs 4 devices on one node, nodes of flavor a100-80g have 2",
        "capacity: a replica needs 4 devices on one node, nodes of flavor t4 have 1",
    ]
    # A flavor whose nodes fall short says more than one with no node at all, whatever the template's order.
    first = pending([node("a1").gpus(2)], job(1).gpus(4).flavors("h100-80g", "a100-80g"))
    assert [b.kind for b in first.blockers] == ["device-count", "no-nodes"]
    gang = pending([node("a1").gpus(2)], job(1).gpus(1).replicas(3))
    assert render(gang.blockers[0]) == ("capacity: 3 devices are needed in all; the nodes of flavor a100-80g "
                                        "that could run it have 2 together")
    assert render(gang.blockers[0], "zh") == "容量：共需要 3 张卡；规格 a100-80g 中可运行它的节点合计只有 2 张"


def test_equal_shapes_are_flagged_alike_and_keep_their_places():
    nodes = [node("a1").gpus(2)]
    decisions = Engine().cycle(snapshot(nodes=nodes, pending=[job(1).gpus(4), job(2).gpus(4), job(3).gpus(2)],
                                        tenants=[VISION]))
    assert [a.workload for a in decisions.admissions] == [3]
    assert decisions.pending[1].inadmissible and decisions.pending[2].inadmissible
    assert (decisions.pending[1].position, decisions.pending[2].position) == (1, 2)
