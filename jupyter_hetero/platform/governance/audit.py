"""The audit log as platform admins read it: filtered pages of the hash chain, and whether the chain is intact.

    audit = AuditLog(repository, access)
    audit.entries(identity, AuditQuery(action="workload.preempt", limit=50))  # {"entries": [...], "next_after": 57}
    audit.verify(identity)     # {"intact": False, "entries": 212, "first_bad": 57, "problem": "entry 57 was changed ..."}

Reading it is itself an admin action, recorded like the others.
"""

from __future__ import annotations

from typing import Any

from ...models import AuditQuery
from ...store import Repository
from ...store.tables import AuditRow
from ..access import Access
from ..identity import Identity

__all__ = ["AuditLog", "audit_json", "verdict_json"]


class AuditLog:
    def __init__(self, repository: Repository, access: Access):
        self.repository = repository
        self.access = access

    def entries(self, identity: Identity, query: AuditQuery) -> dict[str, Any]:
        """One page of entries, oldest first, after ``query.after`` (an entry's id); ``next_after`` names the next page."""
        self.access.require_platform_admin(identity, "audit.read", "audit")
        rows = self.repository.audit_entries(
            actor=query.actor, action=query.action, outcome=query.outcome, target=query.target, since=query.since,
            until=query.until, after=query.after, limit=query.limit + 1)
        page = rows[:query.limit]
        return {"entries": [audit_json(row) for row in page],
                "next_after": page[-1].id if len(rows) > query.limit else None}

    def verify(self, identity: Identity) -> dict[str, Any]:
        """Whether every entry still hashes to what it was written with and follows the one before it."""
        self.access.require_platform_admin(identity, "audit.verify", "audit")
        return verdict_json(self.repository)


def verdict_json(repository: Repository) -> dict[str, Any]:
    """The chain's verification as the API and ``jupyter hetero audit verify`` say it."""
    entries, broken = repository.verify_audit()
    return {"intact": broken is None, "entries": entries, "first_bad": broken[0] if broken else None,
            "problem": broken[1] if broken else None}


def audit_json(row: AuditRow) -> dict[str, Any]:
    return {"id": row.id, "at": row.at, "actor": row.actor, "action": row.action, "target": row.target,
            "outcome": row.outcome, "detail": row.detail, "prev_hash": row.prev_hash, "hash": row.hash}
