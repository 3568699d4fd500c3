"""``after`` naming an array's id, through the REST API of a real server with real jobs: the dependent waits for every
task of the array (Slurm's afterok, afterany and afternotok on an array job id), its blocker naming the array and how
many of its tasks are still to end; one failed task fails an ``ok`` dependent with the reason, and an afternotok one
runs once every task ended. Each task waits for its own gate file, so nothing depends on timing."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_lifecycle import final

# The experiment queue retries nothing: a task that fails, fails once.
CPU = {"kind": "job", "template": "data-preprocessing", "queue": "experiment"}

# A task: waits until its gate (``open-<index>`` in a folder) exists, then exits 3 when its index is listed after the
# folder, else 0.
TASK = '''
import os, sys, time
folder, index = sys.argv[1], os.environ["HETERO_ARRAY_INDEX"]
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(folder, f"open-{index}")) and time.monotonic() < deadline:
    time.sleep(0.05)
sys.exit(3 if index in sys.argv[2:] else 0)
'''


@pytest.fixture
def gates(jp_root_dir) -> Path:
    """The task script in the server's root, and the folder its gates open in."""
    (jp_root_dir / "gated_task.py").write_text(TASK, encoding="utf-8")
    folder = jp_root_dir / "gates"
    folder.mkdir()
    return folder


def _array(gates: Path, array: str, *, failing: tuple[int, ...] = ()) -> dict:
    return {**CPU, "script": {"path": "gated_task.py", "args": [str(gates), *map(str, failing)]}, "array": array}


def _after(array: int, condition: str) -> dict:
    return {**CPU, "code": "print('after the array')", "after": [{"workload": array, "condition": condition}]}


def _open(gates: Path, *indices: int) -> None:
    for index in indices:
        (gates / f"open-{index}").write_text("open")


def _blocker(workload: dict) -> tuple[str, dict] | None:
    blockers = workload.get("blockers") or []
    return (blockers[0]["kind"], blockers[0]["params"]) if blockers else None


async def test_a_job_after_an_array_waits_until_every_task_succeeded(api, wait_for, gates):
    first = await api("workloads", "POST", _array(gates, "0-2"))
    array = first["id"]
    dependent = await api("workloads", "POST", _after(array, "ok"))
    waiting = await wait_for(dependent["id"], lambda w: _blocker(w) is not None)
    assert waiting["state"] == "queued"
    assert _blocker(waiting) == ("after-array-ok", {"array": array, "pending": 3, "size": 3})
    assert waiting["blockers"][0]["message"] == (
        f"dependency: waits for every task of array {array} to succeed (3 of 3 still to end)")
    explained = await api(f"workloads/{dependent['id']}/explain")
    assert any(f"waits for every task of array {array} to succeed" in line for line in explained["lines"])
    # The array's id is its first task's: that task's end lifts nothing while the others run.
    _open(gates, 0, 1)
    for task in await api("workloads", array=str(array)):
        if task["array"]["index"] in (0, 1):
            assert (await wait_for(task["id"], final, timeout=60))["state"] == "succeeded"
    one_left = await wait_for(dependent["id"], lambda w: _blocker(w) == (
        "after-array-ok", {"array": array, "pending": 1, "size": 3}))
    assert one_left["state"] == "queued"
    assert "admitted" not in [e["type"] for e in await api(f"workloads/{dependent['id']}/events")]
    _open(gates, 2)
    done = await wait_for(dependent["id"], final, timeout=60)
    assert done["state"] == "succeeded"
    tasks = await api("workloads", array=str(array))
    assert {task["state"] for task in tasks} == {"succeeded"}
    assert done["admitted_at"] >= max(task["finished_at"] for task in tasks)


async def test_one_failed_task_fails_an_ok_dependent_and_an_afternotok_one_runs_once_all_ended(api, wait_for, gates):
    first = await api("workloads", "POST", _array(gates, "0-2", failing=(1,)))
    array = first["id"]
    on_ok = await api("workloads", "POST", _after(array, "ok"))
    on_failure = await api("workloads", "POST", _after(array, "failed"))
    on_any = await api("workloads", "POST", _after(array, "any"))
    await wait_for(on_failure["id"], lambda w: _blocker(w) is not None)
    _open(gates, 1)
    failed = await wait_for(on_ok["id"], final, timeout=60)
    reason = f"dependency not met: array {array}: 1 of its 3 tasks failed"
    assert (failed["state"], failed["reason"], failed["attempt_count"]) == ("failed", reason, 0)
    events = await api(f"workloads/{on_ok['id']}/events")
    assert ("failed", reason) in [(e["type"], e["reason"]) for e in events]
    explained = await api(f"workloads/{on_ok['id']}/explain")
    assert f"recorded reason: {reason}" in explained["lines"]
    # One task failed, two still run: afternotok and afterany wait for every task to end.
    waiting = await wait_for(on_failure["id"], lambda w: _blocker(w) == (
        "after-array-failed", {"array": array, "pending": 2, "size": 3}))
    assert waiting["state"] == "queued"
    assert _blocker(await api(f"workloads/{on_any['id']}")) == (
        "after-array-any", {"array": array, "pending": 2, "size": 3})
    _open(gates, 0, 2)
    assert (await wait_for(on_failure["id"], final, timeout=60))["state"] == "succeeded"
    assert (await wait_for(on_any["id"], final, timeout=60))["state"] == "succeeded"
    # Every task ended and one failed: awaiting their success can never hold, whenever it is asked.
    late = await api("workloads", "POST", _after(array, "ok"))
    assert (await wait_for(late["id"], final, timeout=60))["reason"] == reason


async def test_an_array_that_ended_without_a_failure_fails_an_afternotok_dependent(api, wait_for, gates):
    first = await api("workloads", "POST", _array(gates, "0-1"))
    array = first["id"]
    on_failure = await api("workloads", "POST", _after(array, "failed"))
    _open(gates, 0, 1)
    failed = await wait_for(on_failure["id"], final, timeout=60)
    assert (failed["state"], failed["reason"]) == (
        "failed", f"dependency not met: array {array}: all of its 2 tasks ended, none failed")


@pytest.mark.team
async def test_another_tenants_array_cannot_be_awaited(team, api, api_error, gates):
    theirs = await api("workloads", "POST", {**_array(gates, "0-1"), "template": "training"}, as_user="alice")
    body = {"kind": "job", "template": "training", "command": ["python", "-c", "pass"],
            "after": [{"workload": theirs["id"]}]}
    status, error = await api_error("workloads", "POST", body, as_user="bob")
    assert status == 403
    assert error["reason"] == f"workload {theirs['id']} belongs to tenant vision, not to your tenant nlp"
    _open(gates, 0, 1)
