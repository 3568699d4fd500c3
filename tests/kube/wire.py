"""The HTTP side of the fake API server: routing, bearer tokens, Status errors, chunked watches and logs."""

from __future__ import annotations

import base64
import json
import re
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from tests.kube.selectors import SelectorError, field_selector, label_selector
from tests.kube.store import Change, Expired

if TYPE_CHECKING:
    from tests.kube.apiserver import FakeApiServer

__all__ = ["ApiError", "ApiHandler", "status"]

_PATH = re.compile(
    r"^/api/v1(?:/namespaces/(?P<namespace>[^/]+))?/(?P<resource>[a-z]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[a-z]+))?/?$"
)
_TRUE = ("true", "True", "1")
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_LOG_POLL_S = 0.05
_LONG_LINE = 64 * 1024


def status(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    """A ``Status`` object as the API answers failures."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


class ApiError(Exception):
    """A failure the API answers with a ``Status`` body."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    @property
    def body(self) -> dict:
        return status(self.code, self.reason, self.message, self.details)

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        return cls(400, "BadRequest", message)

    @classmethod
    def not_found(cls, resource: str, name: str) -> ApiError:
        return cls(404, "NotFound", f'{resource} "{name}" not found', {"name": name, "kind": resource})

    @classmethod
    def conflict(cls, kind: str, name: str, why: str) -> ApiError:
        plural = kind.lower() + "s"
        return cls(409, "Conflict", f'Operation cannot be fulfilled on {plural} "{name}": {why}',
                   {"name": name, "kind": plural})

    @classmethod
    def invalid(cls, kind: str, name: str, why: str) -> ApiError:
        return cls(422, "Invalid", f'{kind} "{name}" is invalid: {why}', {"name": name, "kind": kind})


class ApiHandler(BaseHTTPRequestHandler):
    """One connection; HTTP/1.1 keep-alive, so a client's pooled connections are reused."""

    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"

    @property
    def api(self) -> FakeApiServer:
        return self.server.api  # type: ignore[attr-defined]

    def setup(self) -> None:
        super().setup()
        self.api.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.api.track(self.connection, False)

    def log_message(self, format, *args) -> None:
        """Quiet: a test's output is for the test."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # --- routing ---------------------------------------------------------------------------------
    def _dispatch(self, method: str) -> None:
        from tests.kube.apiserver import KINDS, NAMESPACED

        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query, keep_blank_values=True).items()}
        body = self._read_body()
        try:
            if self.headers.get("Authorization") != f"Bearer {self.api.token}":
                raise ApiError(401, "Unauthorized", "Unauthorized")
            if url.path == "/version":
                self._send_json(200, {"major": "1", "minor": "33", "gitVersion": "v1.33.0-fake", "platform": "linux/amd64"})
                return
            match = _PATH.match(url.path)
            kind = KINDS.get(match.group("resource")) if match else None
            if kind is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            namespace, name, sub = match.group("namespace") or "", match.group("name"), match.group("sub") or ""
            if kind not in NAMESPACED and namespace:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if sub and (sub not in ("status", "log") or (sub == "log" and kind != "Pod")):
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if method == "GET":
                verb = "get" if name else ("watch" if query.get("watch") in _TRUE else "list")
            elif method == "POST" and name is None:
                verb = "create"
            elif method != "POST" and name is not None:
                verb = _VERBS[method]
            else:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            self.api.requests.append((verb, match.group("resource"), sub))
            fault = self.api.fault_for(verb, match.group("resource"))
            if fault is not None:
                time.sleep(fault[1])
                if fault[0]:
                    raise ApiError(fault[0], "InternalError" if fault[0] >= 500 else "Injected",
                                   f"injected fault: {verb} {match.group('resource')} answers {fault[0]}")
            named = name or ((body.get("metadata") or {}).get("name") if isinstance(body, dict) else None) or ""
            refusal = self.api.refusal_for(verb, match.group("resource"), namespace, named)
            if refusal is not None:
                raise refusal
            self._serve(verb, kind, namespace, name, sub, query, body)
        except ApiError as error:
            self._send_json(error.code, error.body)
        except OSError:  # the client went away (or the server is stopping)
            self.close_connection = True

    def _read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return ValueError("the request body is not JSON")

    def _serve(self, verb, kind, namespace, name, sub, query, body) -> None:
        if isinstance(body, ValueError):
            raise ApiError.bad_request(str(body))
        api = self.api
        if verb == "list":
            self._send_json(200, self._list(kind, namespace, query))
        elif verb == "watch":
            self._watch(kind, namespace, query)
        elif verb == "get" and sub == "log":
            self._log(namespace, name, query)
        elif verb == "get":
            self._send_json(200, api._existing(kind, namespace, name))
        elif verb == "create":
            if not isinstance(body, dict):
                raise ApiError.bad_request("the request body must be an object")
            self._send_json(201, api.answered(verb, kind.lower() + "s", api.create(kind, namespace, body)))
        elif verb == "update":
            if not isinstance(body, dict):
                raise ApiError.bad_request("the request body must be an object")
            self._send_json(200, api.replace(kind, namespace, name, body, sub))
        elif verb == "patch":
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            self._send_json(200, api.patch(kind, namespace, name, body, content_type, sub))
        elif verb == "delete":
            options = dict(body) if isinstance(body, dict) else {}
            if "gracePeriodSeconds" in query:
                options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
            deleted = api.delete(kind, namespace, name, options)
            if kind in ("Secret", "Event"):
                metadata = deleted["metadata"]
                deleted = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                           "details": {"name": metadata["name"], "kind": kind.lower() + "s", "uid": metadata["uid"]}}
            self._send_json(200, deleted)

    # --- list and watch --------------------------------------------------------------------------
    def _matcher(self, kind: str, namespace: str, query: dict):
        try:
            labels, fields = label_selector(query.get("labelSelector")), field_selector(query.get("fieldSelector"))
        except SelectorError as error:
            raise ApiError.bad_request(str(error)) from None

        def matches(obj: dict) -> bool:
            return (
                obj["kind"] == kind
                and (not namespace or obj["metadata"].get("namespace") == namespace)
                and labels(obj)
                and fields(obj)
            )

        return matches

    def _list(self, kind: str, namespace: str, query: dict) -> dict:
        matches = self._matcher(kind, namespace, query)
        store = self.api.store
        with store.changed:
            version = store.version
            wanted = query.get("resourceVersion")
            if query.get("resourceVersionMatch") == "Exact" and wanted and int(wanted) != version:
                oldest = store.oldest_replayable
                raise ApiError(410, "Expired", f"too old resource version: {wanted} ({oldest})")
            items = [obj for obj in store.items(kind, namespace or None) if matches(obj)]
            metadata = {"resourceVersion": str(version)}
            # Pages continue after the last name served: an object removed meanwhile never shifts one out.
            token = query.get("continue")
            if token:
                try:
                    after = json.loads(base64.urlsafe_b64decode(token))
                except ValueError:
                    raise ApiError.bad_request("continue key is not valid") from None
                metadata["resourceVersion"] = after["rv"]
                items = [o for o in items if _sort_key(o) > tuple(after["after"])]
            limit = int(query.get("limit") or 0)
            if limit and len(items) > limit:
                rest = len(items) - limit
                items = items[:limit]
                cursor = {"rv": metadata["resourceVersion"], "after": list(_sort_key(items[-1]))}
                metadata["continue"] = base64.urlsafe_b64encode(json.dumps(cursor).encode()).decode()
                metadata["remainingItemCount"] = rest
            body = {"kind": f"{kind}List", "apiVersion": "v1", "metadata": metadata, "items": items}
            return body

    def _watch(self, kind: str, namespace: str, query: dict) -> None:
        api, store = self.api, self.api.store
        matches = self._matcher(kind, namespace, query)
        # Unset or 0: the API server's own limit (30 to 60 minutes there; stop() ends these here).
        timeout = float(query.get("timeoutSeconds") or 0) or 1800.0
        bookmarks = query.get("allowWatchBookmarks") in _TRUE
        deadline = time.monotonic() + timeout
        wanted = query.get("resourceVersion") or "0"
        try:
            cursor = int(wanted)
        except ValueError:
            raise ApiError.bad_request(f"invalid resource version: {wanted}") from None
        with store.changed:
            epoch = api.watch_epoch
            if cursor == 0:  # "any": the current state as ADDED events, then live changes
                initial = [{"type": "ADDED", "object": obj} for obj in store.items(kind, namespace or None) if matches(obj)]
                cursor = store.version
            else:
                initial = []
        self._start_chunked("application/json")
        self.close_connection = True
        self._send_events(initial)
        next_bookmark = time.monotonic() + api.bookmark_interval if bookmarks else None
        while True:
            outcome, payload = self._next(cursor, epoch, deadline, next_bookmark)
            if outcome == "end":
                break
            if outcome == "expired":
                self._send_events([{"type": "ERROR", "object": status(410, "Expired", payload)}])
                break
            if outcome == "bookmark":
                cursor = payload
                mark = {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": str(cursor)}}
                self._send_events([{"type": "BOOKMARK", "object": mark}])
                next_bookmark = time.monotonic() + api.bookmark_interval
                continue
            self._send_events([event for change in payload if (event := _event_for(change, matches))])
            cursor = payload[-1].version
        self._end_chunked()

    def _next(self, cursor: int, epoch: int, deadline: float, next_bookmark: float | None):
        """Wait for what a watch at ``cursor`` sends next: ("changes", [...]), ("bookmark", version),
        ("expired", message), or ("end", None) at its deadline, on drop_watches() or when the server stops."""
        api, store = self.api, self.api.store
        with store.changed:
            while True:
                now = time.monotonic()
                if api.stopping or epoch != api.watch_epoch or now >= deadline:
                    return "end", None
                try:
                    changes = store.changes_after(cursor)
                except Expired as expired:
                    return "expired", str(expired)
                if changes:
                    return "changes", changes
                if next_bookmark is not None and now >= next_bookmark:
                    return "bookmark", max(cursor, store.version)
                wake = deadline if next_bookmark is None else min(deadline, next_bookmark)
                store.changed.wait(wake - now)

    def _send_events(self, events: list[dict]) -> None:
        if events:
            self._write_chunk(b"".join(json.dumps(event).encode() + b"\n" for event in events))

    # --- logs ------------------------------------------------------------------------------------
    def _log(self, namespace: str, name: str, query: dict) -> None:
        api = self.api
        pod = api._existing("Pod", namespace, name)
        containers = [c["name"] for c in pod["spec"].get("containers") or []]
        container = query.get("container") or (containers[0] if containers else "")
        if container not in containers:
            raise ApiError.bad_request(f"container {container} is not valid for pod {name}")
        if query.get("previous") in _TRUE:  # restartPolicy Never: there is never a previous container
            raise ApiError.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        path = api.log_path(namespace, name)
        if path is None or not path.exists():
            statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
            waiting = ((statuses[0].get("state") or {}).get("waiting") or {}).get("reason") or "ContainerCreating"
            raise ApiError.bad_request(f'container "{container}" in pod "{name}" is waiting to start: {waiting}')
        tail = int(query["tailLines"]) if query.get("tailLines") else None
        if query.get("follow") not in _TRUE:
            data = _tail(path.read_bytes(), tail)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self._start_chunked("text/plain")
        self.close_connection = True
        uid = pod["metadata"]["uid"]
        with path.open("rb") as log:
            pending = _tail(log.read(), tail)
            while True:
                finished = _container_finished(api.store.get("Pod", namespace, name), uid) or api.stopping
                pending += log.read()
                # Only whole lines go out while the container runs: a chunk never splits a UTF-8 character.
                cut = pending.rfind(b"\n") + 1
                if not cut and len(pending) > _LONG_LINE:
                    cut = _utf8_boundary(pending, _LONG_LINE)
                if finished:
                    cut = len(pending)
                if cut:
                    self._write_chunk(pending[:cut])
                    pending = pending[cut:]
                if finished:
                    break
                time.sleep(_LOG_POLL_S)
        self._end_chunked()

    # --- responses -------------------------------------------------------------------------------
    def _send_json(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code, HTTPStatus(code).phrase if code in HTTPStatus._value2member_map_ else None)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_chunked(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        # A stream ends with its connection, so a client's pool never reuses one the server closes.
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    def _end_chunked(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass


def _sort_key(obj: dict) -> tuple[str, str]:
    return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _event_for(change: Change, matches) -> dict | None:
    """The watch event a change makes under a selector: an object moving in or out is ADDED or DELETED."""
    now = matches(change.obj)
    before = change.old is not None and matches(change.old)
    if change.type == "ADDED":
        kind = "ADDED" if now else None
    elif change.type == "DELETED":
        kind = "DELETED" if before else None
    else:
        kind = {(True, True): "MODIFIED", (True, False): "ADDED", (False, True): "DELETED"}.get((now, before))
    return {"type": kind, "object": change.obj} if kind else None


def _tail(data: bytes, lines: int | None) -> bytes:
    if lines is None:
        return data
    if lines <= 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


def _utf8_boundary(data: bytes, limit: int) -> int:
    cut = limit
    while cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return cut


def _container_finished(pod: dict | None, uid: str) -> bool:
    if pod is None or pod["metadata"]["uid"] != uid:
        return True
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return bool(statuses) and "terminated" in (statuses[0].get("state") or {})
