"""The repository: the only code that opens database sessions.

>>> repo = Repository("sqlite:///:memory:", clock=lambda: 0.0)
>>> repo.record_audit(actor="alice", action="catalog.reload", target="catalog", outcome="allowed").id
1

Its parts, one per kind of record, share the connection and transactions of ``sessions.py``.
"""

from __future__ import annotations

from .audit import AuditChain
from .events import EventRecords
from .evidence import EvidenceRecords
from .metric_samples import MetricSample, MetricSampleRecords, MetricSeries
from .nodes import NodeRecords
from .queries import Queries
from .schedules import ScheduleRecords
from .services import ServiceRecords
from .sessions import default_db_url
from .workloads import ACTIVE_STATES, INADMISSIBLE, PENDING_STATES, QUEUED_STATES, WorkloadRecords

__all__ = ["ACTIVE_STATES", "INADMISSIBLE", "PENDING_STATES", "QUEUED_STATES", "MetricSample", "MetricSeries", "Repository",
           "default_db_url"]


class Repository(WorkloadRecords, NodeRecords, EventRecords, EvidenceRecords, MetricSampleRecords, ServiceRecords,
                 ScheduleRecords, Queries, AuditChain):
    """Reads and writes the store; every method is one transaction."""
