"""The event log's free-standing entries and the alerts, whose firing and resolution are events too."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select

from .sessions import Sessions
from .tables import AlertRow, EventRow

__all__ = ["EventRecords"]


class EventRecords(Sessions):
    """The repository's events and alerts; each method is one transaction."""

    def append_event(self, *, type: str, reason: str | None = None, workload_id: int | None = None,
                     node: str | None = None, data: dict[str, Any] | None = None) -> EventRow:
        with self.session(write=True) as session:
            row = EventRow(workload_id=workload_id, node=node, at=self.clock(), type=type, reason=reason, data=data or {})
            session.add(row)
            return row

    def append_events(self, events: list[dict[str, Any]]) -> None:
        """Several free-standing events in one transaction (the scheduler's per-tick ``waiting`` events):
        each a dict of ``type``, ``workload_id``, ``reason`` and ``data``."""
        if not events:
            return
        at = self.clock()
        rows = [{"workload_id": event.get("workload_id"), "node": event.get("node"), "at": at, "type": event["type"],
                 "reason": event.get("reason"), "data": event.get("data") or {}} for event in events]
        with self.session(write=True) as session:
            # One multi-row INSERT, not the ORM's unit of work: a tick may write a hundred at once.
            session.execute(insert(EventRow), rows)

    def events(self, *, workload_id: int | None = None, node: str | None = None) -> list[EventRow]:
        query = select(EventRow).order_by(EventRow.id)
        if workload_id is not None:
            query = query.where(EventRow.workload_id == workload_id)
        if node is not None:
            query = query.where(EventRow.node == node)
        with self.session() as session:
            return list(session.scalars(query))

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
