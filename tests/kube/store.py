"""The fake API server's storage: objects under one global resourceVersion, and the history watches replay.

Stored dicts are never mutated: every change stores a new dict, so the history and open watches can
share them without copying. Whatever leaves the store for a caller is a deep copy.
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["Change", "Expired", "ObjectStore", "key_of", "now_rfc3339"]

Key = tuple[str, str, str]  # (kind, namespace or "", name)


def now_rfc3339() -> str:
    """The current time as Kubernetes writes timestamps (UTC, seconds)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def key_of(obj: dict) -> Key:
    metadata = obj.get("metadata") or {}
    return obj["kind"], metadata.get("namespace") or "", metadata["name"]


@dataclass(frozen=True)
class Change:
    """One recorded change: its version, ADDED/MODIFIED/DELETED, the object after it and before it."""

    version: int
    type: str
    obj: dict
    old: dict | None


class Expired(Exception):
    """A resourceVersion older than the oldest the history still holds."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class ObjectStore:
    """Objects by (kind, namespace, name) with a bounded, replayable change history."""

    def __init__(self, history: int = 20_000) -> None:
        self.changed = threading.Condition(threading.RLock())
        self.version = 1
        # Every version after `oldest_replayable` is in `_history`; older ones answer 410.
        self.oldest_replayable = 1
        self._history: deque[Change] = deque()
        self._history_limit = history
        self._objects: dict[str, dict[tuple[str, str], dict]] = {}  # kind -> (namespace, name) -> object
        self._subscribers: list[Callable[[str, dict], None]] = []

    # --- reads -----------------------------------------------------------------------------------
    def get(self, kind: str, namespace: str, name: str) -> dict | None:
        with self.changed:
            return self._objects.get(kind, {}).get((namespace or "", name))

    def items(self, kind: str, namespace: str | None = None) -> list[dict]:
        """The stored objects of a kind (in one namespace if given), sorted by namespace and name."""
        with self.changed:
            found = [
                obj for (ns, _name), obj in self._objects.get(kind, {}).items() if namespace is None or ns == namespace
            ]
        return sorted(found, key=lambda obj: (obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))

    def changes_after(self, version: int) -> list[Change]:
        """The recorded changes after ``version``; :class:`Expired` if some were forgotten."""
        with self.changed:
            if version < self.oldest_replayable:
                raise Expired(version, self.oldest_replayable)
            newer: list[Change] = []
            for change in reversed(self._history):
                if change.version <= version:
                    break
                newer.append(change)
            newer.reverse()
            return newer

    # --- writes ----------------------------------------------------------------------------------
    def write(self, obj: dict, *, old: dict | None) -> dict:
        """Store ``obj`` (a new dict) under a new version; ADDED if there was no ``old``, else MODIFIED."""
        with self.changed:
            self.version += 1
            metadata = dict(obj.get("metadata") or {})
            metadata["resourceVersion"] = str(self.version)
            if old is None:
                metadata.setdefault("uid", str(uuid.uuid4()))
                metadata.setdefault("creationTimestamp", now_rfc3339())
            else:
                metadata["uid"] = old["metadata"]["uid"]
                metadata["creationTimestamp"] = old["metadata"]["creationTimestamp"]
            stored = {**obj, "metadata": metadata}
            kind, namespace, name = key_of(stored)
            self._objects.setdefault(kind, {})[(namespace, name)] = stored
            change = Change(self.version, "ADDED" if old is None else "MODIFIED", stored, old)
            self._record(change)
        self._notify(change)
        return stored

    def delete(self, key: Key) -> dict | None:
        """Remove an object; DELETED carries its last state under a new version."""
        with self.changed:
            old = self._objects.get(key[0], {}).pop((key[1], key[2]), None)
            if old is None:
                return None
            self.version += 1
            last = {**old, "metadata": {**old["metadata"], "resourceVersion": str(self.version)}}
            change = Change(self.version, "DELETED", last, old)
            self._record(change)
        self._notify(change)
        return last

    def compact(self) -> None:
        with self.changed:
            self._history.clear()
            self.oldest_replayable = self.version

    def subscribe(self, callback: Callable[[str, dict], None]) -> None:
        with self.changed:
            self._subscribers.append(callback)

    def unsubscribe(self, callback: Callable[[str, dict], None]) -> None:
        with self.changed:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

    def _record(self, change: Change) -> None:
        self._history.append(change)
        while len(self._history) > self._history_limit:
            self.oldest_replayable = self._history.popleft().version
        self.changed.notify_all()

    def _notify(self, change: Change) -> None:
        # Outside the store's critical section in spirit: subscribers may call back into the store.
        with self.changed:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            callback(change.type, copy.deepcopy(change.obj))

