"""The sealed audit chain on real databases (a SQLite file, a PostgreSQL), against someone who can write the database
but not read the server's key: they rewrite entries and rehash the chain as an unkeyed SHA-256 chain was rehashed,
or delete its newest entries; an old unkeyed chain is sealed from where keying began and still verifies."""

from __future__ import annotations

import hashlib
import json
import os
import stat

from sqlalchemy import create_engine, text

from jupyter_hetero.store import Repository
from jupyter_hetero.store.audit_seal import AuditSeal, load_key, read_anchors


def rehash_without_key(url: str, *statements: str, start: int = 1) -> None:
    """Today's attack: edit entries, then recompute every hash from entry ``start`` on as unkeyed SHA-256."""
    engine = create_engine(url)
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(text(statement))
        prev = "0" * 64
        for row in connection.execute(text("SELECT id, at, actor, action, target, outcome, detail, hash FROM audit "
                                           "ORDER BY id")).all():
            if row.id < start:
                prev = row.hash
                continue
            detail = json.loads(row.detail) if isinstance(row.detail, str) else row.detail
            body = json.dumps([prev, row.at, row.actor, row.action, row.target, row.outcome, detail],
                              sort_keys=True, separators=(",", ":"))
            digest = hashlib.sha256(body.encode()).hexdigest()
            connection.execute(text("UPDATE audit SET prev_hash = :prev, hash = :digest WHERE id = :id"),
                               {"prev": prev, "digest": digest, "id": row.id})
            prev = digest
    engine.dispose()


def _execute(url: str, sql: str) -> None:
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text(sql))
    engine.dispose()


def _sealed(url, tmp_path) -> Repository:
    seal = AuditSeal(load_key(tmp_path / "runtime" / "audit.key"), anchor_file=tmp_path / "runtime" / "anchor.log")
    clock = iter(range(1000, 100000))
    return Repository(url, clock=lambda: float(next(clock)), seal=seal)


def _record(repo: Repository, *outcomes: str) -> None:
    for outcome in outcomes:
        repo.record_audit(actor="alice", action="audit.read", target="audit", outcome=outcome,
                          detail={"reason": "audit.read needs the platform-admin role"})


def test_the_key_is_made_once_readable_by_its_owner_only(tmp_path):
    path = tmp_path / "runtime" / "audit.key"
    key = load_key(path)
    assert len(key) == 32 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_key(path) == key and load_key(tmp_path / "absent.key", create=False) is None


def test_a_rehashed_rewrite_is_caught_at_the_first_rewritten_entry(db_url, tmp_path):
    repo = _sealed(db_url, tmp_path)
    _record(repo, "allowed", "denied", "denied", "denied", "denied", "allowed")
    assert repo.verify_audit() == (6, None)
    # Three denials deleted, the fourth made "allowed", the chain rehashed: it links up, but without the key.
    rehash_without_key(db_url, "DELETE FROM audit WHERE id IN (2, 3, 4)",
                       "UPDATE audit SET outcome = 'allowed' WHERE id = 5", start=2)
    assert repo.verify_audit() == (2, (5, "entry 5 was rewritten without the server's key: it has an unkeyed hash, "
                                          "though entries before it are sealed with the key"))
    repo.close()


def test_a_chain_rehashed_from_its_first_entry_is_caught(db_url, tmp_path):
    repo = _sealed(db_url, tmp_path)
    _record(repo, "denied", "allowed")
    rehash_without_key(db_url, "UPDATE audit SET outcome = 'allowed' WHERE id = 1")
    assert repo.verify_audit() == (2, (1, "no entry is sealed with the server's key: the log was rewritten from "
                                          "entry 1 on without it"))
    repo.close()


def test_deleting_the_newest_entries_is_caught_by_the_anchor(db_url, tmp_path):
    repo = _sealed(db_url, tmp_path)
    _record(repo, *["allowed"] * 8)
    assert max(read_anchors(repo.seal.anchor_file)) == 8 and repo.seal.head[0] == 8
    _execute(db_url, "DELETE FROM audit WHERE id > 4")
    assert repo.verify_audit() == (4, (5, "the log was truncated: it ends at entry 4, but the anchor file records "
                                          "entry 8"))
    # New entries take the deleted ones' ids (SQLite reuses them): the heads anchored before still do not match.
    _record(repo, *["allowed"] * 5)
    assert repo.verify_audit() == (9, (5, "entry 5 does not match the hash the anchor file recorded for it: it was "
                                          "deleted or rewritten"))
    repo.close()


def test_an_unkeyed_chain_is_sealed_from_where_keying_began(db_url, tmp_path):
    old = Repository(db_url, clock=lambda: 1.0)  # a release before keying
    _record(old, "allowed", "denied")
    old.close()
    repo = _sealed(db_url, tmp_path)
    switch = repo.seal_audit_chain()
    assert (switch.id, switch.action, switch.detail) == (3, "audit.keyed", {"unkeyed_until": 2})
    assert repo.seal_audit_chain() is None  # once
    _record(repo, "allowed")
    assert repo.verify_audit() == (4, None)
    # The unkeyed entries before the switch are covered by it: rehashing them breaks the sealed switch's link.
    _execute(db_url, "UPDATE audit SET outcome = 'allowed' WHERE id = 2")
    assert repo.verify_audit()[1][0] == 2
    repo.close()
