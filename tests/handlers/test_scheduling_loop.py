"""The scheduling loop on a real server: its tick timings are visible to platform admins."""

from __future__ import annotations

import asyncio
import time

import pytest

from .test_lifecycle import gate  # noqa: F401 - the gate fixture


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
