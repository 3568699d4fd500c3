"""In a JupyterHub user's server: every hetero API call goes to the hub's one hetero service, as this user.

The panel and the magics call ``/hetero/api/v1/...`` on their own server as everywhere; here that
server has no scheduler of its own and passes each call on, method, query, body and language
unchanged, with the server's hub token (the user's, scoped to reach the service), and relays the
answer as it comes (a followed log included). A service's endpoint, ``/hetero/endpoints/<name>/...``,
goes the same way. The service decides who the user is and what they may do.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import httpclient

from .base import API_PREFIX, Relay

__all__ = ["HubService", "find_service_url", "forward_handlers"]

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_RELAYED_HEADERS = frozenset({"content-type", "content-disposition", "cache-control"})


@dataclass(frozen=True)
class HubService:
    """Where the hub's hetero service answers, and the token this server reaches it with."""

    url: str  # e.g. http://hub:8081/services/hetero/
    token: str

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
        headers = {"Authorization": f"token {self.service.token}"}
        for name in ("Content-Type", "Accept-Language", "Accept"):
            if name in self.request.headers:
                headers[name] = self.request.headers[name]
        started: list[bool] = []

        def header(line: str) -> None:
            # The status line and each header of the service's answer, before its body.
            line = line.strip()
            if line.startswith("HTTP/"):
                self.set_status(int(line.split()[1]))
            elif ":" in line:
                name, _, value = line.partition(":")
                if name.strip().lower() in _RELAYED_HEADERS:
                    self.set_header(name.strip(), value.strip())

        def relay(chunk: bytes) -> None:
            started.append(True)
            self.write(chunk)
            self.flush()

        request = httpclient.HTTPRequest(
            self.service.at(path, self.request.query), method=method, headers=headers,
            body=self.request.body if method in _BODY_METHODS else None, allow_nonstandard_methods=True,
            header_callback=header, streaming_callback=relay, request_timeout=3600, connect_timeout=10,
        )
        try:
            await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
        except OSError as exc:
            if started:
                return  # the answer was under way: it ends where the connection did
            self.set_status(502)
            self.set_header("Content-Type", "application/json")
            self.write(json.dumps({"message": f"the hub's hetero service did not answer: {exc}",
                                   "message_zh": f"JupyterHub 的 hetero 服务没有响应：{exc}",
                                   "reason": "service-unreachable"}))
        self.finish()


forward_handlers = [(rf"/((?:{API_PREFIX}|hetero/endpoints)/.*)", ForwardHandler)]
