"""Schema versions, applied in order at start-up; each step runs once per database."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, inspect, select

from .tables import Base, SchemaVersionRow

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SchemaTooNew", "migrate"]


class SchemaTooNew(RuntimeError):
    """The database was written by a newer jupyter-hetero; refusing to guess its meaning."""


def _v1_initial(connection: Connection) -> None:
    Base.metadata.create_all(connection, tables=[
        Base.metadata.tables[name] for name in ("nodes", "workloads", "events", "audit")
    ])


# (version, step). A new schema appends a step; released steps are never edited.
MIGRATIONS: list[tuple[int, Callable[[Connection], None]]] = [(1, _v1_initial)]
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
