"""The store's connection and transactions: the engine per database, and one session per transaction.

>>> store = Sessions("sqlite:///:memory:", clock=lambda: 0.0)
>>> with store.session(write=True) as session:   # BEGIN IMMEDIATE on SQLite, the advisory lock on PostgreSQL
...     pass
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, event, func, make_url, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker

from .audit_seal import AuditSeal
from .migrations import migrate

__all__ = ["Clock", "Sessions", "default_db_url", "make_engine"]

Clock = Callable[[], float]

# Execution option naming how a SQLite transaction begins ("IMMEDIATE" for writes that read first).
_BEGIN = "hetero_sqlite_begin"
# The transaction-scoped advisory lock every PostgreSQL write transaction holds ("hetero" in ASCII).
_WRITE_LOCK = 0x68657465726F


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # WAL lets the API read while the scheduler writes; NORMAL sync keeps every committed
    # transaction across a process crash (only a power loss could drop the last ones).
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()
    dbapi_connection.isolation_level = None  # transactions begin in _sqlite_begin, not implicitly


def _sqlite_begin(connection) -> None:
    # The driver's own transaction handling is off (see _sqlite_pragmas), so every transaction
    # begins here: reads see one snapshot, and writes that read first (IMMEDIATE) hold the write
    # lock from their first read, so a tick's thread and a request cannot interleave a row's
    # read and write (the busy timeout makes the other wait).
    connection.exec_driver_sql(f"BEGIN {connection.get_execution_options().get(_BEGIN, '')}".rstrip())


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite files get WAL and their folder is created, PostgreSQL a lock timeout."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    if url.startswith("postgresql") and "options" not in make_url(url).query:
        # Like SQLite's busy timeout: a writer stuck behind another for 10 s fails rather than hangs
        # (a URL's own ?options=... is left as it is).
        return create_engine(url, pool_pre_ping=True, connect_args={"options": "-c lock_timeout=10s"})
    return create_engine(url, pool_pre_ping=True)


def _hold_write_lock(connection: Connection | Session) -> None:
    # PostgreSQL's counterpart of SQLite's BEGIN IMMEDIATE: one writer at a time, from its first read
    # to its commit. Row locks (SELECT ... FOR UPDATE) would not do: two audit appends would both
    # lock the same last row and fork the chain, and the change feed needs event ids to commit in
    # the order they are taken. The lock is released by COMMIT after the rows became visible.
    connection.execute(select(func.pg_advisory_xact_lock(_WRITE_LOCK)))


class Sessions:
    """The engine and its sessions, the schema migrated on opening; every read or write is one :meth:`session`."""

    def __init__(self, url: str, clock: Clock, *, seal: AuditSeal | None = None):
        self.url = url
        self.clock = clock
        self.seal = seal  # None: entries get an unkeyed hash, as before keying began
        self.engine = make_engine(url)
        self._locks_writes = self.engine.dialect.name == "postgresql"
        # Reads see one snapshot, as on SQLite (PostgreSQL's default gives each statement its own).
        reads = {"isolation_level": "REPEATABLE READ"} if self._locks_writes else {}
        self._sessions = sessionmaker(self.engine, expire_on_commit=False, execution_options=reads)
        self._write_sessions = sessionmaker(self.engine, expire_on_commit=False,
                                            execution_options={_BEGIN: "IMMEDIATE"})
        # Two processes starting on one new database apply each step once.
        with self.engine.execution_options(**{_BEGIN: "IMMEDIATE"}).begin() as connection:
            if self._locks_writes:
                _hold_write_lock(connection)
            self.migrations_applied = migrate(connection, clock())

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def session(self, *, write: bool = False) -> Iterator[Session]:
        """One transaction; ``write=True`` for one that reads rows and then changes them."""
        with (self._write_sessions if write else self._sessions).begin() as session:
            if write and self._locks_writes:
                _hold_write_lock(session)
            yield session


def default_db_url() -> str:
    """Where a server keeps its store when nothing is configured: a SQLite file in Jupyter's data directory."""
    from jupyter_core.paths import jupyter_data_dir

    return f"sqlite:///{Path(jupyter_data_dir()) / 'hetero' / 'hetero.sqlite'}"

