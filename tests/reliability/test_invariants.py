"""The invariants hold while a real server works through a concurrent burst: two tenants submitting at once, more
A100 work than their quotas hold, quick CPU jobs finishing, waiting and running jobs cancelled; and while batch work
borrows the inference queue's reserved devices that a service then takes back. Checked from the store and the
process table every few hundred milliseconds while it runs, and once it has settled."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jupyter_hetero.backends.kubernetes.backend import WORKLOAD_LABEL
from jupyter_hetero.catalog import load_catalog
from jupyter_hetero.store import Repository

from ..serving.test_services import MODEL
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


@pytest.mark.team(vision_a100=2, queues={"batch": {"preemption": {"grace_s": 2}}})
async def test_reserved_devices_lent_to_batch_work_are_taken_back_for_a_service(api, hetero_config):
    """Batch jobs fill every GPU the tenant may use, the inference queue's reserved A100 and T4 too (lent while
    idle); then, at once, a two-replica service needs both, another tenant's batch job waits and quick CPU jobs of
    both come and go. The checker, every 250 ms, holds that the lent devices go back within the batch queue's grace
    (2 s here, so that the bound of 7 s is shorter than the run)."""
    catalog = load_catalog(hetero_config["catalog_file"])
    store = Repository(hetero_config["db_url"], clock=time.time)
    work_dir = Path(hetero_config["work_dir"])
    hold = {"template": "batch-inference", "parameters": {"devices": 1},
            "command": [sys.executable, "-c", SLEEP.format(seconds=300)]}
    acknowledged: dict[str, int] = {}

    async def submit(*bodies: tuple[str, dict]) -> None:
        answers = await asyncio.gather(*(api("workloads", "POST", body, as_user=user) for user, body in bodies))
        acknowledged.update((answer["name"], answer["id"]) for answer in answers)

    checks = 0

    async def watch(done, what: str, timeout: float = 60) -> None:
        """Check every 250 ms until ``done()``; fail at the first violation."""
        nonlocal checks
        deadline = time.monotonic() + timeout
        while True:
            seen = violations(store, catalog, acknowledged=acknowledged, work_dir=work_dir)
            checks += 1
            assert not seen, "\n".join(seen)
            if await done():
                return
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.25)

    async def running(*ids: int) -> bool:
        return {(await api(f"workloads/{i}", as_user="root"))["state"] for i in ids} == {"running"}

    lenders = [f"lend-{i}" for i in range(3)]
    await submit(*(("alice", {**hold, "name": name}) for name in lenders))
    await watch(lambda: running(*(acknowledged[name] for name in lenders)), "the batch jobs to fill the GPUs")
    # Then, at once: the service, bob's batch job waiting for a GPU, and quick CPU jobs of both tenants.
    service, _ = await asyncio.gather(
        api("services", "POST", {"name": "reserved", "command": MODEL, "replicas": 2, "parameters": {"devices": 1}},
            as_user="alice"),
        submit(("bob", {**hold, "name": "wait"}), *((user, job(f"quick-{user}-{i}", "data-preprocessing", 0.2))
                                                    for user in ("alice", "bob") for i in range(5))))
    replicas = [replica["id"] for replica in service["replica_workloads"]]
    await watch(lambda: running(*replicas), "the service's replicas to run")
    await api("services/reserved", "DELETE", as_user="alice")
    for name in (*lenders, "wait"):
        await api(f"workloads/{acknowledged[name]}", "DELETE", as_user="bob" if name == "wait" else "alice")

    async def settled() -> bool:
        return all(w["state"] in FINAL for w in await api("workloads", as_user="root", limit=500))

    await watch(settled, "everything to end")
    await asyncio.sleep(0.5)  # the last processes' exits
    seen = violations(store, catalog, acknowledged=acknowledged, work_dir=work_dir)
    taken_back = [e for e in store.events() if e.type == "preempting" and e.data.get("reason") == "reservation"]
    waits = [_wait(store.events(workload_id=r)) for r in replicas]
    store.close()
    assert not seen, "\n".join(dict.fromkeys(seen))
    assert len(taken_back) == 2, taken_back  # the lent A100 and the lent T4, each taken back once
    print(f"reserved capacity: {len(acknowledged) + 2} workloads, {checks} checks, {len(taken_back)} lent devices "
          f"taken back, the replicas waited {max(waits):.2f} s at most, no violation")


def _wait(events) -> float:
    """Seconds from a workload's submission to its first admission."""
    return next(e.at for e in events if e.type == "admitted") - events[0].at


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
        store.update_workload(row.id, event="admitted", reason="test", data=placement, state=state,
                              placement=placement, held_device_milli=held)
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
    # Batch work not lent (placed without on_reservation), past what inference's reservation leaves to others.
    assert f"work of other queues held 2500 milli of a100-80g that queue inference could not take back (workloads " \
           f"[{first}, {first + 1}]), past the 1000 its reservation of 1000 leaves them of 2000" in found


def test_the_checker_finds_a_reservation_not_taken_back_in_time(tmp_path):
    """A history written on purpose: inference's reserved A100 is lent to a batch job and taken back in 3 s, and a
    second inference workload waits for more than its queue reserved, both lawful; its reserved T4 is lent and never
    taken back while an inference replica waits for ten minutes, which the checker names."""
    from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH
    from jupyter_hetero.store.tables import WorkloadRow

    catalog = load_catalog(DEFAULT_CATALOG_PATH)  # inference reserves one A100 and one T4; batch's grace is 30 s
    began = time.time() - 600
    clock = [began]
    store = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=lambda: clock[0])
    store.record_nodes([
        {"name": "gpu-1", "source": "emulated", "emulated": True, "flavor": "a100-80g",
         "capability": {"accelerator": {"count": 3}}},
        {"name": "t4-1", "source": "emulated", "emulated": True, "flavor": "t4",
         "capability": {"accelerator": {"count": 1}}}], [])

    def at(seconds: float, workload: int, event: str, **fields) -> None:
        clock[0] = began + seconds
        store.update_workload(workload, event=event, reason="test", **fields)

    def submitted(seconds: float, name: str, queue: str, flavor: str) -> int:
        clock[0] = began + seconds
        return store.add_workload(WorkloadRow(
            kind="service" if queue == "inference" else "job", name=name, tenant="default", user="ann",
            template="online-inference" if queue == "inference" else "batch-inference", queue=queue,
            request={"request": {"cpu_milli": 1000, "memory_mib": 1024, "devices": 1}, "flavors": [flavor]}, spec={},
            state="queued", held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, attempts=0), reason="test").id

    def admitted(seconds: float, workload: int, node: str, device: int, lent: bool) -> None:
        placement = {"flavor": "a100-80g" if node == "gpu-1" else "t4", "on_reservation": lent,
                     "slots": [{"node": node, "devices": [{"index": device, "milli": 1000, "memory_mib": 0}]}]}
        at(seconds, workload, "admitted", data=placement, state="running", placement=placement,
           held_device_milli=1000)

    kept, lender = submitted(0, "kept", "batch", "a100-80g"), submitted(0, "lender", "batch", "a100-80g")
    admitted(0, kept, "gpu-1", 0, lent=False)
    admitted(0, lender, "gpu-1", 1, lent=True)
    taken_back = submitted(10, "taken-back", "inference", "a100-80g")
    at(10.2, lender, "preempting")
    at(13, lender, "preempted", state="preempted")
    at(13, lender, "requeued", state="queued", placement=None, held_device_milli=0)
    admitted(13.2, taken_back, "gpu-1", 1, lent=False)
    admitted(20, submitted(20, "second", "batch", "a100-80g"), "gpu-1", 2, lent=True)
    submitted(21, "beyond", "inference", "a100-80g")  # waits past what its queue reserved: not for the lenders
    squatter = submitted(0, "squatter", "batch", "t4")
    admitted(0, squatter, "t4-1", 0, lent=True)
    starved = submitted(5, "starved", "inference", "t4")

    found = violations(store, catalog)
    store.close()
    assert len(found) == 1, found  # neither the A100 taken back in 3 s, nor `beyond`, waiting past the reservation
    waited = re.fullmatch(
        rf"workload {starved} of queue inference waited ([0-9.]+) s while workloads \[{squatter}\] of other queues "
        r"held its reservation on t4 on loan and nothing else kept it waiting, past the 30 s of their grace and 5 s "
        r"to take it back", found[0])
    assert waited and float(waited[1]) > 590, found
