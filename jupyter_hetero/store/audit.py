"""The audit chain: appending, sealing with the server's key, reading and verifying it."""

from __future__ import annotations

import hmac
import json
from typing import Any

from sqlalchemy import select

from .audit_seal import read_anchors, sha256_hex
from .sessions import Sessions
from .tables import AuditRow

__all__ = ["AuditChain"]

# The hash the first entry names as its previous one.
_GENESIS = "0" * 64


class AuditChain(Sessions):
    """The repository's audit log; each method is one transaction (sealing anchors after its commit)."""

    def record_audit(self, *, actor: str, action: str, target: str, outcome: str,
                     detail: dict[str, Any] | None = None) -> AuditRow:
        """Append to the audit chain; each row's hash (an HMAC with a seal) covers the previous one."""
        with self.session(write=True) as session:
            prev = session.scalars(select(AuditRow.hash).order_by(AuditRow.id.desc()).limit(1)).first() or _GENESIS
            row = AuditRow(at=self.clock(), actor=actor, action=action, target=target, outcome=outcome,
                           detail=detail or {}, prev_hash=prev)
            body = _audit_body(row)
            row.hash = self.seal.mac(body) if self.seal else sha256_hex(body)
            session.add(row)
            session.flush()  # the id, for the anchor
        if self.seal:  # once committed: an anchor ahead of the database would read as a truncation
            self.seal.anchor(row.id, row.hash)
        return row

    def seal_audit_chain(self) -> AuditRow | None:
        """With a seal, make sure the chain's head is sealed: a chain written before keying began gets an entry
        recording the switch (the entries before it keep their unkeyed hashes, now covered by the key). The
        head, sealed or new, is anchored. None when the head was already sealed (or there is no seal)."""
        if self.seal is None:
            return None
        with self.session() as session:
            head = session.scalars(select(AuditRow).order_by(AuditRow.id.desc()).limit(1)).first()
        if head is None or self.seal.sealed(_audit_body(head), head.hash):
            if head is not None:
                self.seal.anchor(head.id, head.hash)
            return None
        return self.record_audit(actor="server", action="audit.keyed", target="audit", outcome="done",
                                 detail={"unkeyed_until": head.id})

    def audit_log(self) -> list[AuditRow]:
        with self.session() as session:
            return list(session.scalars(select(AuditRow).order_by(AuditRow.id)))

    def audit_entries(self, *, actor: str | None = None, action: str | None = None, outcome: str | None = None,
                      target: str | None = None, since: float | None = None, until: float | None = None,
                      after: int = 0, limit: int = 200) -> list[AuditRow]:
        """Entries oldest first after the id ``after``; an ``action`` or ``target`` ending in "." or "/" is a prefix."""
        query = select(AuditRow).where(AuditRow.id > after).order_by(AuditRow.id).limit(limit)
        for column, value in ((AuditRow.action, action), (AuditRow.target, target)):
            if value is not None:
                query = query.where(column.startswith(value, autoescape=True) if value.endswith((".", "/"))
                                    else column == value)
        for column, value in ((AuditRow.actor, actor), (AuditRow.outcome, outcome)):
            if value is not None:
                query = query.where(column == value)
        if since is not None:
            query = query.where(AuditRow.at >= since)
        if until is not None:
            query = query.where(AuditRow.at < until)
        with self.session() as session:
            return list(session.scalars(query))

    def last_audit(self, action: str) -> AuditRow | None:
        """The newest entry of ``action``."""
        with self.session() as session:
            return session.scalars(select(AuditRow).where(AuditRow.action == action)
                                   .order_by(AuditRow.id.desc()).limit(1)).first()

    def verify_audit(self) -> tuple[int, tuple[int, str] | None]:
        """How many entries the chain has, and the first one that breaks it (its id, what is wrong) or None.

        An entry edited after it was written no longer hashes to its ``hash``; one deleted (or rewritten with a
        new hash) leaves the entry after it naming a ``prev_hash`` that is not the one before it. Without a
        seal, anyone who can write the database can rehash a rewritten tail, and the newest entries can go
        without a trace. With one, only entries from before keying began may be unkeyed, the head must be sealed,
        and the seal's anchor file names the newest head written: a database whose head is older is truncated."""
        prev, prev_id, count, keyed = _GENESIS, None, 0, False
        seal = self.seal
        rows = self.audit_log()
        for row in rows:
            count += 1
            body = _audit_body(row)
            sealed = seal is not None and seal.sealed(body, row.hash)
            if not sealed and row.hash != sha256_hex(body):
                return count, (row.id, f"entry {row.id} was changed after it was written: it no longer matches its "
                                       f"hash")
            if keyed and not sealed:
                return count, (row.id, f"entry {row.id} was rewritten without the server's key: it has an unkeyed "
                                       f"hash, though entries before it are sealed with the key")
            if row.prev_hash != prev:
                after = f"entry {prev_id}" if prev_id is not None else "the start of the log"
                return count, (row.id, f"entry {row.id} does not follow {after}: an entry between them was deleted "
                                       f"or rewritten")
            prev, prev_id, keyed = row.hash, row.id, keyed or sealed
        if seal is None:
            return count, None
        if count and not keyed:
            # The server seals its head at every start: a fully unkeyed chain under a key was rehashed.
            return count, (rows[0].id, f"no entry is sealed with the server's key: the log was rewritten from entry "
                                       f"{rows[0].id} on without it")
        anchors = read_anchors(seal.anchor_file)
        if anchors and (prev_id or 0) < max(anchors):
            return count, ((prev_id or 0) + 1, f"the log was truncated: it ends at "
                                               f"{f'entry {prev_id}' if prev_id else 'no entry'}, but the anchor "
                                               f"file records entry {max(anchors)}")
        # Every head ever anchored, not only the newest: entries appended after a truncation reuse its ids.
        hashes = {row.id: row.hash for row in rows}
        for anchored_id, anchored_hash in sorted(anchors.items()):
            if not hmac.compare_digest(hashes.get(anchored_id, ""), anchored_hash):
                return count, (anchored_id, f"entry {anchored_id} does not match the hash the anchor file recorded "
                                            f"for it: it was deleted or rewritten")
        return count, None


def _audit_body(row: AuditRow) -> bytes:
    return json.dumps(
        [row.prev_hash, row.at, row.actor, row.action, row.target, row.outcome, row.detail],
        sort_keys=True, separators=(",", ":"),
    ).encode()
