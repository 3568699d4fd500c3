"""An array's limit held before the engine, tick by tick over a real store, with cycles in the server's process and in
an engine process: at most ``limit`` of its tasks hold capacity at once, lowest index first, the others held with a
blocker naming the array; without a limit every task is an ordinary workload. And the dependencies' one read of the
awaited workloads' states per tick; an array's environment in a Kubernetes pod."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from jupyter_hetero.backends.base import Launch
from jupyter_hetero.backends.kubernetes.config import KubernetesConfig
from jupyter_hetero.backends.kubernetes.factory import PodFactory
from jupyter_hetero.engine import render
from jupyter_hetero.engine_inputs import placement_from_json
from jupyter_hetero.store import ACTIVE_STATES

from ...builders import stored_array, stored_kernel
from .conftest import real_scheduler
from .test_inadmissible import _two_t4s


@pytest.fixture(params=[False, True], ids=["cycles here", "cycles in an engine process"])
def scheduler(request, tmp_path):
    yield from real_scheduler(tmp_path, engine_process=request.param)


def _admitted(decisions) -> list[int]:
    return sorted(admission.workload for admission in decisions.admissions)


def _limits(scheduler, tasks) -> dict[int, dict]:
    """Each held task's array-limit blocker, as the API shows its params."""
    return {row.spec["array"]["index"]: waiting.blockers[0].params for row in tasks
            if (waiting := scheduler.waiting(row.id)) is not None and waiting.blockers[0].kind == "array-limit"}


def _end(scheduler, row) -> None:
    scheduler.repository.update_workload(row.id, event="succeeded", state="succeeded", finished_at=time.time())


def test_an_array_holds_at_most_its_limit_at_once_lowest_index_first(scheduler):
    tasks = stored_array(scheduler, "0-4%2")
    array = tasks[0].id
    assert [row.spec["array"] for row in tasks] == [
        {"id": array, "index": index, "size": 5, "limit": 2, "indices": "0-4"} for index in range(5)]
    # Room for all five: only the limit keeps three out.
    assert _admitted(scheduler.tick()) == [tasks[0].id, tasks[1].id]
    held = {"array": array, "limit": 2, "running": 0, "next": 2}  # as the tick found them, before its cycle
    assert _limits(scheduler, tasks) == {2: held, 3: held, 4: held}
    assert render(scheduler.waiting(tasks[2].id).blockers[0]) == (
        f"array limit: array {array} runs at most 2 tasks at once (0 running, 2 next in line)")
    assert scheduler.tick().admissions == []
    assert _limits(scheduler, tasks)[2] == {"array": array, "limit": 2, "running": 2, "next": 0}
    assert {scheduler.repository.workload(row.id).state for row in tasks[2:]} == {"queued"}
    _end(scheduler, tasks[1])
    assert _admitted(scheduler.tick()) == [tasks[2].id]
    _end(scheduler, tasks[0])
    _end(scheduler, tasks[2])
    assert _admitted(scheduler.tick()) == [tasks[3].id, tasks[4].id]
    assert _limits(scheduler, tasks) == {}


def test_an_array_without_a_limit_is_ordinary_workloads(scheduler):
    tasks = stored_array(scheduler, "1,3,7-8")
    assert [row.spec["array"]["index"] for row in tasks] == [1, 3, 7, 8]
    assert _admitted(scheduler.tick()) == [row.id for row in tasks]


def test_a_dependency_holds_an_arrays_tasks_before_its_limit_counts(scheduler):
    awaited = stored_kernel(scheduler, "a")
    tasks = stored_array(scheduler, "0-2%1", after=((awaited.id, "ok"),))
    assert _admitted(scheduler.tick()) == [awaited.id]
    assert {scheduler.waiting(row.id).blockers[0].kind for row in tasks} == {"after-ok"}
    _end(scheduler, awaited)
    assert _admitted(scheduler.tick()) == [tasks[0].id]
    assert set(_limits(scheduler, tasks)) == {1, 2}


def test_inadmissible_tasks_past_the_limit_wait_in_their_queue_once_one_of_them_fits(scheduler):
    repository = scheduler.repository
    tasks = stored_array(scheduler, "0-5%2", template="interactive", devices=2, flavor="t4")
    for _ in range(4):  # two at a time reach a cycle, which finds them inadmissible
        scheduler.tick()
    assert {repository.workload(row.id).state for row in tasks} == {"inadmissible"}
    scheduler.inventory.refresh(_two_t4s())  # one node holds one task now
    decisions = scheduler.tick()
    assert _admitted(decisions) == [tasks[0].id]
    states = [repository.workload(row.id).state for row in tasks]
    assert states[0] == "admitted" and states[1] == "queued"  # examined with it, waits for the devices
    # Held back by the limit, the rest were not examined: they wait in their queue now, not for the inventory.
    assert states[2:] == ["queued"] * 4
    assert [e.type for e in repository.events(workload_id=tasks[5].id)][-1] == "requeued"
    for _ in range(3):
        scheduler.tick()
        assert sum(repository.workload(row.id).state in ACTIVE_STATES for row in tasks) == 1  # the node's devices
    assert set(_limits(scheduler, tasks)) == {2, 3, 4, 5}


def test_the_dependencies_read_the_awaited_states_once_a_tick(scheduler, monkeypatch):
    awaited = [stored_kernel(scheduler, f"a{n}") for n in range(3)]
    for n in range(6):
        stored_kernel(scheduler, f"b{n}", after=tuple((row.id, "any") for row in awaited))
    repository = scheduler.repository
    reads = []
    monkeypatch.setattr(repository, "workload", lambda workload_id: reads.append(workload_id))
    reading = repository.awaited_states
    monkeypatch.setattr(repository, "awaited_states", lambda ids: reads.append(sorted(ids)) or reading(ids))
    rows = repository.workloads()
    held, failed = scheduler.holds.dependencies.hold(rows, time.time())
    assert reads == [[row.id for row in awaited]]  # one read for six dependents of three
    assert len(held) == 6 and failed == []


def test_a_tasks_pod_carries_its_place_in_the_array(scheduler, tmp_path):
    tasks = stored_array(scheduler, "3-5%1")
    scheduler.tick()
    row = scheduler.repository.workload(tasks[0].id)
    placement = placement_from_json(row.placement)
    env, _family = scheduler.replica_environment(row, placement.flavor, placement.slots[0], 0, 1, attempt=1)
    launch = Launch(workload_id=row.id, attempt=1, replica=0, node=placement.slots[0].node, argv=["true"], env=env,
                    cwd=Path(tmp_path), log_path=tmp_path / "log.txt", exit_path=tmp_path / "exit-0.json", devices=(),
                    measurable=False, family="",
                    placed=scheduler.placed(row, placement.flavor, placement.slots[0], 1))
    pod, _service = PodFactory(KubernetesConfig()).job_objects(launch)
    variables = {variable.name: variable.value for variable in pod.spec.containers[0].env or ()}
    assert (variables["HETERO_ARRAY_INDEX"], variables["HETERO_ARRAY_ID"], variables["HETERO_ARRAY_SIZE"]) == (
        "3", str(tasks[0].id), "3")
