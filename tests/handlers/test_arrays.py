"""Job arrays (``array`` on POST /workloads, Slurm's ``sbatch --array``) through the REST API of real servers with
real jobs: one workload per index, stored at once; each task reads its index from its environment and runs once;
never more than the array's limit at once, and within its tenant's quota task by task; the array's tasks listed and
cancelled together, by whoever may cancel one; a malformed array is a 400 naming it; a restart keeps the limit."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from jupyter_hetero.notebook.client import HeteroClient

from ..conftest import DEMO_NODES
from ..harness import ServerLayout, start_hetero_server, until
from .test_lifecycle import final

# The experiment queue retries nothing: a task that fails, fails once.
CPU = {"kind": "job", "template": "data-preprocessing", "queue": "experiment"}
ACTIVE = ("admitted", "starting", "running")

# A task: waits for its own gate when asked (a folder's ``open-<index>``), then records its index, its array and when
# it started and ended, in a file named by its index and workload.
TASK = '''
import json, os, sys, time
start = time.time()
folder, index = sys.argv[1], os.environ["HETERO_ARRAY_INDEX"]
deadline = time.monotonic() + 60
while "--gate" in sys.argv and not os.path.exists(os.path.join(folder, f"open-{index}")) and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(float(os.environ.get("HOLD_S", "0")))
record = {"index": int(index), "array": int(os.environ["HETERO_ARRAY_ID"]), "size": int(os.environ["HETERO_ARRAY_SIZE"]),
          "start": start, "end": time.time()}
path = os.path.join(folder, f"seen-{index}-{os.environ['HETERO_WORKLOAD_ID']}.json")
with open(path + ".part", "w") as out:  # whole or not at all, for the test reading it meanwhile
    json.dump(record, out)
os.replace(path + ".part", path)
'''


@pytest.fixture
def tasks(jp_root_dir):
    """The task script in the server's root, and the folder its tasks record themselves in."""
    (jp_root_dir / "task.py").write_text(TASK, encoding="utf-8")
    seen = jp_root_dir / "seen"
    seen.mkdir()
    return seen


@pytest.fixture
def small_arrays(hetero_config):
    """A server whose arrays have at most 10 tasks (list it before ``api``: it configures the server)."""
    hetero_config["max_array_tasks"] = 10


def _array(folder: Path, array: str, *, gate: bool = False, **fields) -> dict:
    args = [str(folder)] + (["--gate"] if gate else [])
    return {**CPU, "script": {"path": "task.py", "args": args}, "array": array, **fields}


def _seen(folder: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(folder.glob("seen-*.json"))]


def _most_at_once(records: list[dict]) -> int:
    """The most tasks whose [start, end] overlap at one moment."""
    moments = sorted([(r["start"], 1) for r in records] + [(r["end"], -1) for r in records], key=lambda m: (m[0], m[1]))
    most = running = 0
    for _at, step in moments:
        running += step
        most = max(most, running)
    return most


async def _until_all_end(api, array: int, size: int, *, most: int | None = None, timeout: float = 90.0) -> list[dict]:
    """Poll the array's tasks until every one ended; with ``most``, never more than that many hold capacity."""
    deadline = time.monotonic() + timeout
    while True:
        listed = await api("workloads", array=str(array))
        assert len(listed) == size
        if most is not None:
            assert sum(task["state"] in ACTIVE for task in listed) <= most, [(t["id"], t["state"]) for t in listed]
        if all(final(task) for task in listed):
            return listed
        assert time.monotonic() < deadline, [(t["id"], t["state"]) for t in listed]
        await _pause()


async def _pause() -> None:
    import asyncio

    await asyncio.sleep(0.1)


async def test_each_index_runs_once_as_a_job_of_its_own_never_more_than_the_limit_at_once(api, tasks):
    first = await api("workloads", "POST", _array(tasks, "0-5%2", name="shard", env={"HOLD_S": "0.5"}))
    array = first["id"]
    assert first["array"] == {"id": array, "index": 0, "size": 6, "limit": 2, "indices": "0-5"}
    assert first["name"] == "shard[0]" and first["spec"]["array"] == first["array"]
    listed = await api("workloads", array=str(array))
    assert sorted(task["array"]["index"] for task in listed) == list(range(6))
    assert {task["name"] for task in listed} == {f"shard[{index}]" for index in range(6)}
    assert {task["array"]["id"] for task in listed} == {array}
    held = next(task for task in listed if task["array"]["index"] == 5)
    waiting = (await api(f"workloads/{held['id']}"))
    assert waiting["state"] == "queued"
    ended = await _until_all_end(api, array, 6, most=2)
    assert {task["state"] for task in ended} == {"succeeded"}
    records = _seen(tasks)
    assert sorted(record["index"] for record in records) == list(range(6))  # each once
    assert {(record["array"], record["size"]) for record in records} == {(array, 6)}
    by_task = {task["array"]["index"]: task["id"] for task in ended}
    assert sorted(path.name for path in tasks.glob("seen-*.json")) == sorted(
        f"seen-{index}-{workload}.json" for index, workload in by_task.items())
    assert _most_at_once(records) <= 2
    # Lowest index first: no task started before a lower one had.
    starts = [record["start"] for record in sorted(records, key=lambda record: record["index"])]
    assert all(starts[i] <= starts[i + 2] for i in range(len(starts) - 2))


async def test_a_waiting_task_says_the_array_its_limit_and_how_many_run(api, tasks):
    first = await api("workloads", "POST", _array(tasks, "0-2%1", gate=True))
    array = first["id"]
    third = next(t for t in await api("workloads", array=str(array)) if t["array"]["index"] == 2)
    message = f"array limit: array {array} runs at most 1 tasks at once (1 running, 0 next in line)"
    waiting = await _wait(api, third["id"], lambda w: [b["message"] for b in w.get("blockers") or ()] == [message])
    assert waiting["blockers"][0]["kind"] == "array-limit"
    assert waiting["blockers"][0]["params"] == {"array": array, "limit": 1, "running": 1, "next": 0}
    explained = await api(f"workloads/{third['id']}/explain")
    assert any(message in line for line in explained["lines"])
    for index in range(3):
        (tasks / f"open-{index}").write_text("open")
    await _until_all_end(api, array, 3, most=1)


async def _wait(api, workload_id: int, predicate, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while not predicate(workload := await api(f"workloads/{workload_id}")):
        assert time.monotonic() < deadline, workload
        await _pause()
    return workload


@pytest.mark.team(vision={"quotas": {"cpu-standard": {"nominal": {"cpu": 2, "memory": "2Gi"},
                                                      "borrowing_limit": {"cpu": 0, "memory": 0}}}})
async def test_without_room_in_its_quota_an_array_runs_what_the_quota_fits_whatever_its_limit(team, api, tasks):
    body = _array(tasks, "0-5%10", parameters={"cpu": 1, "memory": "1Gi"}, env={"HOLD_S": "0.5"})
    first = await api("workloads", "POST", body, as_user="alice")
    array = first["id"]
    saw_quota = False
    deadline = time.monotonic() + 90
    while True:
        listed = await api("workloads", array=str(array), as_user="alice")
        assert sum(task["state"] in ACTIVE for task in listed) <= 2
        for task in listed:
            if task["state"] == "queued":
                described = await api(f"workloads/{task['id']}", as_user="alice")
                kinds = [b["kind"] for b in described.get("blockers") or ()]
                assert "array-limit" not in kinds  # six tasks, a limit of ten: only the quota holds them
                saw_quota = saw_quota or "quota" in kinds
        if all(final(task) for task in listed):
            break
        assert time.monotonic() < deadline
        await _pause()
    assert {task["state"] for task in listed} == {"succeeded"}
    assert saw_quota
    records = _seen(tasks)
    assert sorted(record["index"] for record in records) == list(range(6))
    assert _most_at_once(records) <= 2


@pytest.mark.parametrize(("array", "message"), [
    pytest.param("9-0", "array: '9-0' runs backwards: 9 is above 0", id="reversed"),
    pytest.param("0-9%0", "array: the limit after % must be at least 1, got 0", id="a limit below 1"),
    pytest.param("0-9:0", "array: the step after : must be at least 1, got 0", id="a step below 1"),
    pytest.param("0-9,x", "array: '0-9,x' is not an array of indices", id="malformed"),
    pytest.param("   ", "array: '' is not an array of indices", id="blank"),
    pytest.param("0-10", "array: 11 tasks is more than the 10 an array may have here", id="more than the server allows"),
])
async def test_a_bad_array_is_a_400_naming_array_and_stores_nothing(small_arrays, api, api_error, array, message):
    status, error = await api_error("workloads", "POST", {**CPU, "command": ["true"], "array": array})
    assert (status, error["field"]) == (400, "array"), error
    assert message in error["message"] and error["message_zh"]
    assert await api("workloads") == []


async def test_an_empty_or_mistyped_array_is_a_400_naming_array(api, api_error):
    for body in ({**CPU, "command": ["true"], "array": ""}, {**CPU, "command": ["true"], "array": 12}):
        status, error = await api_error("workloads", "POST", body)
        assert (status, error["field"]) == (400, "array"), error
    for value in ("twelve", "0", "-3"):
        status, error = await api_error("workloads", array=value)
        assert (status, error["field"]) == (400, "array"), error
    status, error = await api_error("workloads/1", "DELETE", array="perhaps")
    assert (status, error["field"]) == (400, "array"), error
    assert await api("workloads") == []


async def test_an_array_sent_twice_with_its_key_is_stored_once(api, api_error, tasks):
    key = {"Idempotency-Key": "array-submission-1"}
    body = _array(tasks, "0-3%1", gate=True)
    first = await api("workloads", "POST", body, headers=key)
    again = await api("workloads", "POST", body, headers=key)
    assert again["id"] == first["id"] and again["array"] == first["array"]
    assert len(await api("workloads")) == 4
    status, error = await api_error("workloads", "POST", {**body, "array": "0-4%1"}, headers=key)
    assert (status, error["field"]) == (409, "Idempotency-Key")
    assert len(await api("workloads")) == 4
    await api(f"workloads/{first['id']}", "DELETE", array="true")


async def test_cancelling_an_array_cancels_every_unfinished_task_by_whoever_may_cancel_one(team, api, api_error, tasks,
                                                                                        tmp_path):
    done = await api("workloads", "POST", _array(tasks, "0-1"), as_user="alice")
    await _until_all_end(api, done["id"], 2)
    first = await api("workloads", "POST", _array(tasks, "0-3%1", gate=True), as_user="alice")
    array = first["id"]
    await _wait(api, array, lambda w: w["state"] == "running")
    listed = await api("workloads", array=str(array), as_user="alice")
    second = next(task for task in listed if task["array"]["index"] == 1)
    # Another tenant: refused, audited, and nothing changed.
    status, error = await api_error(f"workloads/{second['id']}", "DELETE", as_user="bob", array="true")
    assert status == 403
    assert error["reason"] == f"workload {second['id']} belongs to tenant vision, not to your tenant nlp"
    audit = sqlite3.connect(tmp_path / "hetero.sqlite").execute(
        "SELECT actor, action, outcome, target FROM audit WHERE outcome = 'denied'").fetchall()
    assert ("bob", "workload.cancel", "denied", f"workload/{second['id']}") in audit
    assert {task["state"] for task in await api("workloads", array=str(array), as_user="alice")} == {"running",
                                                                                                    "queued"}
    # A workload of no array: a 400 naming array; one that does not exist: a 404.
    plain = await api("workloads", "POST", {**CPU, "command": ["true"]}, as_user="alice")
    status, error = await api_error(f"workloads/{plain['id']}", "DELETE", as_user="alice", array="true")
    assert (status, error["field"]) == (400, "array")
    status, _error = await api_error("workloads/99999", "DELETE", as_user="alice", array="true")
    assert status == 404
    # Its tenant's admin names any task of it: every unfinished one ends, the ended array before it is untouched.
    answer = await api(f"workloads/{second['id']}", "DELETE", as_user="carol", array="true")
    assert answer["id"] == second["id"] and answer["state"] == "cancelled"
    ended = await _until_all_end(api, array, 4)
    assert {task["state"] for task in ended} == {"cancelled"}
    assert {task["state"] for task in await api("workloads", array=str(done["id"]))} == {"succeeded"}
    running = next(task for task in ended if task["array"]["index"] == 0)
    assert running["attempt_count"] == 1  # it ran, and was stopped
    assert {task["attempt_count"] for task in ended if task["array"]["index"] > 0} == {0}
    events = await api(f"workloads/{second['id']}/events")
    assert ("cancelled", f"cancelled by carol with its array {array} while waiting") in [
        (e["type"], e["reason"]) for e in events]
    allowed = sqlite3.connect(tmp_path / "hetero.sqlite").execute(
        "SELECT actor, action, target FROM audit WHERE outcome = 'allowed' AND action = 'workload.cancel'").fetchall()
    assert ("carol", "workload.cancel", f"array/{array}") in allowed
    assert _seen(tasks) and {record["array"] for record in _seen(tasks)} == {done["id"]}  # none of this array ran


@pytest.mark.slow
def test_the_limit_holds_across_a_kill_and_restart_of_the_server(tmp_path):
    layout = ServerLayout.create(tmp_path)
    (layout.notebooks / "task.py").write_text(TASK, encoding="utf-8")
    seen = layout.notebooks / "seen"
    seen.mkdir()
    with start_hetero_server(layout, "before", DEMO_NODES) as server:
        client = HeteroClient(server.base_url, server.token)
        array = client.submit(**_array(seen, "0-2%1", gate=True))["id"]
        until(lambda: client.workload(array)["state"] == "running", "the first task to run")
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(10)
    with start_hetero_server(layout, "after", DEMO_NODES) as server:
        client = HeteroClient(server.base_url, server.token)
        listed = {task["array"]["index"]: task for task in client.workloads(array=array)}
        assert len(listed) == 3
        second = listed[1]["id"]
        held = until(lambda: (w := client.workload(second)).get("blockers") and w, "the limit after the restart")
        assert held["state"] == "queued" and held["blockers"][0]["kind"] == "array-limit"
        assert client.workload(array)["state"] == "running"  # adopted: its process outlived the server
        for index in range(3):
            (seen / f"open-{index}").write_text("open")
            until(lambda: sum(t["state"] in ACTIVE for t in client.workloads(array=array)) <= 1 and (
                len(_seen(seen)) > index), f"task {index} to end", timeout=60)
        def ended() -> list[dict] | None:
            listed = client.workloads(array=array)
            return listed if all(final(task) for task in listed) else None

        done = until(ended, "every task to end", timeout=60)
        assert {task["state"] for task in done} == {"succeeded"}
        records = _seen(seen)
        assert sorted(record["index"] for record in records) == [0, 1, 2]
        assert _most_at_once(records) == 1
