"""Workloads and their attempts: submission, every transition with its event, and the change feed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from .sessions import Sessions
from .tables import AttemptRow, EventRow, WorkloadRow

# Ids bound in one IN list: far under SQLite's and PostgreSQL's limits on a statement's parameters.
_IDS_PER_QUERY = 500

__all__ = ["ACTIVE_STATES", "INADMISSIBLE", "PENDING_STATES", "QUEUED_STATES", "WorkloadRecords", "WorkloadTransaction"]

# Waiting states the scheduler hands the engine every cycle.
QUEUED_STATES = ("queued", "preempted")
# Waiting, but no node of the inventory could ever hold it: re-examined only when the inventory changes.
INADMISSIBLE = "inadmissible"
# Every waiting state: counted as pending, cancelled at once, shown with position and blockers.
PENDING_STATES = (*QUEUED_STATES, INADMISSIBLE)
# States in which a workload holds capacity on a node.
ACTIVE_STATES = ("admitted", "starting", "running")
# Events that record what was seen of a workload without changing its row (the scheduler's `waiting`: its top
# blocker changed): not in the change feed, so a tick does not read those rows again.
_OBSERVATIONS = ("waiting",)


class WorkloadRecords(Sessions):
    """The repository's workloads and attempts; each method is one transaction."""

    def add_workload(self, row: WorkloadRow, *, reason: str, data: dict[str, Any] | None = None) -> WorkloadRow:
        """Insert a workload and its `submitted` event in one transaction: once this returns, it is durable.

        A row whose ``request_key`` its user stored before is not inserted: the stored row is returned instead
        (write transactions are serial, so two tries of one submission cannot both insert)."""
        return self.add_workloads([row], reason=reason, data=data)[0]

    def add_workloads(self, rows: Sequence[WorkloadRow], *, reason: str, data: dict[str, Any] | None = None,
                      complete: Callable[[WorkloadRow, int], None] = lambda row, first: None) -> list[WorkloadRow]:
        """Insert several workloads, each with its `submitted` event, in one transaction (an array's tasks): once
        this returns, all are durable; none is if it fails. The first row goes in first, and ``complete(row,
        first_id)`` then finishes every row (an array's tasks name their array by the first one's id).

        A first row whose ``request_key`` its user stored before inserts nothing: ``[stored row]`` is returned."""
        now = self.clock()
        first, *rest = rows
        with self.session(write=True) as session:
            if first.request_key is not None:
                stored = session.scalars(select(WorkloadRow).where(
                    WorkloadRow.user == first.user, WorkloadRow.request_key == first.request_key)).first()
                if stored is not None:
                    return [stored]
            for row in rows:
                row.created_at = row.updated_at = now
            session.add(first)
            session.flush()
            for row in rows:
                complete(row, first.id)
            session.add_all(rest)
            session.flush()
            session.add_all([EventRow(workload_id=row.id, at=now, type="submitted", reason=reason, data=data or {})
                             for row in rows])
            return list(rows)

    def workload(self, workload_id: int) -> WorkloadRow | None:
        with self.session() as session:
            return session.get(WorkloadRow, workload_id)

    def workload_states(self, workload_ids: Iterable[int]) -> dict[int, str]:
        """Each workload's state, in one read (a few queries for many ids); an id that names none is left out."""
        ids, found = sorted(set(workload_ids)), {}
        with self.session() as session:
            for start in range(0, len(ids), _IDS_PER_QUERY):
                found.update((workload_id, state) for workload_id, state in session.execute(
                    select(WorkloadRow.id, WorkloadRow.state).where(WorkloadRow.id.in_(ids[start:start + _IDS_PER_QUERY]))))
        return found

    def awaited_states(self, workload_ids: Iterable[int]) -> tuple[dict[int, str], dict[int, dict[str, int]]]:
        """What dependencies read each tick, in one read: each workload's state (an id that names none left out) and,
        for each that is an array's id (its first task's), how many of the array's tasks are in each state.

            states, arrays = repo.awaited_states([7, 12])   # {7: "running", 12: "queued"}, {12: {"succeeded": 3}}
        """
        ids, states, arrays = sorted(set(workload_ids)), {}, {}
        array_of = WorkloadRow.spec[("array", "id")].as_integer()
        with self.session() as session:
            firsts = []
            for start in range(0, len(ids), _IDS_PER_QUERY):
                for workload_id, state, array in session.execute(
                        select(WorkloadRow.id, WorkloadRow.state, array_of)
                        .where(WorkloadRow.id.in_(ids[start:start + _IDS_PER_QUERY]))):
                    states[workload_id] = state
                    if array == workload_id:
                        firsts.append(workload_id)
            firsts.sort()  # rows come back in any order
            for start in range(0, len(firsts), _IDS_PER_QUERY):
                chunk = firsts[start:start + _IDS_PER_QUERY]
                # No task has an id below its array's: the scan starts at the first array's.
                for array, state, count in session.execute(
                        select(array_of, WorkloadRow.state, func.count(WorkloadRow.id))
                        .where(WorkloadRow.id >= chunk[0], array_of.in_(chunk)).group_by(array_of, WorkloadRow.state)):
                    arrays.setdefault(array, {})[state] = count
        return states, arrays

    def workloads(self, *, tenant: str | None = None, user: str | None = None, queue: str | None = None,
                  states: tuple[str, ...] | None = None, kind: str | None = None,
                  limit: int | None = None, array: int | None = None) -> list[WorkloadRow]:
        """Workloads matching every filter given, by id (newest first with a ``limit``); ``array``: the tasks of the
        array of that id (none below it: an array's id is its first task's)."""
        query = select(WorkloadRow).order_by(WorkloadRow.id.desc() if limit else WorkloadRow.id)
        for column, value in ((WorkloadRow.tenant, tenant), (WorkloadRow.user, user), (WorkloadRow.queue, queue),
                              (WorkloadRow.kind, kind)):
            if value is not None:
                query = query.where(column == value)
        if states is not None:
            query = query.where(WorkloadRow.state.in_(states))
        if array is not None:
            query = query.where(WorkloadRow.id >= array, WorkloadRow.spec[("array", "id")].as_integer() == array)
        if limit:
            query = query.limit(limit)
        with self.session() as session:
            return list(session.scalars(query))

    def last_attempt_nodes(self, workload_ids: Sequence[int]) -> dict[int, str]:
        """Each workload's latest attempt's node, for those that ever started one: kept after the workload ended,
        when the workload's own node (what the scheduler reads as held) is cleared."""
        found: dict[int, str] = {}
        with self.session() as session:
            for start in range(0, len(workload_ids), _IDS_PER_QUERY):
                ids = workload_ids[start:start + _IDS_PER_QUERY]
                latest = (select(AttemptRow.workload_id, func.max(AttemptRow.number).label("number"))
                          .where(AttemptRow.workload_id.in_(ids)).group_by(AttemptRow.workload_id).subquery())
                rows = session.execute(select(AttemptRow.workload_id, AttemptRow.node).join(
                    latest, (AttemptRow.workload_id == latest.c.workload_id) & (AttemptRow.number == latest.c.number)))
                found.update((workload_id, node) for workload_id, node in rows)
        return found

    def workload_changes(self, after: int | None, states: tuple[str, ...]) -> tuple[int, list[WorkloadRow]]:
        """The change feed: ``(cursor, rows)``, the workloads changed since event ``after`` (every
        workload in ``states`` when ``after`` is None), in any state; pass ``cursor`` as the next ``after``.

        Every workload write records an event in the same transaction, so the events table is the
        feed (less the events that change no row, ``_OBSERVATIONS``). Events are written only in write
        transactions, one at a time (SQLite's write lock, PostgreSQL's advisory lock), so event ids commit
        in the order they are taken: no id below the cursor can appear later. Cursor and rows come from
        one snapshot."""
        with self.session() as session:
            cursor = session.scalar(select(func.max(EventRow.id))) or 0
            if after is None:
                query = select(WorkloadRow).where(WorkloadRow.state.in_(states))
            elif cursor <= after:
                return cursor, []
            else:
                changed = select(EventRow.workload_id).where(EventRow.id > after, EventRow.workload_id.is_not(None),
                                                             EventRow.type.not_in(_OBSERVATIONS))
                query = select(WorkloadRow).where(WorkloadRow.id.in_(changed))
            return max(cursor, after or 0), list(session.scalars(query.order_by(WorkloadRow.id)))

    def update_workloads_if(self, workload_ids: Sequence[int], when: Callable[[WorkloadRow], bool], *, event: str,
                            reason: str | None = None, **fields: Any) -> list[WorkloadRow]:
        """:meth:`update_workload_if` for many workloads in one transaction (an array's waiting tasks cancelled at
        once): those ``when`` held for and were changed, each with its event."""
        changed, ids = [], list(workload_ids)
        with self.session(write=True) as session:
            now = self.clock()
            # Read in a few queries, not one per row (and held here: the session keeps only weak references).
            found = {row.id: row for start in range(0, len(ids), _IDS_PER_QUERY) for row in session.scalars(
                select(WorkloadRow).where(WorkloadRow.id.in_(ids[start:start + _IDS_PER_QUERY])))}
            for workload_id in ids:
                if workload_id in found:
                    row = WorkloadTransaction(session, workload_id, now).update_if(when, event=event, reason=reason,
                                                                                  **fields)
                    if row is not None:
                        changed.append(row)
        return changed

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
        with self.workload_transaction(workload_id) as transaction:
            return transaction.update_if(when, event=event, reason=reason, data=data, said_first=said_first, **fields)

    @contextmanager
    def workload_transaction(self, workload_id: int) -> Iterator[WorkloadTransaction]:
        """Several writes to one workload and its attempts as one transaction: a reader sees all of them or none.

            with repo.workload_transaction(7) as transaction:
                transaction.update_attempt(3, outcome="preempted", ended_at=now)
                transaction.update_if(may_requeue, event="requeued", state="queued", preemptions=1)
        """
        with self.session(write=True) as session:
            yield WorkloadTransaction(session, workload_id, self.clock())

    def add_attempt(self, row: AttemptRow) -> AttemptRow:
        with self.session(write=True) as session:
            session.add(row)
            return row

    def update_attempt(self, attempt_id: int, **fields: Any) -> AttemptRow:
        with self.session(write=True) as session:
            return _update_attempt(session, attempt_id, fields)

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


class WorkloadTransaction:
    """One workload's write transaction (:meth:`WorkloadRecords.workload_transaction`): its row as the
    transaction reads it, conditional changes with their events, and its attempts' changes."""

    def __init__(self, session: Session, workload_id: int, now: float):
        self._session = session
        self.workload_id = workload_id
        self._now = now

    @property
    def row(self) -> WorkloadRow | None:
        """The workload as this transaction reads it, with the changes it made so far."""
        return self._session.get(WorkloadRow, self.workload_id)

    def update_if(self, when: Callable[[WorkloadRow], bool] | None, *, event: str, reason: str | None = None,
                  data: dict[str, Any] | None = None, said_first: Sequence[tuple[str, str | None]] = (),
                  **fields: Any) -> WorkloadRow | None:
        """:meth:`WorkloadRecords.update_workload_if` within this transaction."""
        row = self.row
        if row is None:
            raise KeyError(self.workload_id)
        if when is not None and not when(row):
            return None
        stopping = row.stopping
        for name, value in fields.items():
            setattr(row, name, value)
        # The workload's reason is why it is in its current state; while a stop is under way
        # (a cancel that arrived as the tick started the job), the stop's reason stands.
        if "stopping" in fields or ("state" in fields and stopping is None):
            row.reason = reason
        row.updated_at = self._now
        self._session.add_all([EventRow(workload_id=self.workload_id, at=self._now, type=said, reason=why, data={})
                               for said, why in said_first])
        self._session.add(EventRow(workload_id=self.workload_id, at=self._now, type=event, reason=reason,
                                   data=data or {}))
        return row

    def update_attempt(self, attempt_id: int, **fields: Any) -> AttemptRow:
        return _update_attempt(self._session, attempt_id, fields)


def _update_attempt(session: Session, attempt_id: int, fields: dict[str, Any]) -> AttemptRow:
    row = session.get(AttemptRow, attempt_id)
    for name, value in fields.items():
        setattr(row, name, value)
    return row
