"""Persistence: SQLAlchemy tables, schema migrations and the repository."""

from .migrations import SCHEMA_VERSION, SchemaTooNew
from .repository import ACTIVE_STATES, INADMISSIBLE, PENDING_STATES, QUEUED_STATES, Held, Repository

__all__ = [
    "ACTIVE_STATES",
    "INADMISSIBLE",
    "PENDING_STATES",
    "QUEUED_STATES",
    "SCHEMA_VERSION",
    "Held",
    "Repository",
    "SchemaTooNew",
]
