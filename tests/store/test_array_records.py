"""An array's tasks in the store, on SQLite and PostgreSQL: all stored in one transaction with their events (or none),
named by the first one's id; listed by their array; read and cancelled many at once."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError

from jupyter_hetero.store.tables import WorkloadRow


def _row(index: int | None = None, **fields) -> WorkloadRow:
    spec = {"payload": "command", "command": ["true"]}
    if index is not None:
        spec["array"] = {"id": 0, "index": index, "size": 3, "limit": None, "indices": "0-2"}
    return WorkloadRow(**{"kind": "job", "name": None, "tenant": "t", "user": "ada", "template": "x", "queue": "q",
                          "request": {}, "spec": spec, "state": "queued", "attempts": 0, **fields})


def _named_by_first(row: WorkloadRow, first: int) -> None:
    row.spec = {**row.spec, "array": {**row.spec["array"], "id": first}}


def test_an_arrays_tasks_are_stored_together_named_by_the_first_and_listed_by_it(repo):
    before = repo.add_workload(_row(), reason="a job")
    tasks = repo.add_workloads([_row(index) for index in range(3)], reason="an array", complete=_named_by_first)
    first = tasks[0].id
    assert [task.spec["array"]["id"] for task in tasks] == [first] * 3
    assert [row.id for row in repo.workloads(array=first)] == [task.id for task in tasks]
    assert repo.workloads(array=before.id) == [] and repo.workloads(array=tasks[1].id) == []
    after = repo.add_workloads([_row(index) for index in range(3)], reason="another", complete=_named_by_first)
    assert [row.id for row in repo.workloads(array=first)] == [task.id for task in tasks]
    assert len(repo.workloads(array=after[0].id, limit=2)) == 2
    assert [e.type for e in repo.events(workload_id=tasks[2].id)] == ["submitted"]


def test_a_failed_insert_stores_none_of_the_tasks(repo):
    repo.add_workload(_row(request_key="k"), reason="a job")
    with pytest.raises(IntegrityError):  # the second task repeats the first's key, which the store refuses
        repo.add_workloads([_row(0), _row(1, request_key="k", user="ada")], reason="an array",
                           complete=_named_by_first)
    assert len(repo.workloads()) == 1


def test_states_are_read_in_one_read_and_waiting_tasks_cancelled_in_one_write(repo):
    tasks = repo.add_workloads([_row(index) for index in range(3)], reason="an array", complete=_named_by_first)
    repo.update_workload(tasks[0].id, event="admitted", state="admitted")
    assert repo.workload_states([task.id for task in tasks] + [9999]) == {
        tasks[0].id: "admitted", tasks[1].id: "queued", tasks[2].id: "queued"}
    cancelled = repo.update_workloads_if([task.id for task in tasks], lambda row: row.state == "queued",
                                         event="cancelled", reason="by ada", state="cancelled")
    assert [row.id for row in cancelled] == [tasks[1].id, tasks[2].id]
    assert repo.workload_states(task.id for task in tasks) == {
        tasks[0].id: "admitted", tasks[1].id: "cancelled", tasks[2].id: "cancelled"}
    assert [e.type for e in repo.events(workload_id=tasks[1].id)] == ["submitted", "cancelled"]
