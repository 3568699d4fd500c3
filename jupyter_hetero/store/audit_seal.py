"""The audit chain's seal: a key the database never holds, and the chain's head written outside the database.

    seal = AuditSeal(load_key(Path(runtime_dir) / "jupyter_hetero_audit.key"), anchor_file=Path("audit-anchor.log"))
    repository = Repository(url, clock, seal=seal)   # each entry's hash is now an HMAC; each append is anchored
    read_anchors(Path("audit-anchor.log"))             # {56: "07ab...", 57: "9f2c..."}: every head written

An unkeyed SHA-256 chain can be recomputed by anyone who can write the database: they edit an entry and
rehash everything after it. With an HMAC they cannot, as the key lives in a file beside the server's runtime
files, which workloads cannot see. Neither kind of chain shows its newest entries deleted; the anchor does,
since it lives outside the database too (an append-only file, the server's log, the metrics endpoint).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
import threading
from pathlib import Path

__all__ = ["AuditSeal", "default_anchor_file", "default_key_file", "load_key", "read_anchors", "sha256_hex"]

_log = logging.getLogger("jupyter_hetero.audit")
_KEY_BYTES = 32


def default_key_file() -> Path:
    """Beside the server's other secrets (its cookie secret) in Jupyter's runtime dir, which workloads never see."""
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir()) / "jupyter_hetero_audit.key"


def default_anchor_file() -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir()) / "jupyter_hetero_audit_anchor.log"


def sha256_hex(body: bytes) -> str:
    """An unkeyed entry's hash: what chains written before keying began carry."""
    return hashlib.sha256(body).hexdigest()


def load_key(path: Path, *, create: bool = True) -> bytes | None:
    """The key in ``path``; made (32 random bytes, hex, mode 0600) when there is none and ``create``; None otherwise."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        if not create:
            return None
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        text = secrets.token_hex(_KEY_BYTES)
        try:
            # O_EXCL: two servers starting at once on one runtime dir must not each write a different key.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return load_key(path, create=False)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(text + "\n")
        _log.info("audit chain key created at %s", path)
    if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        # Like jupyter_server's cookie secret: a key others can read keys nothing.
        _log.warning("audit chain key %s was readable by others; its mode is now 0600", path)
        path.chmod(0o600)
    return bytes.fromhex(text)


def read_anchors(path: Path | None) -> dict[int, str]:
    """Every head an anchor file holds: entry id -> its hash (none without a file)."""
    if path is None:
        return {}
    try:
        lines = path.read_text(encoding="ascii", errors="replace").splitlines()
    except FileNotFoundError:
        return {}
    heads = {}
    for line in lines:
        words = line.split()
        if len(words) == 2 and words[0].isdigit():
            heads[int(words[0])] = words[1]
    return heads


class AuditSeal:
    """The key entries are sealed with, and where each new head is anchored."""

    def __init__(self, key: bytes, *, anchor_file: Path | None = None):
        self._key = key
        self.anchor_file = anchor_file
        self.head: tuple[int, str] | None = None  # the newest head this process anchored (the metrics read it)
        self._lock = threading.Lock()

    def mac(self, body: bytes) -> str:
        return hmac.new(self._key, body, hashlib.sha256).hexdigest()

    def sealed(self, body: bytes, digest: str) -> bool:
        return hmac.compare_digest(self.mac(body), digest)

    def anchor(self, entry_id: int, digest: str) -> None:
        """Write the head after an append committed; appends that commit out of order leave the newest head."""
        with self._lock:
            if self.head is not None and entry_id <= self.head[0]:
                return
            self.head = (entry_id, digest)
            _log.info("audit head entry=%d mac=%s", entry_id, digest)
            if self.anchor_file is not None:
                self.anchor_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(self.anchor_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                with os.fdopen(fd, "a", encoding="ascii") as out:
                    out.write(f"{entry_id} {digest}\n")
