"""Lifecycle with real processes: quota waits, preemption with checkpoint resume, retries, cancel,
time limits, node loss. Jobs wait on gate files the test creates, so nothing depends on timing."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

GATE = '''
import os, sys, time
print("attempt", os.environ["HETERO_ATTEMPT"], "resume-from", os.environ["HETERO_RESUME_FROM"] or "-", flush=True)
checkpoint = os.environ.get("WRITE_CHECKPOINT")
if checkpoint:
    open(os.path.join(os.environ["HETERO_CHECKPOINT_DIR"], checkpoint), "w").write("step 100")
    print("checkpointed", flush=True)
open(os.path.join(os.environ["HETERO_OUTPUT_DIR"], "result.txt"), "w").write("ok")
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.05)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
'''


@pytest.fixture
def gate(jp_root_dir):
    """``gate("g1")`` -> a script job body that waits until ``open_gate("g1")``."""
    (jp_root_dir / "gate.py").write_text(GATE, encoding="utf-8")

    class Gate:
        def job(self, name: str, exit_code: int = 0, **fields) -> dict:
            args = [str(jp_root_dir / name)] + ([str(exit_code)] if exit_code else [])
            return {"kind": "job", "script": {"path": "gate.py", "args": args}, **fields}

        def open(self, name: str) -> None:
            (jp_root_dir / name).write_text("open")

    return Gate()


async def log_shows(api, workload_id: int, text: str, as_user: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        log = await api.text(f"workloads/{workload_id}/logs", as_user=as_user)
        if text in log:
            return log
        assert time.monotonic() < deadline, f"{text!r} never appeared in the log of {workload_id}: {log!r}"
        await asyncio.sleep(0.1)


def running(w):
    return w["state"] == "running"


def final(w):
    return w["state"] in ("succeeded", "failed", "cancelled", "lost")


async def test_over_quota_work_waits_with_the_quota_blocker_and_starts_when_quota_frees(team, api, wait_for, gate):
    first = await api("workloads", "POST", gate.job("g1", template="training"), as_user="alice")
    await wait_for(first["id"], running, as_user="alice")
    second = await api("workloads", "POST", gate.job("g2", template="training"), as_user="alice")
    waiting = await wait_for(second["id"], lambda w: w.get("blockers"), as_user="alice")
    assert waiting["state"] == "queued"
    messages = [b["message"] for b in waiting["blockers"]]
    assert messages[0] == "quota: tenant vision uses 1/1 devices of flavor a100-80g in queue training (borrowing limit 0)"
    gate.open("g1")
    assert (await wait_for(first["id"], final, as_user="alice"))["state"] == "succeeded"
    await wait_for(second["id"], running, as_user="alice")
    gate.open("g2")
    assert (await wait_for(second["id"], final, as_user="alice"))["state"] == "succeeded"


@pytest.mark.team(vision_a100=2)
async def test_urgent_preempts_batch_which_resumes_from_its_checkpoint(team, api, wait_for, gate):
    batch = await api("workloads", "POST", gate.job("batch-gate", template="training", queue="batch",
                                                    parameters={"devices": 2}, env={"WRITE_CHECKPOINT": "ckpt-100"}),
                      as_user="alice")
    await wait_for(batch["id"], running, as_user="alice")
    await log_shows(api, batch["id"], "checkpointed", as_user="alice")
    urgent = await api("workloads", "POST", gate.job("urgent-gate", template="training", queue="urgent"), as_user="alice")
    await wait_for(urgent["id"], running, as_user="alice")
    requeued = await api(f"workloads/{batch['id']}/events", as_user="alice")
    types = [e["type"] for e in requeued]
    assert {"preempting", "preempted", "requeued"} <= set(types)
    preempting = next(e for e in requeued if e["type"] == "preempting")
    assert f"preempted by urgent workload {urgent['id']}" in preempting["reason"]
    gate.open("urgent-gate")
    await wait_for(urgent["id"], final, as_user="alice")
    resumed = await wait_for(batch["id"], lambda w: running(w) and w["attempt_count"] == 2, as_user="alice")
    gate.open("batch-gate")
    done = await wait_for(batch["id"], final, as_user="alice")
    assert done["state"] == "succeeded"
    assert [a["outcome"] for a in done["attempts"]] == ["preempted", "succeeded"]
    second_log = await api.text(f"workloads/{batch['id']}/logs", as_user="alice", attempt=2)
    assert "attempt 2 resume-from" in second_log and "ckpt-100" in second_log
    first_log = await api.text(f"workloads/{batch['id']}/logs", as_user="alice", attempt=1)
    assert "attempt 1 resume-from -" in first_log
    assert resumed["state"] == "running"


@pytest.mark.team(queues={"batch": {"failure": {"retries": 2, "backoff_s": 0.1, "backoff_factor": 1}}})
async def test_a_failing_job_is_retried_by_its_queue_policy_then_fails_with_the_reason(team, api, wait_for, gate):
    gate.open("open")
    job = await api("workloads", "POST", gate.job("open", exit_code=3, template="data-preprocessing"), as_user="alice")
    done = await wait_for(job["id"], final, as_user="alice")
    assert done["state"] == "failed"
    assert done["reason"] == "exit code 3 after 3 attempt(s)"
    assert [a["outcome"] for a in done["attempts"]] == ["failed", "failed", "failed"]
    assert [a["exit_code"] for a in done["attempts"]] == [3, 3, 3]
    events = [e["type"] for e in await api(f"workloads/{job['id']}/events", as_user="alice")]
    assert events.count("retrying") == 2


async def test_cancel_stops_the_process_and_releases_capacity(team, api, wait_for, gate):
    job = await api("workloads", "POST", gate.job("never", template="training"), as_user="alice")
    await wait_for(job["id"], running, as_user="alice")
    answer = await api(f"workloads/{job['id']}", "DELETE", as_user="alice")
    assert answer["stopping"] == "cancel" or answer["state"] == "cancelled"
    done = await wait_for(job["id"], final, as_user="alice")
    assert done["state"] == "cancelled"
    assert done["placement"] is None
    follower = await api("workloads", "POST", gate.job("open2", template="training"), as_user="alice")
    gate.open("open2")
    assert (await wait_for(follower["id"], final, as_user="alice"))["state"] == "succeeded"


@pytest.mark.team(templates={"data-preprocessing": {"time_limit_s": 1}})
async def test_a_time_limit_stops_the_job(team, api, wait_for, gate):
    job = await api("workloads", "POST", gate.job("never", template="data-preprocessing"), as_user="alice")
    done = await wait_for(job["id"], final, as_user="alice")
    assert done["state"] == "failed"
    assert done["reason"].startswith("time limit of 1 s reached")


async def test_losing_a_node_requeues_its_work_by_policy(team, api, wait_for, gate):
    job = await api("workloads", "POST", gate.job("never", template="vision"), as_user="alice")
    placed = await wait_for(job["id"], running, as_user="alice")
    assert placed["node"] == "gpu-t4-0"
    lost = await api("nodes/gpu-t4-0", "DELETE", as_user="root")
    assert lost["state"] == "lost" and lost["schedulable"] is False
    # Requeued by policy; the demo's only T4 node is gone, so no node can hold it: it waits inadmissible.
    requeued = await wait_for(job["id"], lambda w: w["state"] == "inadmissible" and w["attempt_count"] == 1,
                              as_user="alice")
    assert requeued["placement"] is None
    events = [e["type"] for e in await api(f"workloads/{job['id']}/events", as_user="alice")]
    assert {"node-lost", "lost", "requeued", "inadmissible"} <= set(events)


async def test_outputs_metrics_and_logs_are_kept_per_attempt(team, api, wait_for, gate, tmp_path):
    gate.open("open")
    job = await api("workloads", "POST", gate.job("open", template="data-preprocessing"), as_user="alice")
    done = await wait_for(job["id"], final, as_user="alice")
    attempt = done["attempts"][0]
    assert attempt["outcome"] == "succeeded" and attempt["exit_code"] == 0
    assert attempt["metrics"]["peak_rss_mib"] > 0
    assert (Path(attempt["archive"]) / "outputs" / "result.txt").read_text() == "ok"
    assert "attempt 1" in await api.text(f"workloads/{job['id']}/logs", as_user="alice", tail=5)
    database = sqlite3.connect(tmp_path / "hetero.sqlite")
    states = [row[0] for row in database.execute(
        "SELECT type FROM events WHERE workload_id = ? ORDER BY id", (job["id"],))]
    assert states == ["submitted", "admitted", "starting", "started", "succeeded"]
