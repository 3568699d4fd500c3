"""``after`` naming an array's id waits for every task of the array, as Slurm's afterok, afterany and afternotok on an
array job id do: tick by tick over a real store, the blocker naming the array and how many of its tasks are still to
end; the verdicts over an array's states as a table; the awaited states still read once a tick."""

from __future__ import annotations

import time

import pytest

from jupyter_hetero.engine import render
from jupyter_hetero.platform.scheduling.dependencies import array_verdict
from jupyter_hetero.store import Repository

from ...builders import stored_array, stored_kernel


@pytest.mark.parametrize(("condition", "counts", "expected"), [
    pytest.param("ok", {"succeeded": 2, "running": 1}, (None, None), id="ok waits while a task runs"),
    pytest.param("ok", {"succeeded": 3}, (True, None), id="ok holds once every task succeeded"),
    pytest.param("ok", {"failed": 1, "running": 2}, (False, "failed"), id="ok breaks at the first failed task"),
    pytest.param("ok", {"succeeded": 2, "cancelled": 1}, (False, "cancelled"), id="ok breaks on a cancelled task"),
    pytest.param("ok", {"lost": 1, "succeeded": 2}, (False, "lost"), id="ok breaks on a lost task"),
    pytest.param("any", {"failed": 1, "queued": 2}, (None, None), id="any waits while a task waits"),
    pytest.param("any", {"failed": 1, "cancelled": 1, "succeeded": 1}, (True, None), id="any holds once all ended"),
    pytest.param("any", {"preempted": 1, "succeeded": 2}, (None, None), id="a preempted task has not ended"),
    pytest.param("failed", {"failed": 1, "running": 2}, (None, None),
                 id="failed waits for every task to end, even with one failed"),
    pytest.param("failed", {"failed": 1, "succeeded": 2}, (True, None), id="failed holds: all ended, one failed"),
    pytest.param("failed", {"lost": 1, "cancelled": 2}, (True, None), id="a lost task counts as failed"),
    pytest.param("failed", {"succeeded": 2, "cancelled": 1}, (False, None), id="failed breaks: all ended, none failed"),
])
def test_array_verdict(condition, counts, expected):
    assert array_verdict(condition, counts) == expected


def _end(scheduler, row, state: str = "succeeded") -> None:
    scheduler.repository.update_workload(row.id, event=state, state=state, finished_at=time.time())


def _blockers(scheduler, row) -> list[tuple[str, dict]]:
    return [(b.kind, b.params) for b in scheduler.waiting(row.id).blockers]


def test_a_job_after_an_array_waits_for_every_task_to_succeed(scheduler):
    tasks = stored_array(scheduler, "0-2")
    array = tasks[0].id
    after = stored_kernel(scheduler, "after", after=((array, "ok"),))
    decisions = scheduler.tick()
    assert sorted(a.workload for a in decisions.admissions) == [row.id for row in tasks]  # not the dependent
    assert _blockers(scheduler, after) == [("after-array-ok", {"array": array, "pending": 3, "size": 3})]
    assert render(scheduler.waiting(after.id).blockers[0]) == (
        f"dependency: waits for every task of array {array} to succeed (3 of 3 still to end)")
    _end(scheduler, tasks[0])  # the array's id is its first task's: its end alone lifts nothing
    _end(scheduler, tasks[1])
    assert scheduler.tick().admissions == []
    assert _blockers(scheduler, after) == [("after-array-ok", {"array": array, "pending": 1, "size": 3})]
    _end(scheduler, tasks[2])
    assert [a.workload for a in scheduler.tick().admissions] == [after.id]


def test_a_failed_task_fails_an_ok_dependent_with_the_reason_and_lets_a_failed_one_run_once_all_ended(scheduler):
    tasks = stored_array(scheduler, "0-2")
    array = tasks[0].id
    on_ok = stored_kernel(scheduler, "ok", after=((array, "ok"),))
    on_failure = stored_kernel(scheduler, "failed", after=((array, "failed"),))
    on_any = stored_kernel(scheduler, "any", after=((array, "any"),))
    scheduler.tick()
    _end(scheduler, tasks[1], "failed")
    scheduler.tick()
    failed = scheduler.repository.workload(on_ok.id)
    assert (failed.state, failed.reason) == ("failed", f"dependency not met: array {array}: 1 of its 3 tasks failed")
    event = scheduler.repository.events(workload_id=on_ok.id)[-1]
    assert (event.type, event.data["array"], event.data["tasks"]) == ("failed", array, {"admitted": 2, "failed": 1})
    # A failed task makes afternotok possible, but it holds only once every task ended.
    assert _blockers(scheduler, on_failure) == [("after-array-failed", {"array": array, "pending": 2, "size": 3})]
    assert _blockers(scheduler, on_any) == [("after-array-any", {"array": array, "pending": 2, "size": 3})]
    _end(scheduler, tasks[0])
    _end(scheduler, tasks[2])
    assert sorted(a.workload for a in scheduler.tick().admissions) == sorted([on_failure.id, on_any.id])


def test_an_array_that_ended_without_a_failure_fails_an_afternotok_dependent(scheduler):
    tasks = stored_array(scheduler, "0-1")
    array = tasks[0].id
    on_failure = stored_kernel(scheduler, "failed", after=((array, "failed"),))
    scheduler.tick()
    _end(scheduler, tasks[0])
    _end(scheduler, tasks[1], "cancelled")
    scheduler.tick()
    failed = scheduler.repository.workload(on_failure.id)
    assert (failed.state, failed.reason) == (
        "failed", f"dependency not met: array {array}: all of its 2 tasks ended, none failed")


def test_a_task_other_than_the_first_is_awaited_alone(scheduler):
    tasks = stored_array(scheduler, "0-2")
    after = stored_kernel(scheduler, "after", after=((tasks[1].id, "ok"),))
    scheduler.tick()
    assert _blockers(scheduler, after) == [("after-ok", {"workload": tasks[1].id, "state": "queued"})]
    _end(scheduler, tasks[1])
    assert [a.workload for a in scheduler.tick().admissions] == [after.id]


def test_dependents_of_arrays_and_jobs_read_the_states_once_a_tick(scheduler, monkeypatch):
    arrays = [stored_array(scheduler, "0-3") for _ in range(2)]
    job = stored_kernel(scheduler, "job")
    for n in range(4):
        stored_kernel(scheduler, f"b{n}", after=((arrays[n % 2][0].id, "ok"), (job.id, "any")))
    repository = scheduler.repository
    reads = []
    monkeypatch.setattr(repository, "workload", lambda workload_id: reads.append(workload_id))
    monkeypatch.setattr(repository, "workloads", lambda **query: reads.append(query))
    reading = repository.awaited_states
    monkeypatch.setattr(repository, "awaited_states", lambda ids: reads.append(sorted(ids)) or reading(ids))
    held, failed = scheduler.holds.dependencies.hold(Repository.workloads(repository), time.time())
    assert reads == [sorted([arrays[0][0].id, arrays[1][0].id, job.id])]  # one read for four dependents
    assert len(held) == 4 and failed == []
    assert {b.kind for pending in held.values() for b in pending.blockers} == {"after-array-ok", "after-any"}
