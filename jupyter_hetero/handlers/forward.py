"""In a JupyterHub user's server: every hetero API call goes to the hub's one hetero service, as this user.

The panel and the magics call ``/hetero/api/v1/...`` on their own server as everywhere; here that
server has no scheduler of its own and passes each call on, method, query, body and language
unchanged, with the server's hub token (the user's, scoped to reach the service), and relays the
answer as it comes (a followed log included). A service's endpoint, ``/hetero/endpoints/<tenant>/<name>/...``,
goes the same way. The service decides who the user is and what they may do.

While the service restarts (JupyterHub starts a managed service again only at its next poll of the process,
every 30 s) a call is tried again for ``HeteroApp.service_retry_seconds``, then answered 502
``service-unreachable``; a call the service may have received when the connection broke is never sent twice
unless it is a GET or a submission (502 ``outcome-unknown``), and nothing is sent again once an answer began. A
submission goes with an Idempotency-Key (the caller's, or one made here), the same on every try, so that the
service stores it once however many tries reach it; when its window ends after a try that may have reached the
service, the answer is ``outcome-unknown`` (sent again with the same key, it is stored once), never
``service-unreachable``.
"""

from __future__ import annotations

import asyncio
import errno
import json
import time
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import httpclient

from ..i18n import N_, Message
from .base import API_PREFIX, IDEMPOTENCY_KEY, Relay

__all__ = ["Delivery", "HubService", "delivery", "find_service_url", "forward_handlers"]

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_RELAYED_HEADERS = frozenset({"content-type", "content-disposition", "cache-control"})
# Methods whose repeat changes nothing: one the service may have received is sent again.
_REPEATABLE = frozenset({"GET", "HEAD", "OPTIONS"})
# Calls the service stores once per Idempotency-Key: sent again with the same key.
_KEYED = frozenset({("POST", f"{API_PREFIX}/workloads")})
# Errors a connection can only meet before it is made: nothing reached the service.
_UNREACHED_ERRNOS = frozenset({errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EADDRNOTAVAIL})
_FIRST_BACKOFF_S, _MAX_BACKOFF_S = 0.1, 0.5

UNREACHABLE = N_("The shared hetero service is not answering: it is restarting or down (tried for {seconds:.0f} s). "
                 "The panel retries on its own; try again in a moment.")
OUTCOME_UNKNOWN = N_("The connection to the shared hetero service broke after this request was sent, so it may or "
                     "may not have been done: check your work list before you try again.")


class Delivery(IntEnum):
    """How far a call that got no answer went, ordered by what is unknown about it."""

    UNREACHED = 0  # refused or unroutable at connect: the service never saw it, any method may go again
    MAYBE_RECEIVED = 1  # cut off after the connection was made: the service may have acted on it


def delivery(exc: BaseException) -> Delivery:
    """How far the call that raised ``exc`` (from tornado's HTTP client, before any answer) went."""
    if isinstance(exc, ConnectionRefusedError) or (isinstance(exc, OSError) and exc.errno in _UNREACHED_ERRNOS):
        return Delivery.UNREACHED
    if isinstance(exc, httpclient.HTTPClientError) and "while connecting" in str(exc):
        return Delivery.UNREACHED  # tornado's "Timeout while connecting"
    # A reset, a broken pipe, a stream closed, a timeout during the request: all after connecting, when the
    # request may have been sent whole.
    return Delivery.MAYBE_RECEIVED


@dataclass(frozen=True)
class HubService:
    """Where the hub's hetero service answers, and the token this server reaches it with."""

    url: str  # e.g. http://hub:8081/services/hetero/
    token: str
    retry_seconds: float = 10.0  # how long a call the service cannot be reached for is tried again

    def endpoint(self, path: str, query: str) -> str:
        """The service's API at ``path``."""
        return self.at(f"{API_PREFIX}/{path}", query)

    def at(self, path: str, query: str) -> str:
        """The service's URL of ``path`` (``hetero/api/v1/...``, ``hetero/endpoints/...``)."""
        return f"{self.url.rstrip('/')}/{path}" + (f"?{query}" if query else "")


def find_service_url(environ: Mapping[str, str], name: str = "hetero", timeout: float = 5.0) -> str:
    """Where the hub's ``name`` service answers, asked of the hub's API with the server's token (which needs
    ``read:services!service=<name>``); "" outside a hub, or when the hub has no such service or does not say."""
    api, token = environ.get("JUPYTERHUB_API_URL"), environ.get("JUPYTERHUB_API_TOKEN")
    if not api or not token:
        return ""
    request = urllib.request.Request(f"{api.rstrip('/')}/services/{name}", headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            service = json.loads(response.read())
    except (OSError, ValueError):
        return ""
    url, prefix = service.get("url"), service.get("prefix") or f"/services/{name}/"
    return f"{url.rstrip('/')}{prefix}" if url else ""


@dataclass
class _Answer:
    """How far the service's answer to one try got."""

    began: bool = False  # its status line came
    relayed: bool = False  # some of its body went on to the caller


class ForwardHandler(Relay, ExtensionHandlerMixin, APIHandler):
    auth_resource = "hetero"

    @property
    def _track_activity(self) -> bool:
        # The panel's polling of status and queues is not the user's activity; anything that changes work is.
        return self.request.method != "GET"

    @property
    def service(self) -> HubService:
        return self.settings["hetero_service"]

    async def relay(self, path: str) -> None:
        method = self.request.method
        keyed = (method, path) in _KEYED
        key = self.request.headers.get(IDEMPOTENCY_KEY) or (uuid.uuid4().hex if keyed else None)
        deadline = time.monotonic() + self.service.retry_seconds
        backoff, attempts = _FIRST_BACKOFF_S, 1
        perhaps_received = False  # a try of a keyed call broke after sending: the service may have done it
        while True:
            answer = _Answer()
            try:
                await httpclient.AsyncHTTPClient().fetch(self._request(path, answer, key), raise_error=False)
            except (OSError, httpclient.HTTPClientError) as exc:
                if answer.began:
                    # The service answered (its status, perhaps some of its body): never asked again. Once some of
                    # the body went on, the answer ends where the connection did.
                    self.log.warning("hetero service: %s %s broke off mid-answer: %s", method, path, exc)
                    if not answer.relayed:
                        self._refuse(Message(OUTCOME_UNKNOWN), "outcome-unknown", exc)
                    return
                if delivery(exc) is Delivery.MAYBE_RECEIVED:
                    if method not in _REPEATABLE and not keyed:
                        self.log.warning("hetero service: %s %s cut off after sending, not repeated: %s", method, path,
                                         exc)
                        self._refuse(Message(OUTCOME_UNKNOWN), "outcome-unknown", exc)
                        return
                    perhaps_received = True
                if time.monotonic() + backoff > deadline:
                    self.log.warning("hetero service: %s %s unreachable after %d attempts: %s", method, path,
                                     attempts, exc)
                    if perhaps_received and method not in _REPEATABLE:
                        # An earlier try may have been done (a submission stored before the service died): saying
                        # it was never sent would be wrong; sent again with its key, it is stored once.
                        self._refuse(Message(OUTCOME_UNKNOWN), "outcome-unknown", exc)
                    else:
                        self._refuse(Message(UNREACHABLE, seconds=self.service.retry_seconds), "service-unreachable",
                                     exc)
                    return
                await asyncio.sleep(backoff)
                backoff, attempts = min(backoff * 2, _MAX_BACKOFF_S), attempts + 1
                continue
            if attempts > 1:
                self.log.info("hetero service: %s %s answered after %d attempts", method, path, attempts)
            self.finish()
            return

    def _request(self, path: str, answer: _Answer, key: str | None) -> httpclient.HTTPRequest:
        """One try of the call to the service, relaying its answer as it comes, and noting how far in ``answer``."""
        method = self.request.method
        headers = {"Authorization": f"token {self.service.token}"}
        for name in ("Content-Type", "Accept-Language", "Accept"):
            if name in self.request.headers:
                headers[name] = self.request.headers[name]
        if key is not None:
            headers[IDEMPOTENCY_KEY] = key

        def header(line: str) -> None:
            # The status line and each header of the service's answer, before its body.
            line = line.strip()
            if line.startswith("HTTP/"):
                answer.began = True
                self.set_status(int(line.split()[1]))
            elif ":" in line:
                name, _, value = line.partition(":")
                if name.strip().lower() in _RELAYED_HEADERS:
                    self.set_header(name.strip(), value.strip())

        def relay(chunk: bytes) -> None:
            answer.relayed = True
            self.write(chunk)
            self.flush()

        return httpclient.HTTPRequest(
            self.service.at(path, self.request.query), method=method, headers=headers,
            body=self.request.body if method in _BODY_METHODS else None, allow_nonstandard_methods=True,
            header_callback=header, streaming_callback=relay, request_timeout=3600, connect_timeout=10,
        )

    def _refuse(self, message: Message, reason: str, exc: BaseException) -> None:
        """A 502 in English and Chinese: the service could not be reached, or what it did is unknown."""
        self.clear()  # whatever a broken try set (its status, its headers)
        self.set_status(502)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": message.text("en"), "message_zh": message.text("zh"), "reason": reason,
                                "detail": str(exc)}))


forward_handlers = [(rf"/((?:{API_PREFIX}|hetero/endpoints)/.*)", ForwardHandler)]
