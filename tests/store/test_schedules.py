"""Recurring schedules on real databases (SQLite and PostgreSQL): schema 12 makes their table on a database of
schema 11 and keeps its rows; a run is listed with the next due time in one write, never over an edit made
meanwhile; the runs listed are bounded."""

from __future__ import annotations

from sqlalchemy import create_engine, inspect, text

from jupyter_hetero.store import Repository
from jupyter_hetero.store.migrations import MIGRATIONS, migrate
from jupyter_hetero.store.schedules import RUNS_KEPT
from jupyter_hetero.store.tables import ScheduleRow, SchemaVersionRow, WorkloadRow


def _schedule(repo, **fields) -> ScheduleRow:
    values = {"name": "nightly", "tenant": "vision", "user": "ada", "groups": [], "cron": "0 2 * * *",
              "timezone": "UTC", "missed": "run-once", "state": "active",
              "job": {"template": "training", "command": ["true"]}, "next_run_at": 7200.0, "runs": []}
    return repo.add_schedule(ScheduleRow(**{**values, **fields}))


def test_schema_12_makes_the_schedules_table_on_a_database_of_schema_11_keeping_its_rows(db_url):
    engine = create_engine(db_url)
    with engine.begin() as connection:  # a database as release 11 left it, with one workload
        SchemaVersionRow.__table__.create(connection)
        for version, step in MIGRATIONS:
            if version <= 11:
                step(connection)
                connection.execute(SchemaVersionRow.__table__.insert().values(version=version, applied_at=0))
        connection.execute(text(
            'INSERT INTO workloads (kind, tenant, "user", template, queue, request, spec, state, held_cpu_milli,'
            ' held_memory_mib, held_device_milli, attempts, created_at, updated_at)'
            " VALUES ('job', 'vision', 'ada', 'training', 'training', '{}', '{}', 'queued', 0, 0, 0, 0, 1, 1)"))
        assert "schedules" not in inspect(connection).get_table_names()
    with engine.begin() as connection:
        assert migrate(connection, now=2.0) == [12]
        indexes = {index["name"]: index["column_names"] for index in inspect(connection).get_indexes("schedules")}
    engine.dispose()
    assert indexes["ix_schedules_state_next_run_at"] == ["state", "next_run_at"]
    repo = Repository(db_url, clock=lambda: 3.0)
    try:
        assert repo.workload(1).user == "ada"
        stored = _schedule(repo)
        assert repo.schedule(stored.id).job == {"template": "training", "command": ["true"]}
    finally:
        repo.close()


def test_a_due_run_is_listed_and_the_next_due_time_set_in_one_write(repo):
    row = _schedule(repo)
    assert [found.id for found in repo.due_schedules(7199.0)] == []
    assert [found.id for found in repo.due_schedules(7200.0)] == [row.id]
    run = {"workload": 5, "due_at": 7200.0, "submitted_at": 7201.0, "late": False}
    written = repo.record_schedule_run(row.id, run=run, error=None, due_at=7200.0, next_run_at=93600.0)
    assert (written.runs, written.last_run_at, written.next_run_at) == ([run], 7201.0, 93600.0)
    assert repo.earliest_due() == 93600.0


def test_an_edit_made_while_a_run_was_submitted_keeps_its_own_next_due_time(repo):
    row = _schedule(repo)
    repo.update_schedule(row.id, state="paused", next_run_at=None)  # paused while the run was being submitted
    run = {"workload": 5, "due_at": 7200.0, "submitted_at": 7201.0, "late": False}
    written = repo.record_schedule_run(row.id, run=run, error=None, due_at=7200.0, next_run_at=93600.0)
    assert (written.state, written.next_run_at, written.runs) == ("paused", None, [run])
    assert repo.earliest_due() is None


def test_a_refusal_keeps_the_runs_and_says_why_and_a_later_run_clears_it(repo):
    row = _schedule(repo)
    refused = repo.record_schedule_run(row.id, run=None, error="tenant vision may not use template training",
                                       due_at=7200.0, next_run_at=93600.0)
    assert (refused.runs, refused.last_error, refused.next_run_at) == ([], "tenant vision may not use template "
                                                                           "training", 93600.0)
    run = {"workload": 6, "due_at": 93600.0, "submitted_at": 93601.0, "late": False}
    assert repo.record_schedule_run(row.id, run=run, error=None, due_at=93600.0, next_run_at=180000.0).last_error is None


def test_only_the_latest_runs_are_listed_newest_first_and_their_states_read_in_one_query(repo):
    row = _schedule(repo)
    for number in range(RUNS_KEPT + 5):
        repo.record_schedule_run(row.id, run={"workload": number, "due_at": float(number), "submitted_at": 1.0,
                                              "late": False}, error=None, due_at=None, next_run_at=None)
    runs = repo.schedule(row.id).runs
    assert [run["workload"] for run in runs] == list(range(RUNS_KEPT + 4, 4, -1))
    assert repo.schedule(row.id).next_run_at == 7200.0  # a run out of cadence leaves the cadence
    workload = repo.add_workload(WorkloadRow(kind="job", name=None, tenant="vision", user="ada", template="training",
                                             queue="training", request={}, spec={"schedule": row.id}, state="queued",
                                             held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, attempts=0),
                                 reason="submitted")
    assert repo.run_states([workload.id, workload.id + 100]) == {workload.id: "queued"}
    assert repo.run_states([]) == {}


def test_lists_leave_deleted_schedules_out_and_filter_by_tenant_and_user(repo):
    mine, theirs, gone = _schedule(repo), _schedule(repo, tenant="nlp", user="bo"), _schedule(repo, state="deleted")
    assert [row.id for row in repo.schedules()] == [mine.id, theirs.id]
    assert [row.id for row in repo.schedules(tenant="nlp")] == [theirs.id]
    assert [row.id for row in repo.schedules(user="ada")] == [mine.id]
    assert repo.schedule(gone.id).state == "deleted"
