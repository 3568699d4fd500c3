"""Dominant-resource fairness: each accelerator kind (flavor) is a resource of its own."""

from __future__ import annotations

from jupyter_hetero.engine import Engine

from ..builders import job, node, snapshot, tenant


def test_npu_use_does_not_count_against_a_tenants_gpu_share():
    """npu-team holds 8 of 64 NPUs (share 0.125), gpu-team 2 of 8 GPUs (0.25): npu-team goes first
    for the one free GPU. Pooled into one device count it would be 8/72 against 2/72, the other way."""
    snap = snapshot(
        nodes=[node(f"npu{i}", "ascend-910b").gpus(8, 64, family="ascend", model="910B3") for i in range(8)]
        + [node("gpu0").gpus(8)],
        running=[job(10).tenant("npu-team").gpus(8).flavors("ascend-910b").on("npu0", *range(8)),
                 job(20).tenant("gpu-team").gpus(2).on("gpu0", 0, 1),
                 job(21).tenant("others").gpus(5).on("gpu0", 2, 3, 4, 5, 6)],
        pending=[job(1).tenant("gpu-team").gpus(1).submitted(1), job(2).tenant("npu-team").gpus(1).submitted(2)],
        tenants=[tenant("npu-team").quota("ascend-910b", devices=64).quota("a100-80g", devices=8),
                 tenant("gpu-team").quota("a100-80g", devices=8), tenant("others").quota("a100-80g", devices=8)],
    )
    decisions = Engine().cycle(snap)
    assert [a.workload for a in decisions.admissions] == [2]
    assert decisions.pending[1].blockers[0].kind == "capacity"
