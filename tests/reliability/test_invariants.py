"""The invariants hold while a real server works through a concurrent burst: two tenants submitting at once, more
A100 work than their quotas hold, quick CPU jobs finishing, waiting and running jobs cancelled. Checked from the
store and the process table every few hundred milliseconds while it runs, and once it has settled."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jupyter_hetero.backends.kubernetes.backend import WORKLOAD_LABEL
from jupyter_hetero.catalog import load_catalog
from jupyter_hetero.store import Repository

from .invariants import violations

pytestmark = [pytest.mark.usefixtures("team"), pytest.mark.team(vision_a100=1, nlp_a100=1)]

SLEEP = "import time; time.sleep({seconds})"
FINAL = ("succeeded", "failed", "cancelled")


def job(name: str, template: str, seconds: float, **parameters) -> dict:
    return {"kind": "job", "name": name, "template": template, "parameters": parameters,
            "command": [sys.executable, "-c", SLEEP.format(seconds=seconds)]}


async def test_a_concurrent_burst_of_two_tenants_keeps_every_invariant(api, hetero_config):
    catalog = load_catalog(hetero_config["catalog_file"])
    store = Repository(hetero_config["db_url"], clock=time.time)  # a second reader of the server's store
    work_dir = Path(hetero_config["work_dir"])
    bodies = [(user, job(f"burst-{user}-{kind}-{i}", template, seconds, **parameters))
              for user in ("alice", "bob")
              for kind, template, seconds, parameters, count in (("cpu", "data-preprocessing", 0.2, {}, 10),
                                                                 ("a100", "training", 0.6, {"devices": 1}, 4),
                                                                 ("long", "data-preprocessing", 30, {}, 3))
              for i in range(count)]
    submitted = await asyncio.gather(*(api("workloads", "POST", body, as_user=user) for user, body in bodies))
    acknowledged = {answer["name"]: answer["id"] for answer in submitted}
    assert len(acknowledged) == len(bodies) == 34

    seen: list[str] = []
    checks = 0
    long_jobs = [(user, answer["id"]) for (user, body), answer in zip(bodies, submitted, strict=True)
                 if "-long-" in body["name"]]
    cancelled = False
    deadline = time.monotonic() + 90
    while True:
        seen += violations(store, catalog, acknowledged=acknowledged, work_dir=work_dir)
        checks += 1
        states = {w["id"]: w["state"] for w in await api("workloads", as_user="root", limit=500)}
        if not cancelled and all(states[i] != "queued" for _u, i in long_jobs[:2]):
            # Cancel every long job, running or waiting, once a few run.
            await asyncio.gather(*(api(f"workloads/{i}", "DELETE", as_user=user) for user, i in long_jobs))
            cancelled = True
        if cancelled and all(state in FINAL for state in states.values()):
            break
        assert time.monotonic() < deadline, f"the burst did not settle: {states}"
        await asyncio.sleep(0.25)
    await asyncio.sleep(0.5)  # the last processes' exits, and any late release
    seen += violations(store, catalog, acknowledged=acknowledged, work_dir=work_dir)
    store.close()
    assert not seen, "\n".join(dict.fromkeys(seen))
    assert checks >= 5
    print(f"invariants: {len(acknowledged)} submissions, {checks} checks, no violation")
    finals = {w["state"] for w in await api("workloads", as_user="root", limit=500)}
    assert finals <= set(FINAL) and "cancelled" in finals and "succeeded" in finals


def test_the_checker_finds_each_kind_of_violation(tmp_path):
    """A store written wrong on purpose: the checker names each fault (so a pass above means something)."""
    from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH
    from jupyter_hetero.store.tables import WorkloadRow

    catalog = load_catalog(DEFAULT_CATALOG_PATH)
    store = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=time.time)
    store.record_nodes([{"name": "gpu-1", "source": "emulated", "emulated": True, "flavor": "a100-80g",
                         "capability": {"accelerator": {"count": 2}}}], [])

    def placed(name: str, state: str, devices: list[tuple[int, int]], held: int) -> int:
        placement = {"flavor": "a100-80g", "slots": [{"node": "gpu-1", "devices": [
            {"index": index, "milli": milli, "memory_mib": 0} for index, milli in devices]}]}
        row = store.add_workload(WorkloadRow(
            kind="job", name=name, tenant="default", user="ann", template="training", queue="batch",
            request={"request": {"cpu_milli": 1000, "memory_mib": 1024}, "flavors": ["a100-80g"]}, spec={},
            state="queued", held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, attempts=0), reason="test")
        store.update_workload(row.id, event="admitted", reason="test", state=state, placement=placement,
                              held_device_milli=held)
        return row.id

    first = placed("one", "running", [(0, 1000)], 1000)
    placed("two", "running", [(0, 500), (5, 1000)], 1500)  # device 0 twice over; device 5 is not there
    stuck = placed("three", "succeeded", [(1, 1000)], 1000)  # ended, still holding, no release said
    service = store.add_workload(WorkloadRow(
        kind="service", name="svc", tenant="default", user="ann", template="online-inference", queue="inference",
        request={}, spec={}, state="queued", held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, attempts=1),
        reason="test")
    store.update_workload(service.id, event="preempted", reason="test")
    # Processes of this store's work: one of an attempt that is not the newest, one of work that has ended.
    (tmp_path / "work").mkdir()
    sleepers = [subprocess.Popen(["sleep", "60"], cwd=tmp_path / "work", env={
        **os.environ, "HETERO_WORKLOAD_ID": str(workload), "HETERO_ATTEMPT": "1"}) for workload in (first, stuck)]
    try:
        found = violations(store, catalog, acknowledged={"one": first, "ghost": 99}, work_dir=tmp_path / "work",
                           pods=[{"metadata": {"namespace": "hetero", "name": f"hetero-job-{workload}-a1-r0",
                                               "labels": {WORKLOAD_LABEL: str(workload)}}} for workload in (first, stuck)])
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    store.close()
    assert f"service replica {service.id} was preempted" in found
    assert f"pod hetero/hetero-job-{stuck}-a1-r0 is there for workload {stuck}, which is succeeded" in found
    assert not [line for line in found if line.startswith(f"pod hetero/hetero-job-{first}-")]
    assert f"process {sleepers[0].pid} works for attempt 1 of workload {first}, whose newest is 0: two attempts " \
           "alive at once" in found
    assert f"process {sleepers[1].pid} works for workload {stuck}, which is succeeded" in found
    assert "device 0 of gpu-1 is allocated 1500 milli, past its 1000" in found
    assert any("holds device 5 of gpu-1, which has 2" in line for line in found)
    assert any(line.startswith(f"workload {stuck} is succeeded but still holds") for line in found)
    assert any(line.startswith(f"workload {stuck} is succeeded with no release after its admission") for line in found)
    assert "submission ghost (acknowledged as 99) is in the store as None" in found
