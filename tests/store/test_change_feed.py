"""The store's change feed: after a first list, only the workloads written since the cursor come back."""

from __future__ import annotations

from jupyter_hetero.store import Repository
from jupyter_hetero.store.tables import WorkloadRow

SCHEDULED = ("queued", "preempted", "admitted", "starting", "running")


def _add(repo: Repository, name: str, state: str = "queued") -> WorkloadRow:
    return repo.add_workload(WorkloadRow(
        kind="job", name=name, tenant="vision", user="ada", template="training", queue="training", request={},
        spec={}, state=state, held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, attempts=0,
    ), reason="submitted")


def test_the_first_read_lists_what_is_scheduled_then_only_changes_come_back(repo):
    waiting, done = _add(repo, "waiting"), _add(repo, "done", state="succeeded")
    cursor, rows = repo.workload_changes(None, SCHEDULED)
    assert [row.id for row in rows] == [waiting.id]
    assert repo.workload_changes(cursor, SCHEDULED) == (cursor, [])

    repo.update_workload(waiting.id, event="admitted", state="admitted")
    late = _add(repo, "late")
    repo.append_event(type="node-registered", node="n1")  # not a workload's: changes nothing
    cursor, rows = repo.workload_changes(cursor, SCHEDULED)
    assert [(row.id, row.state) for row in rows] == [(waiting.id, "admitted"), (late.id, "queued")]

    repo.update_workload(waiting.id, event="succeeded", state="succeeded")
    cursor, rows = repo.workload_changes(cursor, SCHEDULED)
    assert [(row.id, row.state) for row in rows] == [(waiting.id, "succeeded")]  # so the reader drops it
    assert repo.workload_changes(cursor, SCHEDULED)[1] == []
    assert done.id not in {row.id for row in repo.workload_changes(None, SCHEDULED)[1]}
