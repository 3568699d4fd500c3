"""One workload's record, read in one snapshot: what its evidence chain is built from.

    record = repo.evidence_record(7)   # None when workload 7 does not exist
    record.workload, record.attempts, record.events, record.audit, record.alerts
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import or_, select

from .sessions import Sessions
from .tables import AlertRow, AttemptRow, AuditRow, EventRow, WorkloadRow

__all__ = ["EvidenceRecord", "EvidenceRecords"]


@dataclass(frozen=True)
class EvidenceRecord:
    """A workload, its attempts and events in order, the audit entries that name it, and the alerts that
    were firing at some point between its submission and its end on its tenant, queue, nodes or itself."""

    workload: WorkloadRow
    attempts: list[AttemptRow]
    events: list[EventRow]
    audit: list[AuditRow]
    alerts: list[AlertRow]


class EvidenceRecords(Sessions):
    """The repository's read of one workload's whole record; one read transaction."""

    def evidence_record(self, workload_id: int, *, now: float) -> EvidenceRecord | None:
        """Everything recorded of ``workload_id``; ``now`` ends the alert window of a workload not yet ended."""
        with self.session() as session:
            row = session.get(WorkloadRow, workload_id)
            if row is None:
                return None
            attempts = list(session.scalars(select(AttemptRow).where(AttemptRow.workload_id == workload_id)
                                            .order_by(AttemptRow.number)))
            events = list(session.scalars(select(EventRow).where(EventRow.workload_id == workload_id)
                                          .order_by(EventRow.id)))
            audit = list(session.scalars(select(AuditRow).where(AuditRow.target == f"workload/{workload_id}")
                                         .order_by(AuditRow.id)))
            nodes = sorted({attempt.node for attempt in attempts}
                           | {slot.get("node") for attempt in attempts
                              for slot in (attempt.placement or {}).get("slots", []) if slot.get("node")})
            subjects = [f"workload/{workload_id}", f"queue/{row.queue}", *(f"node/{node}" for node in nodes)]
            end = row.finished_at if row.finished_at is not None else now
            alerts = list(session.scalars(
                select(AlertRow).where(
                    or_(AlertRow.subject.in_(subjects), AlertRow.tenant == row.tenant,
                        AlertRow.subject.startswith(f"tenant/{row.tenant}/")),
                    AlertRow.fired_at <= end,
                    or_(AlertRow.resolved_at.is_(None), AlertRow.resolved_at >= row.created_at),
                ).order_by(AlertRow.id)))
        return EvidenceRecord(row, attempts, events, audit, alerts)
