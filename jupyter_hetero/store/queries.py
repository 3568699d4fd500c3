"""Read-only figures over many rows, each read in one snapshot: what metrics, alerts, usage, capacity advice and
the acceptance report count from."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from .sessions import Sessions
from .tables import AlertRow, AttemptRow, AuditRow, EventRow, OnboardingRow, ServiceRow, WorkloadRow
from .workloads import ACTIVE_STATES, PENDING_STATES

__all__ = ["Queries"]


class Queries(Sessions):
    """The repository's aggregate reads; each method is one read transaction."""

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
