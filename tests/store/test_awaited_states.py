"""What a tick's dependencies read, on SQLite and PostgreSQL: the awaited workloads' states and, for an array's id,
its tasks' states counted, in one read; a task that is not its array's first, or a plain job, is read as itself."""

from __future__ import annotations

from jupyter_hetero.store.tables import WorkloadRow

from .test_array_records import _named_by_first, _row


def test_an_arrays_id_reads_its_tasks_states_counted_and_anything_else_reads_as_itself(repo):
    job = repo.add_workload(_row(), reason="a job")
    tasks = repo.add_workloads([_row(index) for index in range(3)], reason="an array", complete=_named_by_first)
    other = repo.add_workloads([_row(index) for index in range(3)], reason="another", complete=_named_by_first)
    repo.update_workload(tasks[0].id, event="succeeded", state="succeeded")
    repo.update_workload(tasks[2].id, event="failed", state="failed")
    repo.update_workload(other[1].id, event="running", state="running")
    states, arrays = repo.awaited_states([job.id, tasks[0].id, tasks[1].id, other[0].id, 9999])
    assert states == {job.id: "queued", tasks[0].id: "succeeded", tasks[1].id: "queued", other[0].id: "queued"}
    assert arrays == {tasks[0].id: {"succeeded": 1, "queued": 1, "failed": 1},
                      other[0].id: {"queued": 2, "running": 1}}
    assert repo.awaited_states([]) == ({}, {})
    assert repo.awaited_states([job.id]) == ({job.id: "queued"}, {})


def test_rows_without_a_spec_or_an_array_are_no_arrays(repo):
    bare = repo.add_workload(WorkloadRow(kind="job", name=None, tenant="t", user="ada", template="x", queue="q",
                                         request={}, spec={}, state="queued", attempts=0), reason="a job")
    assert repo.awaited_states([bare.id]) == ({bare.id: "queued"}, {})
