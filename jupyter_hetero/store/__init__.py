"""Persistence: SQLAlchemy tables, schema migrations and the repository."""

from .migrations import SCHEMA_VERSION, SchemaTooNew
from .repository import (ACTIVE_STATES, INADMISSIBLE, PENDING_STATES, QUEUED_STATES, MetricSample, MetricSeries, Repository,
                         default_db_url)

__all__ = [
    "ACTIVE_STATES",
    "INADMISSIBLE",
    "PENDING_STATES",
    "QUEUED_STATES",
    "MetricSample",
    "MetricSeries",
    "SCHEMA_VERSION",
    "Repository",
    "SchemaTooNew",
    "default_db_url",
]
