"""Lifecycle under faults, with a real server and real processes: a cancel during a preemption, a gang
whose replica fails, retries that preemptions do not use up, kernels whose launch fails or whose node
is lost, a followed log of Chinese output, and a wall clock that steps. Jobs wait on gate files the
test creates, so nothing depends on timing."""

from __future__ import annotations

import asyncio
import json
import shutil
import time

import pytest

from ..conftest import REPO

FAULT = '''
import os, signal, sys, time
replica = os.environ["HETERO_REPLICA"]
print("attempt", os.environ["HETERO_ATTEMPT"], "replica", replica, flush=True)
if os.environ.get("FAIL_REPLICA") == replica:
    sys.exit(3)
def stop(*_):
    print("replica", replica, "got SIGTERM", flush=True)
    if not os.environ.get("TRAP_TERM"):
        sys.exit(143)
signal.signal(signal.SIGTERM, stop)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.05)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
'''


@pytest.fixture
def fault(jp_root_dir):
    """``fault.job("g1", **fields)`` -> a job body that waits until ``fault.open("g1")``."""
    (jp_root_dir / "fault.py").write_text(FAULT, encoding="utf-8")

    class Fault:
        def job(self, gate: str, exit_code: int = 0, env: dict | None = None, **fields) -> dict:
            args = [str(jp_root_dir / gate)] + ([str(exit_code)] if exit_code else [])
            return {"kind": "job", "script": {"path": "fault.py", "args": args}, "env": env or {}, **fields}

        def open(self, gate: str) -> None:
            (jp_root_dir / gate).write_text("open")

    return Fault()


def running(w):
    return w["state"] == "running"


def final(w):
    return w["state"] in ("succeeded", "failed", "cancelled", "lost")


async def events(api, workload_id: int, as_user: str | None = None) -> list[dict]:
    return await api(f"workloads/{workload_id}/events", as_user=as_user)


# -- jobs ----------------------------------------------------------------------------------------


@pytest.mark.team(vision_a100=2)
async def test_a_cancel_during_a_preemption_wins(team, api, wait_for, fault):
    # The victim ignores SIGTERM, so it is still inside its grace period when the cancel arrives.
    victim = await api("workloads", "POST", fault.job("victim", template="training", queue="batch",
                                                      parameters={"devices": 2}, env={"TRAP_TERM": "1"}),
                       as_user="alice")
    await wait_for(victim["id"], running, as_user="alice")
    urgent = await api("workloads", "POST", fault.job("urgent", template="training", queue="urgent"), as_user="alice")
    await wait_for(victim["id"], lambda w: w["stopping"] == "preempt", as_user="alice")
    answer = await api(f"workloads/{victim['id']}", "DELETE", as_user="alice")
    assert answer["stopping"] == "cancel"
    fault.open("victim")
    done = await wait_for(victim["id"], final, as_user="alice")
    assert done["state"] == "cancelled", done
    assert done["attempt_count"] == 1 and done["preemptions"] == 0
    types = [e["type"] for e in await events(api, victim["id"], "alice")]
    assert "requeued" not in types and types[-1] == "cancelled"
    await wait_for(urgent["id"], running, as_user="alice")  # the preemptor still gets the room it was made
    fault.open("urgent")
    assert (await wait_for(urgent["id"], final, as_user="alice"))["state"] == "succeeded"


@pytest.mark.team(vision_a100=2, queues={"training": {"failure": {"retries": 1, "backoff_s": 0.1, "backoff_factor": 1}}})
async def test_a_failed_replica_stops_its_gang_and_the_policy_retries_the_whole_gang(team, api, wait_for, fault):
    job = await api("workloads", "POST", fault.job("never", template="training", parameters={"replicas": 2},
                                                   env={"FAIL_REPLICA": "1"}), as_user="alice")
    started = time.monotonic()
    done = await wait_for(job["id"], final, as_user="alice")
    # Without the gang rule replica 0 would wait out its 60 s gate on every attempt.
    assert time.monotonic() - started < 45
    assert done["state"] == "failed"
    assert done["reason"] == ("replica 1 failed with exit code 3; the other replicas were stopped after 2 attempt(s)")
    assert [a["outcome"] for a in done["attempts"]] == ["failed", "failed"]
    assert [a["exit_code"] for a in done["attempts"]] == [3, 3]
    assert done["failures"] == 2 and done["placement"] is None
    for attempt in (1, 2):
        log = await api.text(f"workloads/{job['id']}/logs", as_user="alice", attempt=attempt)
        assert "replica 0 got SIGTERM" in log
    types = [e["type"] for e in await events(api, job["id"], "alice")]
    assert types.count("replica-failed") == 2 and types.count("retrying") == 1


@pytest.mark.team(vision_a100=2, queues={"batch": {"failure": {"retries": 1, "backoff_s": 0.1, "backoff_factor": 1}}})
async def test_a_preemption_does_not_use_up_the_retries(team, api, wait_for, fault):
    batch = await api("workloads", "POST", fault.job("batch", exit_code=3, template="training", queue="batch",
                                                     parameters={"devices": 2}), as_user="alice")
    await wait_for(batch["id"], running, as_user="alice")
    urgent = await api("workloads", "POST", fault.job("urgent", template="training", queue="urgent"), as_user="alice")
    await wait_for(urgent["id"], running, as_user="alice")  # so the batch job's first attempt was preempted
    fault.open("batch")
    fault.open("urgent")
    done = await wait_for(batch["id"], final, as_user="alice")
    assert [a["outcome"] for a in done["attempts"]] == ["preempted", "failed", "failed"]
    assert (done["failures"], done["preemptions"], done["node_losses"]) == (2, 1, 0)
    assert done["reason"] == "exit code 3 after 3 attempt(s), 2 of them failed"


async def test_losing_a_node_is_counted_apart_and_uses_no_retry(team, api, wait_for, fault):
    job = await api("workloads", "POST", fault.job("never", template="vision"), as_user="alice")
    await wait_for(job["id"], running, as_user="alice")
    await api("nodes/gpu-t4-0", "DELETE", as_user="root")
    # Requeued by its queue's policy; with the demo's only T4 gone no node can hold it, so it waits inadmissible.
    requeued = await wait_for(job["id"], lambda w: w["state"] == "inadmissible" and w["node_losses"] == 1,
                              as_user="alice")
    assert (requeued["failures"], requeued["preemptions"]) == (0, 0)
    reasons = {e["type"]: e["reason"] for e in await events(api, job["id"], "alice")}
    assert reasons["node-lost"] == "node gpu-t4-0 was lost"
    assert reasons["lost"] == "lost (node gpu-t4-0 was lost); requeued by queue batch's policy"
    assert [e["type"] for e in await events(api, job["id"], "alice")][-2:] == ["requeued", "inadmissible"]


# -- logs ----------------------------------------------------------------------------------------

CHINESE = '''
import os, sys, time
out = sys.stdout.buffer
out.write("开始\\n".encode()); out.write("中".encode()[:1]); out.flush()   # half a character, then wait
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.05)
out.write("中".encode()[1:] + "文输出\\n".encode()); out.flush()
'''


async def test_a_followed_log_never_splits_a_chinese_character(api, wait_for, jp_fetch, jp_root_dir, tmp_path):
    (jp_root_dir / "chinese.py").write_text(CHINESE, encoding="utf-8")
    gate = jp_root_dir / "chinese-gate"
    job = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing",
                                          "script": {"path": "chinese.py", "args": [str(gate)]}})
    placed = await wait_for(job["id"], running)
    log_path = tmp_path / "work" / "jobs" / str(placed["id"]) / "attempts" / "1" / "log.txt"
    deadline = time.monotonic() + 30
    while "开始\n".encode() + b"\xe4" not in (log_path.read_bytes() if log_path.exists() else b""):
        assert time.monotonic() < deadline, "the job never wrote its half character"
        await asyncio.sleep(0.05)
    chunks: list[bytes] = []
    follow = asyncio.ensure_future(jp_fetch("hetero", "api", "v1", "workloads", str(job["id"]), "logs",
                                            params={"follow": "1"}, streaming_callback=chunks.append))
    while not chunks:  # the follower has read up to the half character
        assert time.monotonic() < deadline + 30, "the followed log never started"
        await asyncio.sleep(0.05)
    gate.write_text("open")
    await asyncio.wait_for(follow, 60)
    text = b"".join(chunks).decode("utf-8")
    assert "\ufffd" not in text
    assert "开始\n中文输出\n" in text


# -- kernels -------------------------------------------------------------------------------------


@pytest.fixture
def broken_kernelspec(jp_kernel_dir):
    """The shipped hetero kernelspecs, plus ``hetero-broken``: the GPU one with an interpreter that does
    not exist, so its launch fails after the scheduler has placed it."""
    for spec in (REPO / "kernels").iterdir():
        shutil.copytree(spec, jp_kernel_dir / spec.name)
    shutil.copytree(REPO / "kernels" / "hetero-gpu", jp_kernel_dir / "hetero-broken")
    path = jp_kernel_dir / "hetero-broken" / "kernel.json"
    spec = json.loads(path.read_text())
    spec["argv"] = ["/nonexistent/python3", *spec["argv"][1:]]
    spec["display_name"] = "broken"
    path.write_text(json.dumps(spec))
    return "hetero-broken"


async def kernel_workloads(api) -> list[dict]:
    return await api("workloads", kind="kernel", limit=100)


async def test_a_failed_kernel_launch_releases_its_devices_at_once(broken_kernelspec, api, api_error, jp_serverapp):
    status, error = await api_error("kernels", "POST", {"template": "interactive", "kernel_name": broken_kernelspec,
                                                        "parameters": {"devices": 2, "flavor": "a100-80g"}})
    assert status == 500 and "the kernel could not start" in error["message"]
    [workload] = await kernel_workloads(api)
    assert workload["state"] == "failed" and workload["placement"] is None
    assert workload["reason"].startswith("the kernel could not start:")
    assert "/nonexistent/python3" in workload["reason"]
    assert workload["spec"]["kernel_id"] not in jp_serverapp.kernel_manager._pending_kernels
    # Both A100s are free again: a kernel that needs them starts without waiting.
    started = await api("kernels", "POST", {"template": "interactive", "wait_timeout": 5,
                                            "parameters": {"devices": 2, "flavor": "a100-80g"}})
    assert started["placement"]["flavor"] == "a100-80g"


async def test_a_kernel_that_is_not_installed_is_the_requests_mistake_and_places_nothing(broken_kernelspec, api,
                                                                                        api_error):
    # It was a 500 ("the kernel could not start"), after a workload had been made and failed.
    status, error = await api_error("kernels", "POST", {"template": "interactive", "kernel_name": "no-such-kernel"})
    assert (status, error["field"]) == (400, "kernel_name") and "'no-such-kernel'" in error["message"], error
    assert "no-such-kernel" in error["message_zh"] and error["message_zh"] != error["message"], error
    assert await kernel_workloads(api) == []


async def test_a_failed_launch_through_jupyters_own_api_releases_too(broken_kernelspec, api, jp_fetch, jp_serverapp):
    from tornado.httpclient import HTTPClientError

    with pytest.raises(HTTPClientError):
        await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": broken_kernelspec}))
    [workload] = await kernel_workloads(api)
    assert workload["state"] == "failed" and workload["placement"] is None
    assert workload["reason"].startswith("the kernel could not start:")
    # No pending kernel is left behind in Jupyter's kernel manager either.
    pending = jp_serverapp.kernel_manager._pending_kernels
    deadline = time.monotonic() + 10
    while workload["spec"]["kernel_id"] in pending:
        assert time.monotonic() < deadline, "the failed kernel stayed among the pending kernels"
        await asyncio.sleep(0.05)


async def test_a_kernel_on_a_lost_node_is_released_shut_down_and_told(broken_kernelspec, api, jp_fetch, jp_serverapp):
    response = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "hetero-gpu"}))
    kernel_id = json.loads(response.body)["id"]
    [workload] = await kernel_workloads(api)
    node = workload["node"]  # the engine's choice: the spec pins no flavor
    assert workload["state"] == "running" and node.startswith("gpu-")
    await api(f"nodes/{node}", "DELETE")
    deadline = time.monotonic() + 30
    while kernel_id in jp_serverapp.kernel_manager:
        assert time.monotonic() < deadline, "the kernel on the lost node was never shut down"
        await asyncio.sleep(0.1)
    lost = await api(f"workloads/{workload['id']}")
    assert lost["state"] == "lost" and lost["placement"] is None and lost["node_losses"] == 1
    assert lost["reason"] == (f"kernel lost: node {node} was lost; it was shut down and its devices released")
    types = [e["type"] for e in await events(api, workload["id"])]
    assert types[-2:] == ["node-lost", "lost"]


# -- clocks --------------------------------------------------------------------------------------


@pytest.fixture
def stepping_clock(hetero_config):
    """The server reads a wall clock the test can step (``SteppingClock.step``); monotonic time never steps."""
    from ..fakes import SteppingClock

    SteppingClock.reset()
    hetero_config["clock_class"] = "tests.fakes.SteppingClock"
    yield SteppingClock
    SteppingClock.reset()


@pytest.mark.team(templates={"data-preprocessing": {"time_limit_s": 600}},
                  queues={"training": {"max_wait_s": 600}})
async def test_a_wall_clock_step_neither_ends_a_job_by_its_time_limit_nor_escalates_a_queue(
        team, stepping_clock, api, wait_for, fault):
    limited = await api("workloads", "POST", fault.job("limited", template="data-preprocessing"), as_user="alice")
    holder = await api("workloads", "POST", fault.job("holder", template="training"), as_user="alice")
    await wait_for(limited["id"], running, as_user="alice")
    await wait_for(holder["id"], running, as_user="alice")
    waiting = await api("workloads", "POST", fault.job("waiting", template="training"), as_user="alice")
    await wait_for(waiting["id"], lambda w: w.get("blockers"), as_user="alice")  # over quota: it waits
    stepped_at = time.time()
    stepping_clock.step(3600)  # an hour forward: six times the time limit and the queue's max wait
    # A job submitted and finished after the step: the scheduler has ticked a few times since.
    probe = await api("workloads", "POST", fault.job("probe", template="data-preprocessing"), as_user="alice")
    fault.open("probe")
    assert (await wait_for(probe["id"], final, as_user="alice"))["state"] == "succeeded"
    assert all(e["at"] >= stepped_at + 3600 for e in await events(api, probe["id"], "alice"))  # the step is real
    still = await api(f"workloads/{limited['id']}", as_user="alice")
    assert still["state"] == "running" and still["stopping"] is None
    assert "time-limit" not in [e["type"] for e in await events(api, limited["id"], "alice")]
    queued = await api(f"workloads/{waiting['id']}", as_user="alice")
    assert queued["state"] == "queued" and queued["escalated"] is False
    assert "escalated" not in [e["type"] for e in await events(api, waiting["id"], "alice")]
    for gate in ("limited", "holder", "waiting"):
        fault.open(gate)
    assert (await wait_for(limited["id"], final, as_user="alice"))["state"] == "succeeded"
    assert (await wait_for(waiting["id"], final, as_user="alice"))["state"] == "succeeded"
