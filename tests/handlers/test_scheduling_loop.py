"""The scheduling loop on a real server: ticks off the event loop (reads and submissions never wait
for one; wake-ups coalesce), one process scan per tick, tick timings visible to platform admins."""

from __future__ import annotations

import asyncio
import json
import time

import psutil
import pytest

from ..harness import until_async
from .test_lifecycle import final, gate, running  # noqa: F401 - the gate fixture

# A job that is done as soon as it starts: these tests are about the ticks, not the work.
QUICK = {"kind": "job", "template": "data-preprocessing", "command": ["true"], "parameters": {"cpu": 1, "memory": "1Gi"}}


@pytest.fixture
def gated(hetero_config):
    """A server whose backend holds every launch, and so the tick launching it, until ``backend.gate.set()``."""
    hetero_config["backend_class"] = "tests.fakes.GatedBackend"


@pytest.fixture
def timer_off(hetero_config):
    """No timer ticks: every tick is a wake-up's."""
    hetero_config["schedule_interval"] = 60


def _backend(jp_serverapp):
    return jp_serverapp.web_app.settings["hetero_platform"].backend


@pytest.mark.usefixtures("team")
async def test_scheduler_ticks_show_platform_admins_the_recent_ticks_per_phase_and_version_stays_small(
        api, api_error, gate):  # noqa: F811
    await api("workloads", "POST", gate.job("g", template="data-preprocessing"), as_user="alice")

    async def ticked():
        scheduler = await api("scheduler/ticks", as_user="root")
        return scheduler if scheduler["ticks"] >= 1 else None

    scheduler = await until_async(ticked, what="a tick")
    tick = scheduler["recent"][-1]
    assert tick["total_s"] >= tick["engine_s"] >= 0
    assert {"monitor_s", "snapshot_s", "apply_s", "running", "pending", "admitted", "changed"} <= tick.keys()
    status, refusal = await api_error("scheduler/ticks", as_user="alice")
    assert status == 403 and "platform-admin role" in refusal["message"], refusal
    for user in ("root", "alice"):  # the figures no longer ride on the version, an admin's included
        version = await api("version", as_user=user)
        assert len(json.dumps(version)) < 1024, version
        assert version.keys() == {"version", "api", "mode", "backend", "schema_version", "database"}
    gate.open("g")


@pytest.mark.usefixtures("team")
async def test_ticks_never_walk_a_jobs_process_tree_and_read_the_process_table_only_for_usage(
        api, gate, wait_for, monkeypatch, jp_serverapp):  # noqa: F811
    from jupyter_hetero.backends.local.processes import USAGE_INTERVAL_S

    jobs = [await api("workloads", "POST", gate.job(f"g{n}", template="data-preprocessing"), as_user="alice")
            for n in range(3)]
    for job in jobs:
        await wait_for(job["id"], running, as_user="alice")
    ticks = jp_serverapp.web_app.settings["hetero_platform"].scheduler.ticks
    passes, walks = [], []
    real_iter = psutil.process_iter

    def counting_iter(*args, **kwargs):
        passes.append(1)
        return real_iter(*args, **kwargs)

    def counting_children(process, *args, **kwargs):
        walks.append(process.pid)
        return []

    started, since = time.monotonic(), ticks.count
    monkeypatch.setattr(psutil, "process_iter", counting_iter)
    monkeypatch.setattr(psutil.Process, "children", counting_children)
    try:
        await until_async(lambda: ticks.count >= since + 5 or walks, what="five ticks")
    finally:
        monkeypatch.undo()
        for n in range(3):
            gate.open(f"g{n}")
    assert walks == [], "ticks walked each job's process tree through /proc on its own"
    # Liveness costs a waitpid per replica; the whole table is read for usage, every few seconds.
    assert len(passes) <= 1 + (time.monotonic() - started) / USAGE_INTERVAL_S


@pytest.mark.usefixtures("gated")
async def test_reads_and_submissions_are_answered_while_a_tick_is_launching(api, jp_serverapp, wait_for):
    backend = _backend(jp_serverapp)
    first = await api("workloads", "POST", QUICK)
    await until_async(backend.launching.is_set, what="the tick's launch")
    queues = await api("queues")
    described = await api(f"workloads/{first['id']}")
    second = await api("workloads", "POST", QUICK)
    assert not backend.launched.is_set(), "the answers waited until the tick had finished its launch"
    assert {q["name"] for q in queues} >= {"batch"} and described["state"] in ("admitted", "starting")
    backend.gate.set()
    for job in (first, second):
        assert (await wait_for(job["id"], final))["state"] == "succeeded"


@pytest.mark.usefixtures("gated", "timer_off")
async def test_a_burst_of_submissions_during_a_tick_makes_one_more_tick_not_one_each(api, jp_serverapp, wait_for):
    backend = _backend(jp_serverapp)
    first = await api("workloads", "POST", QUICK)
    await until_async(backend.launching.is_set, what="the tick's launch")
    before = await api("scheduler/ticks")
    burst = await asyncio.gather(*(api("workloads", "POST", QUICK) for _ in range(20)))
    assert not backend.launched.is_set(), "the submissions waited until the tick had finished its launch"
    backend.gate.set()

    async def two_more_ticks():
        scheduler = await api("scheduler/ticks")
        return scheduler if scheduler["ticks"] >= before["ticks"] + 2 else None

    after = await until_async(two_more_ticks, what="the tick after the held one")
    assert after["wakes"] - before["wakes"] == 20
    assert after["ticks"] - before["ticks"] == 2  # the held tick, then one for the whole burst
    assert after["recent"][-1]["admitted"] == 20
    for job in [first, *burst]:
        assert (await wait_for(job["id"], lambda w: w["state"] != "queued"))["state"] != "queued"


@pytest.mark.usefixtures("gated")
async def test_a_cancel_that_arrives_while_the_tick_starts_the_job_keeps_its_reason(api, jp_serverapp, wait_for):
    backend = _backend(jp_serverapp)
    job = await api("workloads", "POST", {**QUICK, "command": ["sleep", "30"]})
    await until_async(backend.launching.is_set, what="the tick's launch")
    await api(f"workloads/{job['id']}", "DELETE")  # the tick is between "starting" and "started"
    backend.gate.set()
    ended = await wait_for(job["id"], final)
    assert ended["state"] == "cancelled"
    assert ended["reason"].startswith("cancelled by"), ended["reason"]
