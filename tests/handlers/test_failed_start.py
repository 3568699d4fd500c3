"""A job whose start fails half-way (any error, not only an OSError) gives its devices back at once."""

from __future__ import annotations

import pytest

GANG = {"kind": "job", "template": "training", "parameters": {"devices": 1, "replicas": 2},
        "command": ["python", "-c", "import time; time.sleep(60)"]}


@pytest.fixture
def hetero_config(hetero_config):
    hetero_config["backend_class"] = "tests.fakes.SecondReplicaFails"
    return hetero_config


async def test_a_start_that_fails_half_way_releases_the_gang_and_counts_a_failure(api, wait_for, jp_serverapp):
    job = await api("workloads", "POST", GANG)
    failed = await wait_for(job["id"], lambda w: w["failures"] == 1)
    assert failed["state"] in ("queued", "failed") and failed["placement"] is None, failed
    assert "could not start: device plugin answered garbage" in failed["reason"]
    allocated = {n["name"]: n["allocated"] for n in await api("nodes")}["gpu-a100-0"]
    assert allocated["device_milli"] == 0, allocated
    backend = jp_serverapp.web_app.settings["hetero_platform"].backend
    assert backend.started and not any(backend.running(handle) for handle in backend.started)
