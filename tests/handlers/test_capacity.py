"""Capacity advice through a real server after real jobs: four two-A100 jobs queue behind each other on the demo's
one A100 node, past the batch queue's max wait of 1 s; the advice, replaying them through the engine, asks for
three more nodes like it (two would still leave one waiting), or training to also offer the idle Ascend flavor
it has a variant for, and offers the unused T4 and Ascend nodes for release, but not the A100 node they need."""

from __future__ import annotations

import sys

import pytest
import yaml

from jupyter_hetero.api.openapi import build_document
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH

from .test_api_schema import check


@pytest.fixture
def short_batch_waits(tmp_path, hetero_config):
    """The shipped catalog with the batch queue's max wait at 1 s (list it before ``api``)."""
    catalog = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    next(queue for queue in catalog["queues"] if queue["name"] == "batch")["max_wait_s"] = 1
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(catalog, allow_unicode=True), encoding="utf-8")
    hetero_config["catalog_file"] = str(path)


async def test_capacity_advice_asks_for_enough_nodes_and_releases_unused_ones(short_batch_waits, api, api_error,
                                                                              wait_for):
    job = {"kind": "job", "template": "training", "queue": "batch", "parameters": {"devices": 2, "flavor": "a100-80g"},
           "command": [sys.executable, "-c", "import time; time.sleep(1.5)"]}
    jobs = [await api("workloads", "POST", job) for _ in range(4)]
    for workload in jobs:
        await wait_for(workload["id"], lambda w: w["state"] == "succeeded", timeout=60)

    advice = await api("capacity", since="1h")
    check(build_document(), "/capacity", "get", 200, advice)
    [batch] = [q for q in advice["queues"] if q["queue"] == "batch"]
    assert batch["workloads"] == 4 and batch["over_max_wait"] and batch["recorded_p95_s"] > 3, batch
    assert batch["replayed_p95_s"] > 3  # the replay on today's nodes waits as they did
    [more] = advice["add"]
    assert (more["queue"], more["flavor"], more["nodes"], more["devices"], more["like"]) == \
        ("batch", "a100-80g", 3, 6, "gpu-a100-0"), more
    assert more["replayed_p95_s"] == 0
    # Or: training may also run on Ascend 910B (it has a variant for it), whose node of eight sits idle.
    assert [(s["queue"], s["template"], s["to_flavor"], s["replayed_p95_s"]) for s in advice["shift"]] == \
        [("batch", "training", "ascend-910b", 0)], advice["shift"]
    released = {(r["flavor"], r["node"]) for r in advice["release"]}
    assert released == {("t4", "gpu-t4-0"), ("ascend-910b", "npu-910b-0")}, advice["release"]
    assert all(r["allocated_share"] == 0 for r in advice["release"])

    status, error = await api_error("capacity", since="never")
    assert (status, error["field"]) == (400, "since"), error


@pytest.mark.usefixtures("team")
async def test_capacity_advice_is_for_platform_admins(api_error):
    status, error = await api_error("capacity", as_user="carol")  # a tenant-admin
    assert status == 403 and "platform-admin" in error["message"], error
