"""Recurring schedules: their rows, the runs they submitted and when each is next due."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import func, select

from .sessions import Sessions
from .tables import ScheduleRow, WorkloadRow

__all__ = ["RUNS_KEPT", "ScheduleRecords"]

# The runs a schedule lists, newest first; older ones are still workloads whose spec names the schedule.
RUNS_KEPT = 20


class ScheduleRecords(Sessions):
    """The repository's schedules; each method is one transaction."""

    def add_schedule(self, row: ScheduleRow) -> ScheduleRow:
        with self.session(write=True) as session:
            row.created_at = row.updated_at = self.clock()
            session.add(row)
            session.flush()
            return row

    def schedule(self, schedule_id: int) -> ScheduleRow | None:
        with self.session() as session:
            return session.get(ScheduleRow, schedule_id)

    def schedules(self, *, tenant: str | None = None, user: str | None = None,
                  states: tuple[str, ...] = ("active", "paused")) -> list[ScheduleRow]:
        """Schedules matching the filters given, oldest first."""
        query = select(ScheduleRow).where(ScheduleRow.state.in_(states)).order_by(ScheduleRow.id)
        if tenant is not None:
            query = query.where(ScheduleRow.tenant == tenant)
        if user is not None:
            query = query.where(ScheduleRow.user == user)
        with self.session() as session:
            return list(session.scalars(query))

    def update_schedule(self, schedule_id: int, **fields: Any) -> ScheduleRow:
        with self.session(write=True) as session:
            row = session.get(ScheduleRow, schedule_id)
            if row is None:
                raise KeyError(schedule_id)
            for key, value in fields.items():
                setattr(row, key, value)
            row.updated_at = self.clock()
            return row

    def due_schedules(self, now: float) -> list[ScheduleRow]:
        """Active schedules due at ``now`` (wall time), the longest due first."""
        query = (select(ScheduleRow).where(ScheduleRow.state == "active", ScheduleRow.next_run_at <= now)
                 .order_by(ScheduleRow.next_run_at, ScheduleRow.id))
        with self.session() as session:
            return list(session.scalars(query))

    def earliest_due(self) -> float | None:
        """When the next active schedule comes due; None when none is active."""
        with self.session() as session:
            return session.scalar(select(func.min(ScheduleRow.next_run_at)).where(ScheduleRow.state == "active"))

    def record_schedule_run(self, schedule_id: int, *, run: dict[str, Any] | None, error: str | None,
                            due_at: float | None, next_run_at: float | None) -> ScheduleRow:
        """After a run was submitted (``run``) or refused (``error``): the run listed first, the error kept (or
        cleared by a run), and, for a due run (``due_at``), the next due time set, unless the schedule changed
        meanwhile (paused, deleted, edited: it has its own next due time then)."""
        with self.session(write=True) as session:
            row = session.get(ScheduleRow, schedule_id)
            if row is None:
                raise KeyError(schedule_id)
            if run is not None:
                row.runs = [run, *(row.runs or [])][:RUNS_KEPT]
                row.last_run_at = run["submitted_at"]
            row.last_error = error
            if due_at is not None and row.state == "active" and row.next_run_at == due_at:
                row.next_run_at = next_run_at
            row.updated_at = self.clock()
            return row

    def run_states(self, workload_ids: Iterable[int]) -> dict[int, str]:
        """Each workload's state, in one query (a schedule's runs: at most ``RUNS_KEPT`` each)."""
        ids = sorted(set(workload_ids))
        if not ids:
            return {}
        with self.session() as session:
            rows = session.execute(select(WorkloadRow.id, WorkloadRow.state).where(WorkloadRow.id.in_(ids)))
            return {workload_id: state for workload_id, state in rows}
