"""Jobs end to end: real server, real SQLite file, real processes on this machine."""

from __future__ import annotations

import pytest

JOB = {"kind": "job", "template": "data-preprocessing", "queue": "batch", "command": ["python", "-c", "print(42)"]}


async def test_the_minimal_contract(api, wait_for):
    created = await api("workloads", "POST", JOB)
    assert set(created) >= {"id", "state"}
    assert created["state"] == "queued"
    done = await wait_for(created["id"], lambda w: w["state"] in ("succeeded", "failed"))
    assert done["state"] == "succeeded", done
    assert "42" in (await _logs(api, created["id"]))


async def _logs(api_fixture, workload_id, **params):
    return await api_fixture.text(f"workloads/{workload_id}/logs", **params)


async def test_a_training_job_sees_exactly_its_gpus(api, wait_for):
    body = {
        "kind": "job", "template": "training", "parameters": {"devices": 2},
        "command": ["python", "-c", "import os; print('CUDA=' + os.environ['CUDA_VISIBLE_DEVICES'], "
                    "'NPU=' + os.environ['ASCEND_RT_VISIBLE_DEVICES'], os.environ['HETERO_FLAVOR'])"],
    }
    created = await api("workloads", "POST", body)
    done = await wait_for(created["id"], lambda w: w["state"] in ("succeeded", "failed"))
    assert done["state"] == "succeeded", done
    log = await _logs(api, created["id"])
    assert "CUDA=0,1 NPU= a100-80g" in log
    assert done["attempts"][0]["node"] == "gpu-a100-0"
