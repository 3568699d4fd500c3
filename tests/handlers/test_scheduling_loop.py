"""The scheduling loop on a real server: one process scan per tick, its timings visible to platform admins."""

from __future__ import annotations

import asyncio
import time

import psutil
import pytest

from .test_lifecycle import gate, running  # noqa: F401 - the gate fixture


async def _until(predicate, timeout: float = 20.0, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while not (value := await predicate()):
        assert time.monotonic() < deadline, f"{what} never held"
        await asyncio.sleep(0.05)
    return value


@pytest.mark.usefixtures("team")
async def test_version_shows_platform_admins_the_recent_ticks_per_phase(api, gate):  # noqa: F811
    await api("workloads", "POST", gate.job("g", template="data-preprocessing"), as_user="alice")

    async def ticked():
        scheduler = (await api("version", as_user="root")).get("scheduler")
        return scheduler if scheduler and scheduler["ticks"] >= 1 else None

    scheduler = await _until(ticked, what="a tick")
    tick = scheduler["recent"][-1]
    assert tick["total_s"] >= tick["engine_s"] >= 0
    assert {"monitor_s", "snapshot_s", "apply_s", "running", "pending", "admitted", "changed"} <= tick.keys()
    assert "scheduler" not in await api("version", as_user="alice")
    gate.open("g")


@pytest.mark.usefixtures("team")
async def test_a_tick_reads_the_process_table_once_not_once_per_running_job(api, gate, wait_for, monkeypatch):  # noqa: F811
    jobs = [await api("workloads", "POST", gate.job(f"g{n}", template="data-preprocessing"), as_user="alice")
            for n in range(3)]
    for job in jobs:
        await wait_for(job["id"], running, as_user="alice")
    passes, walks = [], []
    real_iter = psutil.process_iter

    def counting_iter(*args, **kwargs):
        passes.append(1)
        return real_iter(*args, **kwargs)

    def counting_children(process, *args, **kwargs):
        walks.append(process.pid)
        return []

    monkeypatch.setattr(psutil, "process_iter", counting_iter)
    monkeypatch.setattr(psutil.Process, "children", counting_children)
    try:
        await _until(_async(lambda: len(passes) >= 3 or walks), what="three ticks")
    finally:
        monkeypatch.undo()
        for n in range(3):
            gate.open(f"g{n}")
    assert walks == [], "ticks walked each job's process tree through /proc on its own"


def _async(predicate):
    async def check():
        return predicate()

    return check
