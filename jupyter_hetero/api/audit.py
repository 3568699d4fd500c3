"""What the REST API answers about the audit log, as pydantic models (see ``responses.py``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .responses import Answer

__all__ = ["AuditEntry", "AuditPage", "AuditVerdict"]


class AuditEntry(Answer):
    """One admin action or denial; its hash covers its fields and the entry before it."""

    id: int
    at: float = Field(description="Epoch seconds.")
    actor: str
    action: str = Field(description="e.g. workload.preempt, service.delete, audit.read.")
    target: str = Field(description="e.g. workload/7, service/resnet, audit.")
    outcome: str = Field(description="allowed, denied, or done (by the scheduler itself).")
    detail: dict[str, Any]
    prev_hash: str
    hash: str


class AuditPage(Answer):
    entries: list[AuditEntry] = Field(description="Oldest first.")
    next_after: int | None = Field(description="Pass as ?after= for the next page; None on the last one.")


class AuditVerdict(Answer):
    """Whether every entry still hashes to what it was written with and follows the one before it."""

    intact: bool
    entries: int = Field(description="Entries checked (up to the first bad one).")
    first_bad: int | None = Field(description="The first entry that breaks the chain.")
    problem: str | None = Field(description="What is wrong with it, in words.")
