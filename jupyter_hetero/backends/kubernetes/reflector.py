"""A list/watch cache of one kind of Kubernetes object, kept by a worker thread.

    nodes = Reflector(list_call=core.list_node, kind="Node", on_change=changed)
    nodes.start(); nodes.wait_synced(30)
    nodes.items()          # {"gpu-a1": {...raw Node JSON...}}

A `Reflector` lists one kind, then watches from the list's resourceVersion, as client-go's reflector
does: events older than what the cache holds are ignored, BOOKMARKs move the version, a 410 Gone
re-lists and reports what changed meanwhile as synthetic events, a broken connection reconnects
after a jittered exponential backoff, and a periodic re-list (`resync_s`) repairs anything a watch
might have missed. Objects stay raw JSON dicts (`_preload_content=False`): building `V1Node` models
costs more than the whole list at 5,000 nodes. Nothing here runs on the server's event loop.
`cluster.py` puts four of them together: nodes, our pods, their events and the pods we did not place.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from .errors import ApiForbidden, brief, missing_permission

__all__ = ["Backoff", "Reflector", "key_of", "rv_order"]

log = logging.getLogger(__name__)

_GONE = 410


class Backoff:
    """Exponential delays with full jitter, capped, reset once a watch has been healthy.

        backoff = Backoff(base_s=0.5, cap_s=30, sleep=recorded.append)
        backoff.pause(stop)      # waits 0.5 * 2**failures seconds (jittered), or until stop is set
    """

    def __init__(self, *, base_s: float = 0.5, cap_s: float = 30.0, factor: float = 2.0, jitter: float = 0.5,
                 healthy_s: float = 10.0, sleep: Callable[[float], object] | None = None,
                 clock: Callable[[], float] = time.monotonic, rand: Callable[[], float] = random.random):
        self.base_s, self.cap_s, self.factor, self.jitter, self.healthy_s = base_s, cap_s, factor, jitter, healthy_s
        self.failures = 0
        self.clock = clock
        self._sleep = sleep
        self._rand = rand

    def next_delay(self) -> float:
        """The delay before the next try; each call counts one more failure."""
        raw = min(self.cap_s, self.base_s * self.factor ** self.failures)
        self.failures += 1
        # Jitter spreads the reconnects of many servers after an API server restart.
        return raw * (1 - self.jitter * self._rand())

    def reset(self) -> None:
        self.failures = 0

    def pause(self, stop: threading.Event) -> None:
        delay = self.next_delay()
        if self._sleep is not None:
            self._sleep(delay)
        else:
            stop.wait(delay)


class _Gone(Exception):
    """The version we asked for is older than the server's history (410): only a re-list helps."""


def _rv(obj: dict) -> str:
    return obj.get("metadata", {}).get("resourceVersion", "")


def rv_order(obj: dict) -> tuple[int, str]:
    """An object's place in the order the server wrote it: its resourceVersion, as a number where it is one."""
    version = _rv(obj)
    return (int(version), "") if version.isdigit() else (0, version)


def _newer(candidate: str, held: str) -> bool:
    # resourceVersions are opaque strings by contract but etcd's revisions in practice; compare them
    # as numbers when both are, and trust the server's order otherwise.
    if candidate.isdigit() and held.isdigit():
        return int(candidate) > int(held)
    return candidate != held


def key_of(obj: dict) -> str:
    meta = obj.get("metadata", {})
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


class Reflector:
    """One kind's cache: list, then watch from the list's version, in a daemon thread."""

    def __init__(self, *, list_call: Callable[..., Any], kind: str, label_selector: str | None = None,
                 field_selector: str | None = None, timeout_s: int = 300, resync_s: float = 600,
                 backoff: Backoff | None = None, on_change: Callable[[str, dict], None] | None = None,
                 trim: Callable[[dict], dict] | None = None, keep: Callable[[dict], bool] | None = None,
                 group_by: Callable[[dict], str] | None = None, keep_latest: int = 0,
                 order_by: Callable[[dict], Any] = rv_order, page_size: int = 500):
        self.kind = kind
        self.label_selector, self.field_selector = label_selector, field_selector
        self.timeout_s, self.resync_s, self.page_size = timeout_s, resync_s, page_size
        self.backoff = backoff or Backoff()
        self.on_change = on_change
        self._list_call = list_call
        self._trim, self._keep = trim, keep
        # Bounded groups (events per pod): only the `keep_latest` newest of each group stay cached.
        self._group_by, self._keep_latest, self._order_by = group_by, keep_latest, order_by
        self._groups: dict[str, set[str]] = {}
        self._items: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._response: Any = None
        self._thread: threading.Thread | None = None
        self._listed_at = 0.0
        self.version = 0
        self.resource_version = ""
        # Why the API refuses this cache its list or watch (an RBAC 403), until a list succeeds: start-up
        # reports it instead of waiting out its timeout for an answer that came long ago.
        self.refused: ApiForbidden | None = None
        self._verb = "list"
        self.stats = {"lists": 0, "watches": 0, "relists_410": 0, "resyncs": 0, "reconnects": 0, "events": 0,
                      "bookmarks": 0, "ignored": 0, "errors": 0, "callback_errors": 0}

    # -- the public surface ------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"hetero-reflector-{self.kind}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._close_response()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    def items(self) -> dict[str, dict]:
        """A snapshot of the cache (a new dict; the objects are shared and never changed in place)."""
        with self._lock:
            return dict(self._items)

    def get(self, key: str) -> dict | None:
        return self._items.get(key)

    def group(self, name: str) -> list[dict]:
        """The cached objects of one group (the events of one pod), oldest first."""
        with self._lock:
            found = [self._items[key] for key in self._groups.get(name, ()) if key in self._items]
        return sorted(found, key=self._order_by)

    # -- the loop ----------------------------------------------------------------------------------
    def _run(self) -> None:
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._relist()
                    need_list = False
                need_list = self._watch()
            except _Gone:
                self.stats["relists_410"] += 1
                need_list = True
            except Exception as error:  # noqa: BLE001 - the thread must outlive any one failure
                if self._stop.is_set():
                    break
                self.stats["errors"] += 1
                self.stats["reconnects"] += 1
                refused = missing_permission(error, verb=self._verb, resource=f"{self.kind.lower()}s",
                                             namespace=None) if isinstance(error, ApiException) else None
                if refused is not None:
                    # Kept trying: a permission granted later takes effect without a restart.
                    self.refused = refused
                    log.error("reflector kind=%s: %s", self.kind, refused)
                else:
                    log.warning("reflector kind=%s list/watch failed, retrying: %s", self.kind, brief(error))
                self.backoff.pause(self._stop)
            finally:
                self._response = None

    def _relist(self) -> None:
        self._verb = "list"
        fresh: dict[str, dict] = {}
        for obj in self._list_pages():
            kept = self._admit(obj)
            if kept is not None:
                fresh[key_of(kept)] = kept
        changes: list[tuple[str, dict]] = []
        with self._lock:
            if self._keep_latest:
                self._groups = {}
                for key, obj in sorted(fresh.items(), key=lambda kv: self._order_by(kv[1])):
                    self._group_add(key, obj, fresh)
            for key, obj in fresh.items():
                held = self._items.get(key)
                if held is None:
                    changes.append(("ADDED", obj))
                elif _rv(held) != _rv(obj):
                    changes.append(("MODIFIED", obj))
            changes.extend(("DELETED", obj) for key, obj in self._items.items() if key not in fresh)
            self._items = fresh
            if changes:
                self.version += 1
        self.stats["lists"] += 1
        self.refused = None
        self._listed_at = self.backoff.clock()
        self._synced.set()
        self._emit(changes)

    def _list_pages(self) -> Iterator[dict]:
        # A paged list is one consistent snapshot; its first page's version is where the watch starts.
        token, version = None, None
        while True:
            kwargs: dict[str, Any] = {"limit": self.page_size, "_request_timeout": (10, 120)}
            if token:
                kwargs["_continue"] = token
            response = self._call(**kwargs)
            try:
                body = json.loads(response.data)
            finally:
                response.release_conn()
            meta = body.get("metadata") or {}
            version = version or meta.get("resourceVersion", "")
            yield from body.get("items") or ()
            token = meta.get("continue")
            if not token:
                break
        self.resource_version = version or ""

    def _watch(self) -> bool:
        """One watch; True when the cache must be re-listed (resync due), False to watch again."""
        remaining = self.resync_s - (self.backoff.clock() - self._listed_at)
        if remaining <= 0:
            self.stats["resyncs"] += 1
            return True
        # The server ends the watch at `timeout_seconds`: capping it by the resync keeps resyncs on time.
        seconds = max(1, int(min(self.timeout_s, remaining)))
        started = self.backoff.clock()
        self._verb = "watch"
        try:
            self._response = self._call(watch=True, resource_version=self.resource_version, timeout_seconds=seconds,
                                        allow_watch_bookmarks=True, _request_timeout=(10, seconds + 30))
        except ApiException as error:
            if error.status == _GONE:
                raise _Gone from error
            raise
        self.stats["watches"] += 1
        if self._stop.is_set():   # stop() ran while the call was connecting, before it could close this
            self._close_response()
        received = 0
        try:
            for line in _lines(self._response):
                if not received:
                    self.backoff.reset()   # the server answers: the next trouble starts from the base delay
                received += 1
                self._apply_line(line)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as error:
            if self._stop.is_set():
                return False
            log.info("reflector kind=%s watch broke: %s", self.kind, brief(error))
        finally:
            # Closed, not returned to the pool: servers and proxies often close a watch's connection,
            # and a new connection every `timeout_s` costs nothing.
            self._close_response()
        if self._stop.is_set():
            return False
        lasted = self.backoff.clock() - started
        if lasted >= self.backoff.healthy_s:
            self.backoff.reset()
        if lasted < seconds - 1:
            # Ended before its time: the server (or something between) dropped it; do not hammer it.
            self.stats["reconnects"] += 1
            self.backoff.pause(self._stop)
        return False

    def _apply_line(self, line: bytes) -> None:
        try:
            event = json.loads(line)
            kind, obj = event["type"], event["object"]
        except (ValueError, KeyError, TypeError):
            self.stats["ignored"] += 1
            log.warning("reflector kind=%s skipped a malformed watch line", self.kind)
            return
        if kind == "ERROR":
            if obj.get("code") == _GONE:
                raise _Gone(obj.get("message", ""))
            raise ValueError(f"watch error {obj.get('code')}: {obj.get('message')}")
        if kind == "BOOKMARK":
            self.stats["bookmarks"] += 1
            self.resource_version = _rv(obj) or self.resource_version
            return
        self.stats["events"] += 1
        self.resource_version = _rv(obj) or self.resource_version
        self._emit(self._apply(kind, obj))

    def _apply(self, kind: str, obj: dict) -> list[tuple[str, dict]]:
        key = key_of(obj)
        kept = None if kind == "DELETED" else self._admit(obj)
        with self._lock:
            held = self._items.get(key)
            if held is not None and not _newer(_rv(obj), _rv(held)):
                self.stats["ignored"] += 1   # a replay of what the cache already holds
                return []
            if kept is None:
                if held is None:
                    return []
                del self._items[key]
                self._group_discard(key, held)
                self.version += 1
                return [("DELETED", held if kind != "DELETED" else obj)]
            self._items[key] = kept
            if self._keep_latest:
                self._group_add(key, kept, self._items)
                if key not in self._items:
                    return []   # older than the group's newest `keep_latest`
            self.version += 1
            return [("MODIFIED" if held is not None else "ADDED", kept)]

    def _admit(self, obj: dict) -> dict | None:
        """The object as cached (trimmed), or None when this reflector keeps no such object."""
        try:
            if self._keep is not None and not self._keep(obj):
                return None
            return self._trim(obj) if self._trim is not None else obj
        except Exception:  # a strange object must not stop the cache
            log.warning("reflector kind=%s cannot read %s; kept as sent", self.kind, key_of(obj), exc_info=True)
            return obj

    def _group_add(self, key: str, obj: dict, items: dict[str, dict]) -> None:
        group = self._groups.setdefault(self._group_by(obj), set())
        group.add(key)
        while len(group) > self._keep_latest:
            oldest = min(group, key=lambda k: self._order_by(items[k]))
            group.discard(oldest)
            del items[oldest]

    def _group_discard(self, key: str, obj: dict) -> None:
        if self._keep_latest:
            name = self._group_by(obj)
            group = self._groups.get(name, set())
            group.discard(key)
            if not group:
                self._groups.pop(name, None)

    def _emit(self, changes: list[tuple[str, dict]]) -> None:
        if self.on_change is None:
            return
        for kind, obj in changes:
            try:
                self.on_change(kind, obj)
            except Exception:
                self.stats["callback_errors"] += 1
                log.exception("reflector kind=%s change callback failed on %s", self.kind, key_of(obj))

    def _call(self, **kwargs: Any) -> Any:
        for name, value in (("label_selector", self.label_selector), ("field_selector", self.field_selector)):
            if value:
                kwargs[name] = value
        return self._list_call(_preload_content=False, **kwargs)

    def _close_response(self) -> None:
        response = self._response
        if response is None:
            return
        try:
            # shutdown() unblocks a read waiting in another thread; close() alone would wait for it.
            shutdown = getattr(response, "shutdown", None)
            if shutdown is not None:
                shutdown()
            response.close()
            response.release_conn()
        except Exception:  # closing is best effort
            log.debug("reflector kind=%s closing the watch failed", self.kind, exc_info=True)


def _lines(response: Any) -> Iterator[bytes]:
    """The JSON lines of a watch stream, whatever the chunking."""
    pending = b""
    for chunk in response.stream(amt=None, decode_content=False):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from (line for line in complete if line.strip())
    if pending.strip():
        yield pending

