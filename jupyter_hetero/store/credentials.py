"""Workload credentials in the store: digests only, each tied to a workload, revoked in bulk.

    store = CredentialStore(repository)
    credential_id = store.add(workload_id=7, digest=sha256_hex_of_the_secret)
    store.find(credential_id)              # -> (CredentialRow, WorkloadRow) or None
    store.revoke_unless(("admitted", "starting", "running"))   # after every scheduler tick
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select, update

from .tables import CredentialRow, WorkloadRow

if TYPE_CHECKING:
    from .repository import Repository

__all__ = ["CredentialStore"]


class CredentialStore:
    """Reads and writes the ``credentials`` table through the repository's sessions."""

    def __init__(self, repository: Repository):
        self.repository = repository

    def add(self, *, workload_id: int, digest: str) -> int:
        """Record a credential (committed before the caller hands it out) and return its id."""
        with self.repository.session(write=True) as session:
            row = CredentialRow(workload_id=workload_id, digest=digest, issued_at=self.repository.clock())
            session.add(row)
            session.flush()
            return row.id

    def find(self, credential_id: int) -> tuple[CredentialRow, WorkloadRow] | None:
        """The credential and its workload, read together (one query per authenticated request)."""
        query = select(CredentialRow, WorkloadRow).join(WorkloadRow, WorkloadRow.id == CredentialRow.workload_id) \
            .where(CredentialRow.id == credential_id)
        with self.repository.session() as session:
            found = session.execute(query).first()
            return (found[0], found[1]) if found else None

    def revoke_unless(self, states: tuple[str, ...], workload_id: int | None = None) -> int:
        """Revoke every live credential whose workload is in none of ``states``; returns how many."""
        ended = select(WorkloadRow.id).where(WorkloadRow.state.not_in(states))
        if workload_id is not None:
            ended = ended.where(WorkloadRow.id == workload_id)
        statement = update(CredentialRow).where(
            CredentialRow.revoked_at.is_(None), CredentialRow.workload_id.in_(ended),
        ).values(revoked_at=self.repository.clock())
        with self.repository.session(write=True) as session:
            return session.execute(statement).rowcount or 0
