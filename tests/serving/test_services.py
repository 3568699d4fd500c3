"""Online services end to end on emulated nodes: a real two-replica model server placed by the engine,
reached through the server's endpoint, load-balanced, kept answering while a replica is killed and
replaced, scaled by hand, deleted; closed to other tenants."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from jupyter_hetero.api.openapi import build_document

from ..handlers.test_api_schema import check
from ..harness import until_async

pytestmark = pytest.mark.usefixtures("team")

MODEL = [sys.executable, str(Path(__file__).with_name("model_server.py"))]
SERVICE = {"name": "doubler", "command": MODEL, "replicas": 2, "min_replicas": 1, "max_replicas": 3,
           "parameters": {"devices": 1}}


@pytest.mark.team(vision_a100=4)
async def test_a_two_replica_service_answers_through_its_endpoint_and_survives_a_killed_replica(
        api, api_error, jp_fetch, wait_for, tmp_path):
    created = await api("services", "POST", SERVICE, as_user="alice")
    assert (created["name"], created["endpoint"], created["replicas"]) == ("doubler", "/hetero/endpoints/vision/doubler/",
                                                                          2)

    async def ready(count: int):
        service = await api("services/doubler", as_user="alice")
        return service if service["ready_replicas"] == count else None

    service = await until_async(lambda: ready(2), "two ready replicas", timeout=60)
    check(build_document(), "/services/{name}", "get", 200, service)  # the answer is what the API document says
    replicas = service["replica_workloads"]
    # Each on a GPU the online-inference template runs on, with a port of its own on this machine's loopback.
    assert all(r["placement"]["slots"][0]["devices"] for r in replicas) and len({r["port"] for r in replicas}) == 2
    assert {r["address"] for r in replicas} == {"127.0.0.1"}

    async def measured():
        service = await api("services/doubler", as_user="alice")
        return service if all((r["usage"].get("rss_mib") or 0) > 0 for r in service["replica_workloads"]) else None

    # Each replica's memory as the scheduler samples it; emulated devices are not measured, and say so.
    sampled = await until_async(measured, "each replica's usage sampled", timeout=30)
    assert sampled["device_utilisation"] is None
    assert all(r["usage"]["device_util_pct"] is None for r in sampled["replica_workloads"])

    async def predict(user: str = "alice") -> dict:
        response = await jp_fetch("hetero", "endpoints", "vision", "doubler", "predict", method="POST",
                                  body=json.dumps({"inputs": [1, 2, 3]}), headers=_auth(user))
        return json.loads(response.body)

    answers = [await predict() for _ in range(6)]
    assert all(answer["outputs"] == [2, 4, 6] for answer in answers)
    assert len({answer["replica"] for answer in answers}) == 2  # both replicas take traffic, in turn
    traffic = (await api("services/doubler", as_user="alice"))["traffic"]
    assert (traffic["requests"], traffic["error_rate"]) == (6, 0.0) and traffic["latency_ms"]["p99"] > 0, traffic

    # A bounded load (four clients, 25 requests each) while a replica's process is killed: every request is
    # answered (by the other replica), and the killed one starts again.
    victim = replicas[0]
    pid = await _pid_of(api, victim["id"])

    async def client() -> list[bool]:
        return [(await predict())["outputs"] == [2, 4, 6] for _ in range(25)]

    load = asyncio.gather(*(client() for _ in range(4)))
    await asyncio.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    answered = [ok for results in await load for ok in results]
    assert len(answered) == 100 and all(answered)
    traffic = (await api("services/doubler", as_user="alice"))["traffic"]
    assert traffic["requests"] == 106 and traffic["error_rate"] == 0.0 and traffic["requests_per_s"] > 0, traffic
    await until_async(lambda: _restarted(api, victim["id"]), "the killed replica to start again", timeout=60)
    # Its model server, orphaned by the runner's death, went with it: nothing of the first attempt still runs.
    assert not [p for p in psutil.process_iter(["cwd", "environ"]) if _of_attempt(p, victim["id"], 1, tmp_path)]
    await until_async(lambda: ready(2), "two ready replicas again", timeout=60)

    # Scaled by hand between its minimum and maximum.
    scaled = await api("services/doubler", "PATCH", {"replicas": 3}, as_user="alice")
    assert scaled["replicas"] == 3
    await until_async(lambda: ready(3), "three ready replicas", timeout=60)
    status, error = await api_error("services/doubler", "PATCH", {"replicas": 4}, as_user="alice")
    assert (status, error["field"]) == (400, "replicas"), error

    # Another tenant can neither use nor see it: its name in bob's tenant is another service (none), and naming
    # alice's tenant is refused.
    status, _error = await api_error("services/doubler", as_user="bob")
    assert status == 404
    status, _error = await api_error("services/doubler", as_user="bob", tenant="vision")
    assert status == 403
    with pytest.raises(Exception) as refused:
        await predict("bob")
    assert getattr(refused.value, "code", None) == 403

    deleted = await api("services/doubler", "DELETE", as_user="alice")
    assert deleted["state"] == "deleted"
    ids = [r["id"] for r in (await api("services/doubler", as_user="alice"))["replica_workloads"]] or \
        [r["id"] for r in replicas]
    for replica in ids:
        await wait_for(replica, lambda w: w["state"] == "cancelled", as_user="alice")


def _of_attempt(process, workload_id: int, attempt: int, root: Path) -> bool:
    """A live process of this test's server working for that attempt of the workload."""
    environ, cwd = process.info.get("environ") or {}, process.info.get("cwd") or ""
    try:
        return cwd.startswith(str(root)) and environ.get("HETERO_WORKLOAD_ID") == str(workload_id) \
            and environ.get("HETERO_ATTEMPT") == str(attempt) and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _auth(user: str) -> dict:
    from ..conftest import _token

    return {"Authorization": f"token {_token(user)}"}


async def _pid_of(api, workload_id: int) -> int:
    events = await api(f"workloads/{workload_id}/events", as_user="alice")
    return [event for event in events if event["type"] == "started"][-1]["data"]["pids"][0]


async def _restarted(api, workload_id: int) -> bool:
    workload = await api(f"workloads/{workload_id}", as_user="alice")
    return workload["state"] == "running" and len(workload["attempts"]) >= 2


@pytest.mark.team(vision_a100=4)
async def test_a_service_scales_up_with_its_load_and_back_down_to_its_minimum(api, jp_fetch):
    await api("services", "POST", {
        "name": "busy", "command": MODEL, "replicas": 1, "min_replicas": 1, "max_replicas": 3,
        "env": {"MODEL_DELAY_S": "0.3"}, "parameters": {"devices": 1}, "target_in_flight": 1,
        "scale_down_delay_s": 1}, as_user="alice")

    async def replicas(count: int, ready: bool = True):
        service = await api("services/busy", as_user="alice")
        return service if service["replicas"] == count and (not ready or service["ready_replicas"] == count) else None

    await until_async(lambda: replicas(1), "one ready replica", timeout=60)

    async def under_load():
        await asyncio.gather(*(jp_fetch("hetero", "endpoints", "vision", "busy", "predict", method="POST",
                                        body=json.dumps({"inputs": [1]}), headers=_auth("alice")) for _ in range(6)))
        return await replicas(3, ready=False)

    scaled = await until_async(under_load, "the load to scale the service up to its maximum", timeout=60)
    assert scaled["replicas"] == 3  # six in flight, a target of one per replica, at most three
    calm = await until_async(lambda: replicas(1, ready=False), "the service back at its minimum", timeout=60)
    assert calm["min_replicas"] == 1


@pytest.mark.team(vision_a100=2)
async def test_a_service_takes_back_its_reserved_device_from_batch_work_and_is_never_preempted(api, api_error,
                                                                                           wait_for):
    # Batch inference fills every GPU, the inference queue's reserved ones too (lent while idle: default catalog).
    hold = {"template": "batch-inference", "parameters": {"devices": 1},
            "command": [sys.executable, "-c", "import time; time.sleep(300)"]}
    jobs = [await api("workloads", "POST", hold, as_user="alice") for _ in range(3)]
    for job in jobs:
        await wait_for(job["id"], lambda w: w["state"] == "running", as_user="alice")

    service = await api("services", "POST", {"name": "reserved", "command": MODEL, "replicas": 1,
                                             "parameters": {"devices": 1}}, as_user="alice")
    replica = service["replica_workloads"][0]
    running = await wait_for(replica["id"], lambda w: w["state"] == "running", as_user="alice", timeout=60)
    assert running["flavor"] in ("t4", "a100-80g"), running["placement"]  # a device its queue reserves
    # ... taken back from the batch job that borrowed it, which waits in its queue again.
    evicted = [w for w in [await api(f"workloads/{job['id']}", as_user="alice") for job in jobs]
               if w["preemptions"]]
    assert len(evicted) == 1 and evicted[0]["state"] in ("queued", "preempted"), evicted

    status, error = await api_error(f"workloads/{replica['id']}/preempt", "POST", as_user="root")
    assert (status, error["reason"]) == (409, "never-preempted"), error
    for job in jobs:
        await api(f"workloads/{job['id']}", "DELETE", as_user="alice")
    await api("services/reserved", "DELETE", as_user="alice")


@pytest.mark.team(vision_a100=2, queues={"inference": {"lend_reserved": False}})
async def test_a_reservation_lent_to_none_is_never_taken_by_batch_work_and_a_service_starts_on_it_at_once(
        api, wait_for):
    # The inference queue reserves one T4 and one A100 and lends neither: of vision's GPUs (two A100s, one T4)
    # batch work gets the one A100 nobody reserves, and waits for the rest.
    hold = {"template": "batch-inference", "parameters": {"devices": 1},
            "command": [sys.executable, "-c", "import time; time.sleep(300)"]}
    jobs = [await api("workloads", "POST", hold, as_user="alice") for _ in range(3)]
    first = await wait_for(jobs[0]["id"], lambda w: w["state"] == "running", as_user="alice")
    assert first["flavor"] == "a100-80g", first["placement"]

    async def waiting_for_the_reservation() -> list[dict]:
        waiting = [await api(f"workloads/{job['id']}", as_user="alice") for job in jobs[1:]]
        return waiting if all(w["state"] == "queued" and w.get("blockers") and
                              {b["kind"] for b in w["blockers"]} >= {"reservation"} for w in waiting) else []

    for workload in await until_async(waiting_for_the_reservation, "the other two to wait on the reservation"):
        reserved = next(b for b in workload["blockers"] if b["kind"] == "reservation")
        assert "inference" in reserved["message"], reserved

    service = await api("services", "POST", {"name": "kept", "command": MODEL, "replicas": 1,
                                             "parameters": {"devices": 1}}, as_user="alice")
    replica = service["replica_workloads"][0]
    running = await wait_for(replica["id"], lambda w: w["state"] == "running", as_user="alice", timeout=60)
    assert running["flavor"] in ("t4", "a100-80g"), running["placement"]
    events = [e["type"] for e in await api(f"workloads/{replica['id']}/events", as_user="alice")]
    assert "preempting" not in events and "held" not in events, events  # nothing had to give its device back
    assert not any([(await api(f"workloads/{job['id']}", as_user="alice"))["preemptions"] for job in jobs])
    for job in jobs:
        await api(f"workloads/{job['id']}", "DELETE", as_user="alice")
    await api("services/kept", "DELETE", as_user="alice")


@pytest.mark.team(vision_a100=4)
async def test_only_the_services_tenant_may_change_it(api, api_error):
    await api("services", "POST", {**SERVICE, "name": "guarded", "replicas": 1}, as_user="alice")
    for route, method, body in (("guarded", "PATCH", {"replicas": 2}), ("guarded/rollouts", "POST", {"env": {"V": "2"}}),
                                ("guarded/rollback", "POST", {}), ("guarded", "DELETE", None)):
        status, error = await api_error(f"services/{route}", method, body, as_user="bob", tenant="vision")
        assert (status, error["reason"]) == (403, "other-tenant"), (route, method, error)
        status, error = await api_error(f"services/{route}", method, body, as_user="bob")  # in his own tenant: none
        assert status == 404, (route, method, error)
    status, _error = await api_error("services/no-such", "PATCH", {"replicas": 2}, as_user="alice")
    assert status == 404
    assert (await api("services/guarded", "DELETE", as_user="alice"))["state"] == "deleted"


@pytest.mark.team(vision_a100=4)
async def test_a_request_a_replica_drops_unanswered_is_answered_by_another(api, jp_fetch, jp_root_dir):
    # Regression: a replica closing the connection under a request (its process dying) was a 500 to the caller.
    # The marker lives in the submitter's directory, which both replicas share: each sandbox has its own /tmp.
    dropped = jp_root_dir / "dropped"
    await api("services", "POST", {**SERVICE, "name": "dropper", "env": {"MODEL_DROP_ONCE": str(dropped)}},
              as_user="alice")

    async def ready():
        service = await api("services/dropper", as_user="alice")
        return service if service["ready_replicas"] == 2 else None

    await until_async(ready, "two ready replicas", timeout=60)
    # The replica the first prediction goes to closes the connection under it; the other one answers it.
    response = await jp_fetch("hetero", "endpoints", "vision", "dropper", "predict", method="POST",
                              body=json.dumps({"inputs": [4]}), headers=_auth("alice"))
    assert json.loads(response.body)["outputs"] == [8] and dropped.exists()
    await api("services/dropper", "DELETE", as_user="alice")
