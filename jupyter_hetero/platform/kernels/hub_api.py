"""The hub's REST API as the hetero service calls it, with its own service token (a hub-managed service
finds ``JUPYTERHUB_API_URL`` and ``JUPYTERHUB_API_TOKEN`` in its environment).

    hub = HubApi.from_environ(os.environ)      # None outside a hub
    await hub.stop_server("alice", "")         # her default server; needs the service's `servers` scope

The idle rules use it to stop a user's server they cull: the hub stops it as if the user had, and its
spawner gives the devices back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from tornado import httpclient

__all__ = ["HubApi"]


@dataclass(frozen=True)
class HubApi:
    url: str  # e.g. http://127.0.0.1:8081/hub/api
    token: str

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> HubApi | None:
        url, token = environ.get("JUPYTERHUB_API_URL"), environ.get("JUPYTERHUB_API_TOKEN")
        return cls(url.rstrip("/"), token) if url and token else None

    async def stop_server(self, user: str, server_name: str = "") -> None:
        """Ask the hub to stop one of ``user``'s servers; done when the hub has it stopping or stopped."""
        path = f"users/{quote(user, safe='')}/" + (f"servers/{quote(server_name, safe='')}" if server_name else "server")
        request = httpclient.HTTPRequest(f"{self.url}/{path}", method="DELETE", request_timeout=30,
                                         headers={"Authorization": f"token {self.token}"})
        response = await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
        # 202: stopping; 204: stopped; 400: "not running" (stopped meanwhile).
        if response.code not in (202, 204, 400):
            try:
                message = json.loads(response.body or b"{}").get("message")
            except ValueError:
                message = None
            raise RuntimeError(f"the hub did not stop {user}'s server {server_name!r}: {response.code} "
                               f"{message or response.reason}")
