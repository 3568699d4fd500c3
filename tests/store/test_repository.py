"""The store on real databases (a SQLite file, a PostgreSQL): migrations, node upserts, aggregates and the audit chain."""

from __future__ import annotations

import sqlite3

import pytest

from sqlalchemy import create_engine, inspect, text

from jupyter_hetero.store import SCHEMA_VERSION, Repository, SchemaTooNew
from jupyter_hetero.store.migrations import MIGRATIONS, migrate


def _execute(url: str, sql: str) -> None:
    """Write behind the repository's back, as another program (or an intruder) would."""
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text(sql))
    engine.dispose()


def test_a_new_database_is_created_at_the_latest_schema(repo):
    assert repo.migrations_applied == [version for version, _step in MIGRATIONS]
    assert repo.migrations_applied[-1] == SCHEMA_VERSION
    with repo.engine.connect() as connection:
        tables = set(inspect(connection).get_table_names())
    assert {"nodes", "workloads", "events", "audit", "credentials", "schema_version"} <= tables


def test_a_sqlite_file_is_in_wal_mode_in_a_folder_made_for_it(tmp_path):
    path = tmp_path / "nested" / "hetero.sqlite"
    Repository(f"sqlite:///{path}", clock=lambda: 0.0).close()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_version_1_database_is_upgraded_in_place_keeping_its_rows(db_url):
    url = db_url
    engine = create_engine(url)
    with engine.begin() as connection:  # what release 1 created, with one workload in it
        from jupyter_hetero.store.tables import SchemaVersionRow

        SchemaVersionRow.__table__.create(connection)
        MIGRATIONS[0][1](connection)
        connection.execute(text("INSERT INTO schema_version VALUES (1, 0)"))
        connection.execute(text(
            'INSERT INTO workloads (kind, tenant, "user", template, queue, request, spec, state, held_cpu_milli,'
            ' held_memory_mib, held_device_milli, attempts, created_at, updated_at)'
            " VALUES ('job', 'vision', 'ada', 'training', 'training', '{}', '{}', 'queued', 0, 0, 0, 0, 1, 1)"
        ))
    with engine.begin() as connection:
        assert migrate(connection, now=2.0) == [version for version, _step in MIGRATIONS if version > 1]
    engine.dispose()
    repository = Repository(url, clock=lambda: 3.0)
    with repository.session() as session:
        from jupyter_hetero.store.tables import WorkloadRow

        row = session.get(WorkloadRow, 1)
        assert (row.user, row.state, row.priority_boost, row.escalated, row.not_before) == ("ada", "queued", 0, False, None)
    repository.close()


def test_version_3_counts_why_earlier_attempts_ended(db_url):
    url = db_url
    engine = create_engine(url)
    with engine.begin() as connection:  # what release 2 left: a workload whose attempts ended three ways
        from jupyter_hetero.store.tables import SchemaVersionRow

        SchemaVersionRow.__table__.create(connection)
        for version, step in MIGRATIONS[:2]:
            step(connection)
            connection.execute(text("INSERT INTO schema_version VALUES (:v, 0)"), {"v": version})
        connection.execute(text(
            'INSERT INTO workloads (kind, tenant, "user", template, queue, request, spec, state, held_cpu_milli,'
            ' held_memory_mib, held_device_milli, attempts, created_at, updated_at)'
            " VALUES ('job', 'vision', 'ada', 'training', 'training', '{}', '{}', 'queued', 0, 0, 0, 4, 1, 1)"
        ))
        for number, outcome in enumerate(["preempted", "failed", "lost", "preempted"], 1):
            connection.execute(text(
                "INSERT INTO attempts (workload_id, number, node, placement, processes, started_at, ended_at, outcome,"
                " log_path, metrics) VALUES (1, :n, 'n1', '{}', '[]', :n, :ended, :outcome, 'log', '{}')"
            ), {"n": number, "ended": number + 0.5, "outcome": outcome})
    with engine.begin() as connection:
        assert migrate(connection, now=2.0) == [version for version, _step in MIGRATIONS[2:]]
    engine.dispose()
    repository = Repository(url, clock=lambda: 3.0)
    row = repository.workload(1)
    assert (row.failures, row.preemptions, row.node_losses, row.preempted_at) == (1, 2, 1, [1.5, 4.5])
    repository.close()


def test_version_10_renames_stored_device_metrics_node_states_onboarding_states_and_node_events(db_url):
    engine = create_engine(db_url)
    with engine.begin() as connection:  # what release 9 left, written in the old words
        from jupyter_hetero.store.tables import SchemaVersionRow

        SchemaVersionRow.__table__.create(connection)
        for version, step in MIGRATIONS[:9]:
            step(connection)
            connection.execute(text("INSERT INTO schema_version VALUES (:v, 0)"), {"v": version})
        connection.execute(text(
            'INSERT INTO workloads (kind, tenant, "user", template, queue, request, spec, state, held_cpu_milli,'
            ' held_memory_mib, held_device_milli, attempts, created_at, updated_at)'
            " VALUES ('job', 'vision', 'ada', 'training', 'training', '{}', '{}', 'admitted', 0, 0, 0, 2, 1, 1)"
        ))
        for number, metrics in enumerate(['{"peak_rss_mib": 5, "gpu_util_pct_mean": 87.5, "gpu_memory_peak_mib": 2048}',
                                          '{"peak_rss_mib": 6, "device_note": "no exporter"}'], 1):
            connection.execute(text(
                "INSERT INTO attempts (workload_id, number, node, placement, processes, started_at, ended_at, outcome,"
                " log_path, metrics) VALUES (1, :n, 'n1', '{}', '[]', :n, :n, 'succeeded', 'log', :metrics)"
            ), {"n": number, "metrics": metrics})
        for name, state in [("n1", "admitted"), ("n2", "pending"), ("n3", "cordoned"), ("n4", "lost")]:
            connection.execute(text(
                "INSERT INTO nodes (name, source, emulated, flavor, state, capability, first_seen, last_seen)"
                " VALUES (:name, 'emulated', :false, 't4', :state, '{}', 1, 1)"
            ), {"name": name, "state": state, "false": False})
        for name, state in [("n1", "admitted"), ("n2", "pending"), ("n3", "verifying"), ("n4", "rejected")]:
            connection.execute(text(
                "INSERT INTO onboarding (kind, name, state, steps, by, updated_at) VALUES ('node', :name, :state, '[]',"
                " 'server', 1)"
            ), {"name": name, "state": state})
        for kind in ("node-registered", "node-cordoned", "node-admitted"):
            connection.execute(text("INSERT INTO events (node, at, type, data) VALUES ('n1', 1, :kind, '{}')"),
                               {"kind": kind})
    with engine.begin() as connection:
        assert migrate(connection, now=2.0) == [version for version, _step in MIGRATIONS if version >= 10]
    engine.dispose()
    repository = Repository(db_url, clock=lambda: 3.0)
    with repository.session() as session:
        from jupyter_hetero.store.tables import AttemptRow

        assert [row.metrics for row in session.query(AttemptRow).order_by(AttemptRow.number)] == [
            {"peak_rss_mib": 5, "device_util_pct_mean": 87.5, "device_memory_peak_mib": 2048},
            {"peak_rss_mib": 6, "device_note": "no exporter"}]
    assert _states_by_name(repository.nodes()) == {"n1": "ready", "n2": "onboarding", "n3": "cordoned", "n4": "lost"}
    assert _states_by_name(repository.onboarding("node")) == {"n1": "accepted", "n2": "requested", "n3": "verifying",
                                                         "n4": "rejected"}
    assert [event.type for event in repository.events(node="n1")] == ["node-registered", "node-cordoned", "node-ready"]
    assert repository.workload(1).state == "admitted"  # a workload's admission is admission: kept
    repository.close()


def _states_by_name(rows) -> dict[str, str]:
    return {row.name: row.state for row in rows}


def test_reopening_applies_nothing(repo, db_url):
    again = Repository(db_url, clock=lambda: 0.0)
    assert again.migrations_applied == []
    again.close()


def test_a_database_from_a_newer_release_is_refused(repo, db_url):
    _execute(db_url, f"INSERT INTO schema_version (version, applied_at) VALUES ({SCHEMA_VERSION + 1}, 0)")
    with pytest.raises(SchemaTooNew, match="newer"):
        Repository(db_url, clock=lambda: 0.0)


def test_recording_nodes_keeps_first_seen_and_the_state_unless_told(repo):
    node = {"name": "n1", "source": "emulated", "emulated": True, "flavor": "t4"}
    repo.record_nodes([{**node, "capability": {"a": 1}, "state": "lost"}], [])
    row = repo.record_nodes([{**node, "capability": {"a": 2}}], [{"type": "x", "node": "n1", "reason": "r"}])["n1"]
    assert row.state == "lost"
    assert row.first_seen < row.last_seen
    assert [n.capability for n in repo.nodes()] == [{"a": 2}]
    assert [e.type for e in repo.events(node="n1")] == ["x"]
    assert repo.record_nodes([{**node, "capability": {"a": 2}, "state": "cordoned"}], [])["n1"].state == "cordoned"


def test_events_are_appended_in_order(repo):
    repo.append_event(type="node-registered", node="n1", reason="first")
    repo.append_event(type="node-lost", node="n1", reason="second")
    repo.append_event(type="other", node="n2")
    assert [e.reason for e in repo.events(node="n1")] == ["first", "second"]


def test_the_audit_chain_detects_an_edited_row_and_a_deleted_one(repo, db_url):
    for action in ("catalog.reload", "tenant.quota", "node.admit", "workload.preempt"):
        repo.record_audit(actor="root", action=action, target="x", outcome="allowed", detail={"n": 1, "at": 0.1})
    assert repo.verify_audit() == (4, None)
    _execute(db_url, "UPDATE audit SET outcome='denied' WHERE id=2")
    assert repo.verify_audit() == (2, (2, "entry 2 was changed after it was written: it no longer matches its hash"))
    _execute(db_url, "UPDATE audit SET outcome='allowed' WHERE id=2")  # put back: intact again
    assert repo.verify_audit() == (4, None)
    _execute(db_url, "DELETE FROM audit WHERE id=3")
    assert repo.verify_audit() == (3, (4, "entry 4 does not follow entry 2: an entry between them was deleted or "
                                          "rewritten"))
    _execute(db_url, "DELETE FROM audit WHERE id=1")
    assert repo.verify_audit()[1] == (2, "entry 2 does not follow the start of the log: an entry between them was "
                                         "deleted or rewritten")


def test_audit_entries_filter_by_actor_action_prefix_outcome_time_and_page(repo):
    for actor, action, outcome in (("root", "workload.preempt", "allowed"), ("ann", "workload.preempt", "denied"),
                                   ("root", "node.remove", "allowed"), ("root", "workload.cancel", "allowed")):
        repo.record_audit(actor=actor, action=action, target=f"{action.split('.')[0]}/1", outcome=outcome)
    assert [r.id for r in repo.audit_entries(action="workload.")] == [1, 2, 4]
    assert [r.id for r in repo.audit_entries(action="workload")] == []  # not a prefix without its dot
    assert [r.id for r in repo.audit_entries(actor="root", outcome="allowed", target="workload/")] == [1, 4]
    assert [r.id for r in repo.audit_entries(after=2, limit=1)] == [3]
    assert [r.id for r in repo.audit_entries(action="100%_.")] == []  # LIKE's wildcards are taken as text


def test_on_postgresql_a_writer_waits_at_most_the_lock_timeout(postgres_url):
    repository = Repository(postgres_url, clock=lambda: 0.0)
    with repository.engine.connect() as connection:
        assert connection.execute(text("SHOW lock_timeout")).scalar() == "10s"
    repository.close()
