"""Dependencies held before the engine, tick by tick over a real store, with cycles in the server's process
and in an engine process (whose mirror must hear of a hold placed or lifted though the held row did not
change); and the conditions' verdicts as a table."""

from __future__ import annotations

import time

import pytest

from jupyter_hetero.platform.scheduling.dependencies import verdict

from ...builders import stored_kernel
from .conftest import real_scheduler


@pytest.mark.parametrize(("condition", "state", "expected"), [
    pytest.param("ok", "running", None, id="ok waits while it runs"),
    pytest.param("ok", "preempted", None, id="ok waits while it is back in its queue"),
    pytest.param("ok", "succeeded", True, id="ok holds once it succeeded"),
    pytest.param("ok", "failed", False, id="ok never holds once it failed"),
    pytest.param("ok", "cancelled", False, id="ok never holds once it was cancelled"),
    pytest.param("any", "cancelled", True, id="any holds once it was cancelled"),
    pytest.param("any", "lost", True, id="any holds once it was lost"),
    pytest.param("failed", "lost", True, id="failed holds once it was lost with its node"),
    pytest.param("failed", "succeeded", False, id="failed never holds once it succeeded"),
    pytest.param("failed", "cancelled", False, id="failed never holds once it was cancelled"),
    pytest.param("any", None, False, id="a workload gone can hold nothing"),
])
def test_verdict(condition, state, expected):
    assert verdict(condition, state) is expected


@pytest.fixture(params=[False, True], ids=["cycles here", "cycles in an engine process"])
def scheduler(request, tmp_path):
    yield from real_scheduler(tmp_path, engine_process=request.param)


def test_a_held_workload_is_no_candidate_until_what_it_awaits_succeeded(scheduler):
    awaited = stored_kernel(scheduler, "a")
    held = stored_kernel(scheduler, "b", after=((awaited.id, "ok"),))
    decisions = scheduler.tick()
    assert [a.workload for a in decisions.admissions] == [awaited.id]  # room for both: only the hold keeps b out
    # The awaited workload's state as the tick found it, before its cycle admitted it; the next tick's is newer.
    assert [(b.kind, b.params) for b in scheduler.waiting(held.id).blockers] == [
        ("after-ok", {"workload": awaited.id, "state": "queued"})]
    assert scheduler.tick().admissions == []  # still held
    assert [(b.kind, b.params) for b in scheduler.waiting(held.id).blockers] == [
        ("after-ok", {"workload": awaited.id, "state": "admitted"})]
    scheduler.repository.update_workload(awaited.id, event="succeeded", state="succeeded", finished_at=time.time())
    decisions = scheduler.tick()
    assert [a.workload for a in decisions.admissions] == [held.id]
    assert scheduler.repository.workload(held.id).state == "admitted"


def test_a_condition_that_can_no_longer_hold_fails_the_workload_with_its_event(scheduler):
    awaited = stored_kernel(scheduler, "a")
    on_failure = stored_kernel(scheduler, "b", after=((awaited.id, "failed"),))
    scheduler.tick()
    scheduler.repository.update_workload(awaited.id, event="succeeded", state="succeeded", finished_at=time.time())
    decisions = scheduler.tick()
    assert on_failure.id not in [a.workload for a in decisions.admissions]
    row = scheduler.repository.workload(on_failure.id)
    reason = f"dependency not met: workload {awaited.id} succeeded"
    assert (row.state, row.reason, row.attempts) == ("failed", reason, 0)
    assert ("failed", reason) in [(e.type, e.reason) for e in scheduler.repository.events(workload_id=on_failure.id)]
    assert scheduler.waiting(on_failure.id) is None
