"""The engine in a process of its own, on a real server: previews never hold the event loop, a killed
engine process is replaced and resynced, and the server's stop leaves no engine process behind."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import psutil
import pytest
import yaml

# Flavors of identical CPU nodes, one pool each, and a template eligible on all of them: a preview
# runs one dry cycle per flavor, so here it runs many, each over every node.
POOLS = 32
NODES_PER_POOL = 50
QUICK = {"kind": "job", "template": "data-preprocessing", "command": ["true"], "parameters": {"cpu": 1, "memory": "1Gi"}}


@pytest.fixture
def wide(tmp_path, hetero_config):
    """A catalog whose ``wide`` template is eligible on every one of :data:`POOLS` flavors, and
    ``POOLS * NODES_PER_POOL`` emulated nodes to fill them."""
    from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH

    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    pools = [f"pool-{n:02d}" for n in range(POOLS)]
    data["flavors"] = [
        {"name": pool, "display": {"en": pool, "zh": pool},
         "selector": {"family": "cpu", "labels": [{"key": "pool", "operator": "In", "values": [pool]}]}}
        for pool in pools
    ] + data["flavors"]
    base = next(t for t in data["templates"] if t["name"] == "data-preprocessing")
    data["templates"].append({**base, "name": "wide", "display": {"en": "Wide", "zh": "宽"}, "flavors": pools})
    for tenant in data["tenants"]:
        tenant.setdefault("quotas", {}).update({pool: {"nominal": {"cpu": 64, "memory": "256Gi"}} for pool in pools})
    catalog = tmp_path / "wide-catalog.yaml"
    catalog.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    hetero_config["catalog_file"] = str(catalog)
    hetero_config["emulated_nodes_file"] = ""
    hetero_config["discover_local"] = False
    hetero_config["emulated_nodes"] = [
        {"name": pool, "replicas": NODES_PER_POOL, "cpu": 64, "memory": "256Gi", "labels": {"pool": pool}}
        for pool in pools
    ]


def _platform(jp_serverapp):
    return jp_serverapp.web_app.settings["hetero_platform"]


@pytest.mark.usefixtures("wide")
async def test_reads_are_answered_while_a_preview_runs_its_dry_cycles(api):
    await api("previews", "POST", {"template": "wide"})  # the engine process starts and gets the inventory
    started = time.perf_counter()
    preview = asyncio.ensure_future(api("previews", "POST", {"template": "wide"}))
    answered_during, slowest = 0, 0.0
    while not preview.done():
        asked = time.perf_counter()
        await api("queues")
        slowest = max(slowest, time.perf_counter() - asked)
        answered_during += not preview.done()
    preview_s = time.perf_counter() - started
    answer = await preview
    assert len(answer["flavors"]) == POOLS and answer["starts_now"] is True
    assert answered_during >= 1, "the preview was over before any read could be answered"
    # Before, the preview's 33 dry cycles ran on the event loop: a read asked meanwhile waited for
    # nearly all of the preview. Now reads take what they take on a busy machine, a fraction of it.
    assert slowest < max(0.5, preview_s / 2), f"a read waited {slowest:.2f} s of the preview's {preview_s:.2f} s"


async def test_a_killed_engine_process_is_replaced_and_the_next_tick_admits(api, jp_serverapp, wait_for):
    process = _platform(jp_serverapp).scheduler.engine_process
    first = await api("workloads", "POST", QUICK)
    assert (await wait_for(first["id"], lambda w: w["state"] in ("succeeded", "failed")))["state"] == "succeeded"
    killed = process.pid
    os.kill(killed, signal.SIGKILL)
    second = await api("workloads", "POST", QUICK)
    done = await wait_for(second["id"], lambda w: w["state"] in ("succeeded", "failed"))
    assert done["state"] == "succeeded"
    assert process.pid not in (None, killed) and process.starts >= 2


async def test_the_servers_stop_ends_the_engine_process(api, jp_serverapp, wait_for):
    job = await api("workloads", "POST", QUICK)
    await wait_for(job["id"], lambda w: w["state"] == "succeeded")
    pid = _platform(jp_serverapp).scheduler.engine_process.pid
    child = psutil.Process(pid)
    await jp_serverapp.cleanup_extensions()  # what the server's stop runs
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert pid not in {p.pid for p in psutil.Process().children(recursive=True)}


@pytest.fixture
def in_process(hetero_config):
    hetero_config["engine_process"] = False


@pytest.mark.usefixtures("in_process")
async def test_with_the_engine_process_off_cycles_run_in_the_server(api, jp_serverapp, wait_for):
    job = await api("workloads", "POST", QUICK)
    assert (await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed")))["state"] == "succeeded"
    assert _platform(jp_serverapp).scheduler.engine_process is None
    answer = await api("previews", "POST", {"template": "data-preprocessing"})
    assert answer["starts_now"] is True


async def test_the_admins_preemption_dry_run_answers_from_the_engine_process(api, api_error, wait_for):
    hold = {"kind": "job", "template": "training", "parameters": {"devices": 2, "flavor": "a100-80g"},
            "command": ["sleep", "30"]}
    running = await api("workloads", "POST", hold)
    await wait_for(running["id"], lambda w: w["state"] == "running")
    waiting = await api("workloads", "POST", hold)
    await wait_for(waiting["id"], lambda w: w.get("blockers"))
    answer = await api(f"workloads/{waiting['id']}/preempt", "POST", dry_run="true")
    assert answer["dry_run"] is True and answer["would_admit"] is False and answer["victims"] == []
    assert answer["blockers"] and all(isinstance(line, str) for line in answer["blockers"])
    status, error = await api_error(f"workloads/{running['id']}/preempt", "POST", dry_run="true")
    assert status == 409 and "a dry run shows what a waiting workload would evict" in error["message"]
    for job in (waiting, running):
        await api(f"workloads/{job['id']}", "DELETE")


@pytest.fixture
def impatient(hetero_config):
    """An engine process that must answer within a millisecond, even a new one: it never can."""
    hetero_config["engine_process_timeout"] = 0.001
    hetero_config["engine_process_start_timeout"] = 0.0


@pytest.mark.usefixtures("impatient")
async def test_a_preview_that_meets_a_stuck_engine_process_answers_503_in_both_languages(api_error):
    status, error = await api_error("previews", "POST", {"template": "data-preprocessing"})
    assert (status, error["reason"]) == (503, "engine-unavailable")
    assert error["message"].startswith("The scheduler's engine is restarting") and error["message_zh"].startswith("调度引擎")
