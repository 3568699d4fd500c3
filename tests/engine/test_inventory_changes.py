"""Inventory that changes under running work: the cycle reports that work lost and schedules the rest."""

from __future__ import annotations

import pytest

from jupyter_hetero.engine import Engine, Slot, free_capacity, render

from ..builders import job, node, snapshot, tenant

VISION_2 = tenant("vision").quota("a100-80g", devices=2)


def admitted(decisions) -> dict[int, tuple]:
    return {a.workload: tuple((s.node, tuple(d[0] for d in s.devices)) for s in a.placement.slots)
            for a in decisions.admissions}


@pytest.mark.parametrize(
    ("nodes", "lost", "reason"),
    [
        pytest.param([node("gpu-a100-1").gpus(2)], job(10).gpus(1).on("gpu-a100-0", 1),
                     "node gpu-a100-0 is no longer in the inventory", id="node removed"),
        pytest.param([node("gpu-a100-0").gpus(1), node("gpu-a100-1").gpus(2)], job(10).gpus(1).on("gpu-a100-0", 6),
                     "node gpu-a100-0 has 1 devices now; the placement uses device 6", id="node back with fewer devices"),
        pytest.param([node("gpu-a100-0", "cpu-standard"), node("gpu-a100-1").gpus(2)], job(10).gpus(1).on("gpu-a100-0", 0),
                     "node gpu-a100-0 has 0 devices now; the placement uses device 0", id="node back without accelerators"),
        pytest.param([node("gpu-a100-1").gpus(2)],
                     job(10).gpus(1).replicas(2).slots(Slot("gpu-a100-1", ((0, 1000, 0),)), Slot("gpu-a100-0", ((0, 1000, 0),))),
                     "node gpu-a100-0 is no longer in the inventory", id="one replica of a gang on a removed node"),
    ],
)
def test_running_work_whose_placement_is_gone_is_lost_and_everything_else_is_scheduled(nodes, lost, reason):
    snap = snapshot(nodes=nodes, running=[lost, job(11).gpus(1).on("gpu-a100-1", 1)],
                    pending=[job(1).gpus(1)], tenants=[VISION_2])
    decisions = Engine().cycle(snap)
    assert [(lost.workload, lost.reason) for lost in decisions.lost] == [(10, reason)]
    assert render(decisions.lost[0]) == reason
    # Neither its quota nor its devices are charged: the pending job gets the tenant's second device,
    # and only the other running job holds capacity.
    assert list(admitted(decisions)) == [1]
    total, free = free_capacity(snap)["a100-80g"]
    assert total.dev - free.dev == 1000


def test_lost_work_is_explained_in_chinese_too():
    snap = snapshot(nodes=[node("n1").gpus(4)], running=[job(10).gpus(1).on("n1", 6), job(12).gpus(1).on("n0", 0)],
                    tenants=[VISION_2])
    by_id = {lost.workload: lost for lost in Engine().cycle(snap).lost}
    assert render(by_id[10], "zh") == "节点 n1 现有 4 张加速卡；该作业的放置使用第 6 号卡"
    assert render(by_id[12], "zh") == "节点 n0 已不在资源清单中"


def test_a_lost_victim_is_not_waited_for_and_every_later_cycle_still_runs():
    snap = snapshot(
        nodes=[node("a1").gpus(1)],
        running=[job(10).queue("batch").gpus(1).preempting(1030, for_workload=1).on("a0", 0)],
        pending=[job(1).queue("urgent").gpus(1)],
        tenants=[VISION_2],
    )
    decisions = Engine().cycle(snap)
    assert [lost.workload for lost in decisions.lost] == [10]
    assert admitted(decisions) == {1: (("a1", (0,)),)}
    total, free = free_capacity(snap)["a100-80g"]
    assert (total.dev, free.dev) == (1000, 1000)
