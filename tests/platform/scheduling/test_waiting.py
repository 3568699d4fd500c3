"""The blockers a waiting workload waited on, over time: a `waiting` event when its top blocker changes, at most
once per 30 s per workload, every change of one tick in one write; and what that costs a tick."""

from __future__ import annotations

import time

import pytest

from jupyter_hetero.engine import Pending
from jupyter_hetero.engine.decisions import Blocker
from jupyter_hetero.platform.scheduling.waiting import BlockerTrail
from jupyter_hetero.store import Repository
from jupyter_hetero.store.tables import WorkloadRow

QUOTA = Blocker("quota", "a100-80g", {"tenant": "vision", "used": 1, "limit": 1, "flavor": "a100-80g",
                                      "queue": "training", "borrowing_limit": 0, "resource": "devices", "nominal": 1})
CAPACITY = Blocker("capacity", "a100-80g", {"needed": 2, "free": 1})


class CountingRepository(Repository):
    """A real repository that counts the writes of ``append_events``."""

    writes = 0

    def append_events(self, events):
        if events:
            self.writes += 1
        super().append_events(events)


@pytest.fixture
def repository(tmp_path):
    repository = CountingRepository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=time.time)
    for _ in range(3):
        repository.add_workload(WorkloadRow(kind="job", tenant="vision", user="ada", template="training",
                                            queue="training", request={}, spec={}, state="queued"), reason="test")
    yield repository
    repository.close()


def waiting(repository, workload_id):
    return [e for e in repository.events(workload_id=workload_id) if e.type == "waiting"]


def test_a_change_of_top_blocker_is_recorded_once_per_30_s_in_one_write_per_tick(repository):
    trail = BlockerTrail(repository)
    assert trail.observe({1: Pending(1, 1, (QUOTA,)), 2: Pending(2, 2, (QUOTA, CAPACITY))}, now=0.0) == 2
    assert repository.writes == 1  # both workloads' first waits, in one transaction
    [first] = waiting(repository, 1)
    assert first.data["blockers"][0]["kind"] == "quota" and first.data["position"] == 1
    assert first.reason.startswith("quota: tenant vision uses 1/1 devices of flavor a100-80g")

    # The same top blocker: nothing written, however many ticks.
    assert trail.observe({1: Pending(1, 1, (QUOTA,)), 2: Pending(2, 2, (QUOTA,))}, now=40.0) == 0
    assert repository.writes == 1
    # A new top blocker within 30 s of the last event: not yet; after them, recorded.
    trail.observe({1: Pending(1, 1, (QUOTA,))}, now=41.0)  # 2 left (admitted): forgotten
    assert trail.observe({1: Pending(1, 1, (CAPACITY, QUOTA))}, now=20.0) == 0
    assert trail.observe({1: Pending(1, 1, (CAPACITY, QUOTA))}, now=31.0) == 1
    assert [e.data["blockers"][0]["kind"] for e in waiting(repository, 1)] == ["quota", "capacity"]
    # A workload waiting again (after a preemption) says its blockers again, though they are the ones it had.
    assert trail.observe({2: Pending(2, 1, (QUOTA,))}, now=42.0) == 1
    assert len(waiting(repository, 2)) == 2


def test_inadmissible_work_and_work_with_no_blockers_yet_are_not_recorded(repository):
    trail = BlockerTrail(repository)
    assert trail.observe({1: Pending(1, 1, (QUOTA,), inadmissible=True), 2: Pending(2, 1, ())}, now=0.0) == 0
    assert repository.writes == 0


def test_a_tick_over_5000_waiting_workloads_pays_little_when_nothing_changed(repository):
    trail = BlockerTrail(repository)
    pending = {i: Pending(i, i, (QUOTA, CAPACITY)) for i in range(1, 5001)}
    trail._recorded = {i: (("quota", "a100-80g"), 0.0) for i in pending}  # as after the first tick
    started = time.perf_counter()
    for tick in range(20):
        assert trail.observe(pending, now=100.0 + tick) == 0
    per_tick = (time.perf_counter() - started) / 20
    # A tick at this size takes about 0.3 s (docs/benchmarks.md); the trail must stay well within its noise.
    assert per_tick < 0.02, per_tick
