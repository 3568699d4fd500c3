"""Schema versions, applied in order at start-up; each step runs once per database.

1: initial; 2: attempts and lifecycle columns; 3: failures, preemptions and node losses counted apart;
4: workload credentials; 5: services; 6: alerts; 7: onboarding;
8: a submission's Idempotency-Key, unique per user; 9: a service's name unique per tenant among its active
services (a deleted one's name is free again); 10: one word per concept in stored values (attempt metrics
``device_*``, node states ``ready``/``onboarding``, onboarding states ``requested``/``accepted``, node event
``node-ready``); 11: metric samples, each workload's figures over time; 12: recurring schedules."""

from __future__ import annotations

import json
from collections.abc import Callable

from sqlalchemy import Connection, inspect, select, text

from .tables import Base, SchemaVersionRow

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SchemaTooNew", "migrate"]


class SchemaTooNew(RuntimeError):
    """The database was written by a newer jupyter-hetero; refusing to guess its meaning."""


# Version 1's tables as they were released; later columns arrive through later steps. The
# placeholders are what SQLite and PostgreSQL spell differently (see _dialect_words).
_V1_WORKLOADS = """
CREATE TABLE workloads (
    id {serial}, kind VARCHAR(16) NOT NULL, name VARCHAR(253),
    tenant VARCHAR(63) NOT NULL, {user} VARCHAR(253) NOT NULL, template VARCHAR(63) NOT NULL,
    queue VARCHAR(63) NOT NULL, request JSON NOT NULL, spec JSON NOT NULL, state VARCHAR(16) NOT NULL,
    reason TEXT, flavor VARCHAR(63), node VARCHAR(253), placement JSON, held_cpu_milli INTEGER NOT NULL,
    held_memory_mib INTEGER NOT NULL, held_device_milli INTEGER NOT NULL, attempts INTEGER NOT NULL,
    created_at FLOAT NOT NULL, updated_at FLOAT NOT NULL, admitted_at FLOAT, started_at FLOAT, finished_at FLOAT
)"""


def _dialect_words(connection: Connection) -> dict[str, str]:
    if connection.dialect.name == "sqlite":
        return {"serial": "INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT", "user": "user", "false": "0"}
    # PostgreSQL: "user" is reserved, and a boolean's default is not an integer.
    return {"serial": "SERIAL PRIMARY KEY", "user": '"user"', "false": "FALSE"}


def _v1_initial(connection: Connection) -> None:
    connection.execute(text(_V1_WORKLOADS.format(**_dialect_words(connection))))
    connection.execute(text("CREATE INDEX ix_workloads_tenant ON workloads (tenant)"))
    connection.execute(text('CREATE INDEX ix_workloads_user ON workloads ("user")'))
    connection.execute(text("CREATE INDEX ix_workloads_state_queue ON workloads (state, queue)"))
    Base.metadata.create_all(connection, tables=[Base.metadata.tables[name] for name in ("nodes", "events", "audit")])


_V2_WORKLOAD_COLUMNS = (
    "priority_boost INTEGER NOT NULL DEFAULT 0",
    "escalated BOOLEAN NOT NULL DEFAULT {false}",
    "not_before FLOAT",
    "time_limit_s FLOAT",
    "runtime_s FLOAT",
    "preempting_until FLOAT",
    "stopping VARCHAR(16)",
    "preempted_for INTEGER",
    "checkpoint_at FLOAT",
    "idle BOOLEAN NOT NULL DEFAULT {false}",
)


def _add_workload_columns(connection: Connection, columns: tuple[str, ...]) -> None:
    existing = {column["name"] for column in inspect(connection).get_columns("workloads")}
    for column in columns:
        if column.split()[0] not in existing:
            connection.execute(text(f"ALTER TABLE workloads ADD COLUMN {column.format(**_dialect_words(connection))}"))


def _v2_attempts_and_lifecycle(connection: Connection) -> None:
    _add_workload_columns(connection, _V2_WORKLOAD_COLUMNS)
    Base.metadata.tables["attempts"].create(connection, checkfirst=True)


_V3_WORKLOAD_COLUMNS = (
    "failures INTEGER NOT NULL DEFAULT 0",
    "preemptions INTEGER NOT NULL DEFAULT 0",
    "node_losses INTEGER NOT NULL DEFAULT 0",
    "preempted_at JSON",
)
# How an attempt ended -> the count it adds to (succeeded and cancelled attempts add to none).
_V3_COUNTED = {"failed": "failures", "preempted": "preemptions", "lost": "node_losses"}


def _v3_attempt_outcome_counts(connection: Connection) -> None:
    """Separate counts of failures, preemptions and node losses, filled in from the attempts so far."""
    _add_workload_columns(connection, _V3_WORKLOAD_COLUMNS)
    counts: dict[int, dict[str, int]] = {}
    preempted: dict[int, list[float]] = {}
    for workload_id, outcome, ended_at in connection.execute(
            text("SELECT workload_id, outcome, ended_at FROM attempts ORDER BY workload_id, number")):
        if outcome in _V3_COUNTED:
            slot = counts.setdefault(workload_id, {})
            slot[_V3_COUNTED[outcome]] = slot.get(_V3_COUNTED[outcome], 0) + 1
        if outcome == "preempted" and ended_at is not None:
            preempted.setdefault(workload_id, []).append(ended_at)
    for workload_id, slot in counts.items():
        assignments = ", ".join(f"{name} = :{name}" for name in slot)
        connection.execute(text(f"UPDATE workloads SET {assignments} WHERE id = :id"), {**slot, "id": workload_id})
    for workload_id, times in preempted.items():
        connection.execute(text("UPDATE workloads SET preempted_at = :times WHERE id = :id"),
                           {"times": json.dumps(times), "id": workload_id})


def _v4_credentials(connection: Connection) -> None:
    Base.metadata.tables["credentials"].create(connection, checkfirst=True)


# The services table as release 5 created it, names unique across tenants (schema 9 scopes them per tenant).
_SERVICES_COLUMNS = """
    id {serial}, name VARCHAR(63) NOT NULL, tenant VARCHAR(63) NOT NULL, {user} VARCHAR(253) NOT NULL,
    template VARCHAR(63) NOT NULL, queue VARCHAR(63) NOT NULL, spec JSON NOT NULL, replicas INTEGER NOT NULL,
    min_replicas INTEGER NOT NULL, max_replicas INTEGER NOT NULL, revision INTEGER NOT NULL, rollout JSON,
    revisions JSON NOT NULL, state VARCHAR(16) NOT NULL, created_at FLOAT NOT NULL, updated_at FLOAT NOT NULL"""
_V5_SERVICES = "CREATE TABLE services (" + _SERVICES_COLUMNS + ", UNIQUE (name))"


def _v5_services(connection: Connection) -> None:
    connection.execute(text(_V5_SERVICES.format(**_dialect_words(connection))))
    connection.execute(text("CREATE INDEX ix_services_tenant ON services (tenant)"))


def _v6_alerts(connection: Connection) -> None:
    Base.metadata.tables["alerts"].create(connection, checkfirst=True)


def _v7_onboarding(connection: Connection) -> None:
    Base.metadata.tables["onboarding"].create(connection, checkfirst=True)


def _v8_request_keys(connection: Connection) -> None:
    _add_workload_columns(connection, ("request_key VARCHAR(128)",))
    # Unique per user; rows without a key (NULL) never collide, in SQLite as in PostgreSQL.
    connection.execute(text('CREATE UNIQUE INDEX ix_workloads_user_request_key ON workloads ("user", request_key)'))


def _v9_service_names_per_tenant(connection: Connection) -> None:
    """Drop the global unique name; a name is unique among a tenant's active services. Every row stays."""
    if connection.dialect.name == "sqlite":
        # SQLite cannot drop a table's UNIQUE constraint: the table is built again and its rows copied over.
        columns = ", ".join(f'"{column["name"]}"' for column in inspect(connection).get_columns("services"))
        connection.execute(text("ALTER TABLE services RENAME TO services_v8"))
        connection.execute(text("DROP INDEX ix_services_tenant"))
        connection.execute(text(("CREATE TABLE services (" + _SERVICES_COLUMNS + ")").format(
            **_dialect_words(connection))))
        connection.execute(text(f"INSERT INTO services ({columns}) SELECT {columns} FROM services_v8"))
        connection.execute(text("DROP TABLE services_v8"))
        connection.execute(text("CREATE INDEX ix_services_tenant ON services (tenant)"))
    else:
        for constraint in inspect(connection).get_unique_constraints("services"):
            if constraint["column_names"] == ["name"]:
                connection.execute(text(f'ALTER TABLE services DROP CONSTRAINT "{constraint["name"]}"'))
    connection.execute(text("CREATE UNIQUE INDEX ix_services_tenant_name_active ON services (tenant, name) "
                            "WHERE state = 'active'"))


# Schema 10's renames (issue 35): the old stored value -> the new one.
_V10_METRICS = {"gpu_util_pct_mean": "device_util_pct_mean", "gpu_memory_peak_mib": "device_memory_peak_mib"}
_V10_VALUES = (
    ("nodes", "state", {"admitted": "ready", "pending": "onboarding"}),
    ("onboarding", "state", {"pending": "requested", "admitted": "accepted"}),
    ("events", "type", {"node-admitted": "node-ready"}),
)


def _v10_one_word_per_concept(connection: Connection) -> None:
    """Rename stored values that meant two things: device metrics named GPU, a node's states named as admission."""
    for table, column, renames in _V10_VALUES:
        for old, new in renames.items():
            connection.execute(text(f"UPDATE {table} SET {column} = :new WHERE {column} = :old"),
                               {"new": new, "old": old})
    # JSON is text in SQLite and json in PostgreSQL: both compare as text once cast, and read back as text or a dict.
    for attempt_id, metrics in connection.execute(
            text("SELECT id, metrics FROM attempts WHERE CAST(metrics AS TEXT) LIKE '%gpu_%'")).all():
        metrics = json.loads(metrics) if isinstance(metrics, str) else metrics
        if isinstance(metrics, dict) and _V10_METRICS.keys() & metrics.keys():
            renamed = {_V10_METRICS.get(key, key): value for key, value in metrics.items()}
            connection.execute(text("UPDATE attempts SET metrics = :metrics WHERE id = :id"),
                               {"metrics": json.dumps(renamed), "id": attempt_id})


def _v11_metric_samples(connection: Connection) -> None:
    Base.metadata.tables["metric_samples"].create(connection, checkfirst=True)


def _v12_schedules(connection: Connection) -> None:
    Base.metadata.tables["schedules"].create(connection, checkfirst=True)


# (version, step). A new schema appends a step; released steps are never edited.
MIGRATIONS: list[tuple[int, Callable[[Connection], None]]] = [
    (1, _v1_initial), (2, _v2_attempts_and_lifecycle), (3, _v3_attempt_outcome_counts), (4, _v4_credentials),
    (5, _v5_services), (6, _v6_alerts), (7, _v7_onboarding), (8, _v8_request_keys),
    (9, _v9_service_names_per_tenant), (10, _v10_one_word_per_concept),
    (11, _v11_metric_samples), (12, _v12_schedules),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


def migrate(connection: Connection, now: float) -> list[int]:
    """Bring the schema up to :data:`SCHEMA_VERSION`; returns the versions applied."""
    SchemaVersionRow.__table__.create(connection, checkfirst=True)
    current = connection.execute(select(SchemaVersionRow.version).order_by(SchemaVersionRow.version.desc())).scalar()
    current = current or 0
    if current > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"database schema version {current} is newer than this jupyter-hetero understands ({SCHEMA_VERSION}); "
            "upgrade jupyter-hetero or point c.HeteroApp.db_url at another database"
        )
    applied = []
    for version, step in MIGRATIONS:
        if version > current:
            step(connection)
            connection.execute(SchemaVersionRow.__table__.insert().values(version=version, applied_at=now))
            applied.append(version)
    return applied


def table_names(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())
