"""The repository: the only code that opens database sessions.

>>> repo = Repository("sqlite:///:memory:", clock=lambda: 0.0)
>>> repo.record_audit(actor="alice", action="catalog.reload", target="catalog", outcome="allowed").id
1
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, func, make_url, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker

from .audit_seal import AuditSeal, read_anchors, sha256_hex
from .migrations import migrate
from .tables import AlertRow, AttemptRow, AuditRow, EventRow, NodeRow, OnboardingRow, ServiceRow, WorkloadRow

__all__ = ["ACTIVE_STATES", "INADMISSIBLE", "PENDING_STATES", "QUEUED_STATES", "Repository", "default_db_url"]

Clock = Callable[[], float]

# Waiting states the scheduler hands the engine every cycle.
QUEUED_STATES = ("queued", "preempted")
# Waiting, but no node of the inventory could ever hold it: re-examined only when the inventory changes.
INADMISSIBLE = "inadmissible"
# Every waiting state: counted as pending, cancelled at once, shown with position and blockers.
PENDING_STATES = (*QUEUED_STATES, INADMISSIBLE)
# States in which a workload holds capacity on a node.
ACTIVE_STATES = ("admitted", "starting", "running")
_GENESIS = "0" * 64
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


class Repository:
    """Reads and writes the store; every method is one transaction."""

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

    # -- nodes -------------------------------------------------------------------------------

    def record_nodes(self, nodes: list[dict[str, Any]], events: list[dict[str, Any]]) -> dict[str, NodeRow]:
        """Record many nodes as seen now, and their events, in one transaction (a cluster's nodes change by the
        thousand when a labeller restarts). Each node: ``name``, ``source``, ``emulated``, ``flavor``,
        ``capability`` and, where its source says, ``state``; a known node keeps its state otherwise."""
        now = self.clock()
        written = {}
        with self.session(write=True) as session:
            for node in nodes:
                row = session.get(NodeRow, node["name"])
                if row is None:
                    row = NodeRow(name=node["name"], first_seen=now, state=node.get("state") or "admitted")
                    session.add(row)
                row.source, row.emulated, row.flavor = node["source"], node["emulated"], node["flavor"]
                row.capability, row.last_seen = node["capability"], now
                if node.get("state"):
                    row.state = node["state"]
                written[row.name] = row
            session.add_all(EventRow(workload_id=None, node=event["node"], at=now, type=event["type"],
                                     reason=event["reason"], data=event.get("data") or {}) for event in events)
        return written

    def nodes(self) -> list[NodeRow]:
        with self.session() as session:
            return list(session.scalars(select(NodeRow).order_by(NodeRow.name)))

    def set_node_state(self, name: str, state: str) -> NodeRow | None:
        with self.session(write=True) as session:
            row = session.get(NodeRow, name)
            if row is not None:
                row.state = state
            return row

    # -- workloads ---------------------------------------------------------------------------

    def add_workload(self, row: WorkloadRow, *, reason: str, data: dict[str, Any] | None = None) -> WorkloadRow:
        """Insert a workload and its `submitted` event in one transaction: once this returns, it is durable.

        A row whose ``request_key`` its user stored before is not inserted: the stored row is returned instead
        (write transactions are serial, so two tries of one submission cannot both insert)."""
        now = self.clock()
        with self.session(write=True) as session:
            if row.request_key is not None:
                stored = session.scalars(select(WorkloadRow).where(
                    WorkloadRow.user == row.user, WorkloadRow.request_key == row.request_key)).first()
                if stored is not None:
                    return stored
            row.created_at = row.updated_at = now
            session.add(row)
            session.flush()
            session.add(EventRow(workload_id=row.id, at=now, type="submitted", reason=reason, data=data or {}))
            return row

    def workload(self, workload_id: int) -> WorkloadRow | None:
        with self.session() as session:
            return session.get(WorkloadRow, workload_id)

    def workloads(self, *, tenant: str | None = None, user: str | None = None, queue: str | None = None,
                  states: tuple[str, ...] | None = None, kind: str | None = None,
                  limit: int | None = None) -> list[WorkloadRow]:
        query = select(WorkloadRow).order_by(WorkloadRow.id.desc() if limit else WorkloadRow.id)
        for column, value in ((WorkloadRow.tenant, tenant), (WorkloadRow.user, user), (WorkloadRow.queue, queue),
                              (WorkloadRow.kind, kind)):
            if value is not None:
                query = query.where(column == value)
        if states is not None:
            query = query.where(WorkloadRow.state.in_(states))
        if limit:
            query = query.limit(limit)
        with self.session() as session:
            return list(session.scalars(query))

    def workload_changes(self, after: int | None, states: tuple[str, ...]) -> tuple[int, list[WorkloadRow]]:
        """The change feed: ``(cursor, rows)``, the workloads changed since event ``after`` (every
        workload in ``states`` when ``after`` is None), in any state; pass ``cursor`` as the next ``after``.

        Every workload write records an event in the same transaction, so the events table is the
        feed. Events are written only in write transactions, one at a time (SQLite's write lock,
        PostgreSQL's advisory lock), so event ids commit in the order they are taken: no id below
        the cursor can appear later. Cursor and rows come from one snapshot."""
        with self.session() as session:
            cursor = session.scalar(select(func.max(EventRow.id))) or 0
            if after is None:
                query = select(WorkloadRow).where(WorkloadRow.state.in_(states))
            elif cursor <= after:
                return cursor, []
            else:
                changed = select(EventRow.workload_id).where(EventRow.id > after, EventRow.workload_id.is_not(None))
                query = select(WorkloadRow).where(WorkloadRow.id.in_(changed))
            return max(cursor, after or 0), list(session.scalars(query.order_by(WorkloadRow.id)))

    def update_workload(self, workload_id: int, *, event: str, reason: str | None = None,
                        data: dict[str, Any] | None = None, **fields: Any) -> WorkloadRow:
        """Change a workload and record why, in one transaction: every transition is an event."""
        return self._update_workload(workload_id, None, event, reason, data, fields)

    def update_workload_if(self, workload_id: int, when: Callable[[WorkloadRow], bool] | None, *, event: str,
                           reason: str | None = None, data: dict[str, Any] | None = None,
                           said_first: Sequence[tuple[str, str | None]] = (), **fields: Any) -> WorkloadRow | None:
        """:meth:`update_workload` if ``when(row)`` holds for the row as this same transaction reads it
        (always when ``when`` is None), else None and nothing written:

            repo.update_workload_if(7, lambda row: row.stopping != "cancel", event="time-limit", stopping="time-limit")

        Request handlers and the scheduler's tick write the same rows from two threads; a decision made
        on an earlier read (stop it, admit it, requeue it) must not overwrite what the other wrote
        since, above all a cancel.

        ``said_first`` are events (type, reason) recorded just before ``event``, in the same transaction: a
        preempted attempt's requeue says ``preempted`` and then ``requeued``, and no reader ever sees the one
        without the other (a preempted row still holding its devices)."""
        return self._update_workload(workload_id, when, event, reason, data, fields, said_first)

    def _update_workload(self, workload_id: int, when: Callable[[WorkloadRow], bool] | None, event: str,
                         reason: str | None, data: dict[str, Any] | None, fields: dict[str, Any],
                         said_first: Sequence[tuple[str, str | None]] = ()) -> WorkloadRow | None:
        now = self.clock()
        with self.session(write=True) as session:
            row = session.get(WorkloadRow, workload_id)
            if row is None:
                raise KeyError(workload_id)
            if when is not None and not when(row):
                return None
            stopping = row.stopping
            for name, value in fields.items():
                setattr(row, name, value)
            # The workload's reason is why it is in its current state; while a stop is under way
            # (a cancel that arrived as the tick started the job), the stop's reason stands.
            if "stopping" in fields or ("state" in fields and stopping is None):
                row.reason = reason
            row.updated_at = now
            session.add_all([EventRow(workload_id=workload_id, at=now, type=said, reason=why, data={})
                             for said, why in said_first])
            session.add(EventRow(workload_id=workload_id, at=now, type=event, reason=reason, data=data or {}))
            return row

    def add_attempt(self, row: AttemptRow) -> AttemptRow:
        with self.session(write=True) as session:
            session.add(row)
            return row

    def update_attempt(self, attempt_id: int, **fields: Any) -> AttemptRow:
        with self.session(write=True) as session:
            row = session.get(AttemptRow, attempt_id)
            for name, value in fields.items():
                setattr(row, name, value)
            return row

    def attempts(self, workload_id: int) -> list[AttemptRow]:
        with self.session() as session:
            return self._attempts(session, workload_id)

    def workload_with_attempts(self, workload_id: int) -> tuple[WorkloadRow | None, list[AttemptRow]]:
        """A workload and its attempts, read in one transaction (what describing it needs)."""
        with self.session() as session:
            row = session.get(WorkloadRow, workload_id)
            return row, self._attempts(session, workload_id) if row is not None else []

    @staticmethod
    def _attempts(session: Session, workload_id: int) -> list[AttemptRow]:
        return list(session.scalars(
            select(AttemptRow).where(AttemptRow.workload_id == workload_id).order_by(AttemptRow.number)
        ))

    # -- workload aggregates -----------------------------------------------------------------

    def count_by_queue(self, state: str) -> dict[str, int]:
        """How many workloads are in ``state``, per queue (one index-only query)."""
        query = select(WorkloadRow.queue, func.count()).where(WorkloadRow.state == state).group_by(WorkloadRow.queue)
        with self.session() as session:
            return {queue: count for queue, count in session.execute(query)}

    def waits(self, since: float) -> dict[str, list[float]]:
        """Per queue, seconds from submission to admission of workloads admitted since ``since``."""
        query = select(WorkloadRow.queue, WorkloadRow.created_at, WorkloadRow.admitted_at).where(
            WorkloadRow.admitted_at >= since)
        waits: dict[str, list[float]] = {}
        with self.session() as session:
            for queue, created, admitted in session.execute(query):
                waits.setdefault(queue, []).append(max(0.0, admitted - created))
        return waits

    def active_placements(self) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        """(kind, request, placement) of every workload holding capacity."""
        query = select(WorkloadRow.kind, WorkloadRow.request, WorkloadRow.placement).where(
            WorkloadRow.state.in_(ACTIVE_STATES), WorkloadRow.placement.is_not(None))
        with self.session() as session:
            return [tuple(row) for row in session.execute(query)]

    # -- events and audit ----------------------------------------------------------------------

    def append_event(self, *, type: str, reason: str | None = None, workload_id: int | None = None,
                     node: str | None = None, data: dict[str, Any] | None = None) -> EventRow:
        with self.session(write=True) as session:
            row = EventRow(workload_id=workload_id, node=node, at=self.clock(), type=type, reason=reason, data=data or {})
            session.add(row)
            return row

    def events(self, *, workload_id: int | None = None, node: str | None = None) -> list[EventRow]:
        query = select(EventRow).order_by(EventRow.id)
        if workload_id is not None:
            query = query.where(EventRow.workload_id == workload_id)
        if node is not None:
            query = query.where(EventRow.node == node)
        with self.session() as session:
            return list(session.scalars(query))

    def service_events(self, row: ServiceRow) -> list[EventRow]:
        """A service's own events (rollouts, canary verdicts with their figures, rollbacks, scaling), oldest first;
        not those of an earlier service of the same name (events from before schema 9 name no service id: they
        belong to the first service ever of that name, names being unique then)."""
        service_id = EventRow.data["service_id"].as_integer()
        first = self.first_service_id(row.name)
        mine = service_id == row.id
        if first == row.id:
            mine = mine | (service_id.is_(None) & (EventRow.data["service"].as_string() == row.name))
        query = select(EventRow).where(EventRow.workload_id.is_(None), mine).order_by(EventRow.id)
        with self.session() as session:
            return list(session.scalars(query))

    def first_service_id(self, name: str) -> int | None:
        """The first service ever of that name, any tenant: the one records from before schema 9 belong to."""
        with self.session() as session:
            return session.scalar(select(func.min(ServiceRow.id)).where(ServiceRow.name == name))

    # -- services ----------------------------------------------------------------------------

    def add_service(self, row: ServiceRow) -> ServiceRow:
        """Insert a service; a name active in its tenant already is an IntegrityError (the caller checked first)."""
        with self.session(write=True) as session:
            row.created_at = row.updated_at = self.clock()
            session.add(row)
            session.flush()
            return row

    def service(self, tenant: str, name: str) -> ServiceRow | None:
        """The tenant's active service of that name; with none, its latest deleted one (still described)."""
        query = (select(ServiceRow).where(ServiceRow.tenant == tenant, ServiceRow.name == name)
                 .order_by((ServiceRow.state == "active").desc(), ServiceRow.id.desc()).limit(1))
        with self.session() as session:
            return session.scalar(query)

    def service_by_id(self, service_id: int) -> ServiceRow | None:
        with self.session() as session:
            return session.get(ServiceRow, service_id)

    def services(self, *, tenant: str | None = None, state: str | None = "active") -> list[ServiceRow]:
        query = select(ServiceRow).order_by(ServiceRow.name, ServiceRow.tenant, ServiceRow.id)
        if tenant is not None:
            query = query.where(ServiceRow.tenant == tenant)
        if state is not None:
            query = query.where(ServiceRow.state == state)
        with self.session() as session:
            return list(session.scalars(query))

    def update_service(self, service_id: int, **fields: Any) -> ServiceRow:
        with self.session(write=True) as session:
            row = session.get(ServiceRow, service_id)
            if row is None:
                raise KeyError(service_id)
            for key, value in fields.items():
                setattr(row, key, value)
            row.updated_at = self.clock()
            return row

    def attempts_between(self, since: float, until: float) -> list[tuple]:
        """Every attempt that ran within [since, until): (tenant, user, queue, template, placement, request,
        started_at, ended_at, metrics)."""
        query = (select(WorkloadRow.tenant, WorkloadRow.user, WorkloadRow.queue, WorkloadRow.template,
                        AttemptRow.placement, WorkloadRow.request, AttemptRow.started_at, AttemptRow.ended_at,
                        AttemptRow.metrics)
                 .join(WorkloadRow, AttemptRow.workload_id == WorkloadRow.id)
                 .where(AttemptRow.started_at < until,
                        (AttemptRow.ended_at.is_(None)) | (AttemptRow.ended_at > since)))
        with self.session() as session:
            return [tuple(row) for row in session.execute(query)]

    def recorded_workloads(self, since: float, kinds: tuple[str, ...] = ("job",)) -> list[tuple]:
        """Workloads submitted since ``since``: (id, tenant, queue, template, request, created_at, admitted_at, seconds
        run over its attempts so far), oldest first; what capacity advice replays."""
        run = (select(AttemptRow.workload_id, func.sum(func.coalesce(AttemptRow.ended_at, AttemptRow.started_at)
                                                       - AttemptRow.started_at).label("run_s"))
               .group_by(AttemptRow.workload_id).subquery())
        query = (select(WorkloadRow.id, WorkloadRow.tenant, WorkloadRow.queue, WorkloadRow.template,
                        WorkloadRow.request, WorkloadRow.created_at, WorkloadRow.admitted_at, run.c.run_s)
                 .outerjoin(run, run.c.workload_id == WorkloadRow.id)
                 .where(WorkloadRow.created_at >= since, WorkloadRow.kind.in_(kinds))
                 .order_by(WorkloadRow.created_at))
        with self.session() as session:
            return [tuple(row) for row in session.execute(query)]

    def record_since(self, since: float) -> dict[str, list]:
        """What the acceptance report reads, in one snapshot: the workloads submitted since ``since``, their
        attempts, their ``started`` events (image, pods), the alerts fired since and every service."""
        with self.session() as session:
            workloads = list(session.scalars(select(WorkloadRow).where(WorkloadRow.created_at >= since)
                                             .order_by(WorkloadRow.id)))
            ids = [row.id for row in workloads]
            attempts = list(session.scalars(select(AttemptRow).where(AttemptRow.workload_id.in_(ids))
                                            .order_by(AttemptRow.id))) if ids else []
            started = list(session.scalars(select(EventRow).where(EventRow.workload_id.in_(ids),
                                                                   EventRow.type == "started"))) if ids else []
            alerts = list(session.scalars(select(AlertRow).where(AlertRow.fired_at >= since).order_by(AlertRow.id)))
            services = list(session.scalars(select(ServiceRow).order_by(ServiceRow.name)))
        return {"workloads": workloads, "attempts": attempts, "started": started, "alerts": alerts,
                "services": services}

    # -- onboarding --------------------------------------------------------------------------

    def onboarding(self, kind: str | None = None) -> list[OnboardingRow]:
        query = select(OnboardingRow).order_by(OnboardingRow.kind, OnboardingRow.name)
        if kind is not None:
            query = query.where(OnboardingRow.kind == kind)
        with self.session() as session:
            return list(session.scalars(query))

    def record_onboarding(self, kind: str, name: str, *, state: str, steps: list[dict[str, Any]],
                          failed_step: str | None, by: str) -> OnboardingRow:
        """Write a subject's checklist as it stands (one row per subject), with an event for each state it reaches."""
        now = self.clock()
        with self.session(write=True) as session:
            row = session.scalar(select(OnboardingRow).where(OnboardingRow.kind == kind, OnboardingRow.name == name))
            if row is None:
                row = OnboardingRow(kind=kind, name=name)
                session.add(row)
            changed = row.state != state
            row.state, row.steps, row.failed_step, row.by, row.updated_at = state, steps, failed_step, by, now
            if changed:
                reason = f"{kind} {name} {state}" + (f" at step {failed_step}" if failed_step else "")
                session.add(EventRow(at=now, type=f"onboarding-{state}", node=name if kind == "node" else None,
                                     reason=reason, data={"kind": kind, "name": name}))
            return row

    # -- alerts ------------------------------------------------------------------------------

    def oldest_pending(self) -> dict[str, tuple[float, int]]:
        """Per queue, when its longest-waiting workload was submitted, and that workload's id."""
        query = (select(WorkloadRow.queue, WorkloadRow.created_at, WorkloadRow.id)
                 .where(WorkloadRow.state.in_(PENDING_STATES)).order_by(WorkloadRow.created_at.desc()))
        with self.session() as session:
            return {queue: (created, workload) for queue, created, workload in session.execute(query)}

    def attempt_outcomes(self, since: float) -> list[tuple[str, str, float]]:
        """(queue, outcome, ended at) of every attempt that ended at or after ``since``."""
        query = (select(WorkloadRow.queue, AttemptRow.outcome, AttemptRow.ended_at)
                 .join(WorkloadRow, AttemptRow.workload_id == WorkloadRow.id)
                 .where(AttemptRow.ended_at >= since, AttemptRow.outcome.is_not(None)))
        with self.session() as session:
            return [tuple(row) for row in session.execute(query)]

    def alerts(self, *, state: str | None = None, limit: int = 200) -> list[AlertRow]:
        """Alerts, newest first."""
        query = select(AlertRow).order_by(AlertRow.id.desc()).limit(limit)
        if state is not None:
            query = query.where(AlertRow.state == state)
        with self.session() as session:
            return list(session.scalars(query))

    def fire_alert(self, row: AlertRow) -> AlertRow:
        with self.session(write=True) as session:
            session.add(row)
            session.flush()
            session.add(EventRow(at=row.fired_at, type="alert-firing", reason=row.message,
                                 data={"alert": row.id, "rule": row.rule, "subject": row.subject}))
            return row

    def resolve_alert(self, alert_id: int, at: float, message: str) -> AlertRow:
        with self.session(write=True) as session:
            row = session.get(AlertRow, alert_id)
            row.state, row.resolved_at = "resolved", at
            session.add(EventRow(at=at, type="alert-resolved", reason=message,
                                 data={"alert": row.id, "rule": row.rule, "subject": row.subject}))
            return row

    def record_delivery(self, alert_id: int, delivery: dict[str, Any]) -> None:
        with self.session(write=True) as session:
            row = session.get(AlertRow, alert_id)
            row.deliveries = [*row.deliveries, delivery]

    def record_audit(self, *, actor: str, action: str, target: str, outcome: str,
                     detail: dict[str, Any] | None = None) -> AuditRow:
        """Append to the audit chain; each row's hash (an HMAC with a seal) covers the previous one."""
        with self.session(write=True) as session:
            prev = session.scalars(select(AuditRow.hash).order_by(AuditRow.id.desc()).limit(1)).first() or _GENESIS
            row = AuditRow(at=self.clock(), actor=actor, action=action, target=target, outcome=outcome,
                           detail=detail or {}, prev_hash=prev)
            body = _audit_body(row)
            row.hash = self.seal.mac(body) if self.seal else sha256_hex(body)
            session.add(row)
            session.flush()  # the id, for the anchor
        if self.seal:  # once committed: an anchor ahead of the database would read as a truncation
            self.seal.anchor(row.id, row.hash)
        return row

    def seal_audit_chain(self) -> AuditRow | None:
        """With a seal, make sure the chain's head is sealed: a chain written before keying began gets an entry
        recording the switch (the entries before it keep their unkeyed hashes, now covered by the key). The
        head, sealed or new, is anchored. None when the head was already sealed (or there is no seal)."""
        if self.seal is None:
            return None
        with self.session() as session:
            head = session.scalars(select(AuditRow).order_by(AuditRow.id.desc()).limit(1)).first()
        if head is None or self.seal.sealed(_audit_body(head), head.hash):
            if head is not None:
                self.seal.anchor(head.id, head.hash)
            return None
        return self.record_audit(actor="server", action="audit.keyed", target="audit", outcome="done",
                                 detail={"unkeyed_until": head.id})

    def figures(self) -> dict[str, list[tuple]]:
        """What the metrics are counted from, read in one snapshot as plain tuples: every workload
        (queue, kind, template, tenant, state, created_at, admitted_at, attempts, preemptions, node_losses,
        checkpointed), every attempt (queue, template, tenant, placement, request, started_at, ended_at,
        outcome, reason, archived, metrics), the audit entries per outcome and each onboarding's state."""
        workloads = select(WorkloadRow.queue, WorkloadRow.kind, WorkloadRow.template, WorkloadRow.tenant,
                           WorkloadRow.state, WorkloadRow.created_at, WorkloadRow.admitted_at, WorkloadRow.attempts,
                           WorkloadRow.preemptions, WorkloadRow.node_losses, WorkloadRow.checkpoint_at.is_not(None))
        attempts = select(WorkloadRow.queue, WorkloadRow.template, WorkloadRow.tenant, AttemptRow.placement,
                          WorkloadRow.request, AttemptRow.started_at, AttemptRow.ended_at, AttemptRow.outcome,
                          AttemptRow.reason, AttemptRow.archive_path.is_not(None), AttemptRow.metrics,
                          ).join(WorkloadRow, AttemptRow.workload_id == WorkloadRow.id)
        audit = select(AuditRow.outcome, func.count()).group_by(AuditRow.outcome)
        onboarding = select(OnboardingRow.kind, OnboardingRow.name, OnboardingRow.state, OnboardingRow.failed_step)
        with self.session() as session:
            return {"workloads": [tuple(row) for row in session.execute(workloads)],
                    "attempts": [tuple(row) for row in session.execute(attempts)],
                    "audit": [tuple(row) for row in session.execute(audit)],
                    "onboarding": [tuple(row) for row in session.execute(onboarding)]}

    def audit_log(self) -> list[AuditRow]:
        with self.session() as session:
            return list(session.scalars(select(AuditRow).order_by(AuditRow.id)))

    def audit_entries(self, *, actor: str | None = None, action: str | None = None, outcome: str | None = None,
                      target: str | None = None, since: float | None = None, until: float | None = None,
                      after: int = 0, limit: int = 200) -> list[AuditRow]:
        """Entries oldest first after the id ``after``; an ``action`` or ``target`` ending in "." or "/" is a prefix."""
        query = select(AuditRow).where(AuditRow.id > after).order_by(AuditRow.id).limit(limit)
        for column, value in ((AuditRow.action, action), (AuditRow.target, target)):
            if value is not None:
                query = query.where(column.startswith(value, autoescape=True) if value.endswith((".", "/"))
                                    else column == value)
        for column, value in ((AuditRow.actor, actor), (AuditRow.outcome, outcome)):
            if value is not None:
                query = query.where(column == value)
        if since is not None:
            query = query.where(AuditRow.at >= since)
        if until is not None:
            query = query.where(AuditRow.at < until)
        with self.session() as session:
            return list(session.scalars(query))

    def last_audit(self, action: str) -> AuditRow | None:
        """The newest entry of ``action``."""
        with self.session() as session:
            return session.scalars(select(AuditRow).where(AuditRow.action == action)
                                   .order_by(AuditRow.id.desc()).limit(1)).first()

    def verify_audit(self) -> tuple[int, tuple[int, str] | None]:
        """How many entries the chain has, and the first one that breaks it (its id, what is wrong) or None.

        An entry edited after it was written no longer hashes to its ``hash``; one deleted (or rewritten with a
        new hash) leaves the entry after it naming a ``prev_hash`` that is not the one before it. Without a
        seal, anyone who can write the database can rehash a rewritten tail, and the newest entries can go
        without a trace. With one, only entries from before keying began may be unkeyed, the head must be sealed,
        and the seal's anchor file names the newest head written: a database whose head is older is truncated."""
        prev, prev_id, count, keyed = _GENESIS, None, 0, False
        seal = self.seal
        rows = self.audit_log()
        for row in rows:
            count += 1
            body = _audit_body(row)
            sealed = seal is not None and seal.sealed(body, row.hash)
            if not sealed and row.hash != sha256_hex(body):
                return count, (row.id, f"entry {row.id} was changed after it was written: it no longer matches its "
                                       f"hash")
            if keyed and not sealed:
                return count, (row.id, f"entry {row.id} was rewritten without the server's key: it has an unkeyed "
                                       f"hash, though entries before it are sealed with the key")
            if row.prev_hash != prev:
                after = f"entry {prev_id}" if prev_id is not None else "the start of the log"
                return count, (row.id, f"entry {row.id} does not follow {after}: an entry between them was deleted "
                                       f"or rewritten")
            prev, prev_id, keyed = row.hash, row.id, keyed or sealed
        if seal is None:
            return count, None
        if count and not keyed:
            # The server seals its head at every start: a fully unkeyed chain under a key was rehashed.
            return count, (rows[0].id, f"no entry is sealed with the server's key: the log was rewritten from entry "
                                       f"{rows[0].id} on without it")
        anchors = read_anchors(seal.anchor_file)
        if anchors and (prev_id or 0) < max(anchors):
            return count, ((prev_id or 0) + 1, f"the log was truncated: it ends at "
                                               f"{f'entry {prev_id}' if prev_id else 'no entry'}, but the anchor "
                                               f"file records entry {max(anchors)}")
        # Every head ever anchored, not only the newest: entries appended after a truncation reuse its ids.
        hashes = {row.id: row.hash for row in rows}
        for anchored_id, anchored_hash in sorted(anchors.items()):
            if not hmac.compare_digest(hashes.get(anchored_id, ""), anchored_hash):
                return count, (anchored_id, f"entry {anchored_id} does not match the hash the anchor file recorded "
                                            f"for it: it was deleted or rewritten")
        return count, None


def default_db_url() -> str:
    """Where a server keeps its store when nothing is configured: a SQLite file in Jupyter's data directory."""
    from jupyter_core.paths import jupyter_data_dir

    return f"sqlite:///{Path(jupyter_data_dir()) / 'hetero' / 'hetero.sqlite'}"


def _audit_body(row: AuditRow) -> bytes:
    return json.dumps(
        [row.prev_hash, row.at, row.actor, row.action, row.target, row.outcome, row.detail],
        sort_keys=True, separators=(",", ":"),
    ).encode()
