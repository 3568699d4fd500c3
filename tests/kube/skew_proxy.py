"""A TLS proxy in front of the test control plane's API server that drops one field from the answers to one kind
of call: what a client meets when the API server is of another version than its models (a field its models hold
required, absent from what the server sends). Every call is made on the real API server; only the answer is changed.

```python
with SkewProxy(control_plane, drop=("POST", "/pods", "spec.containers")) as proxy:
    kubeconfig = proxy.kubeconfig(hetero_namespace.kubeconfig, tmp_path / "through-proxy")
```

It answers one request per connection (``Connection: close``), plain requests only: no watch goes through it.
"""

from __future__ import annotations

import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

import urllib3
import yaml

from tests.kube.control_plane import ControlPlane

__all__ = ["SkewProxy"]

_FORWARDED = ("Authorization", "Content-Type", "Accept", "User-Agent")


class SkewProxy:
    """Forwards every request to ``plane``'s API server; answers to ``drop = (method, path suffix, dotted field)``
    lose that field. ``changed`` counts the answers it changed."""

    def __init__(self, plane: ControlPlane, *, drop: tuple[str, str, str]):
        self.plane, self.drop = plane, drop
        self.changed = 0
        self._upstream = urllib3.PoolManager(ca_certs=str(plane.pki.ca_cert), cert_reqs="CERT_REQUIRED")
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(plane.pki.serving_cert, plane.pki.serving_key)  # names 127.0.0.1, signed by its CA
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, name="skew-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def kubeconfig(self, source: Path, target: Path) -> Path:
        """``source``'s kubeconfig with its cluster's server set to this proxy (same CA, same credentials)."""
        config = yaml.safe_load(source.read_text())
        for cluster in config["clusters"]:
            cluster["cluster"]["server"] = self.url
        target.write_text(yaml.safe_dump(config))
        return target

    def _answer(self, method: str, path: str, status: int, body: bytes) -> bytes:
        want_method, suffix, field = self.drop
        if method != want_method or not path.split("?", 1)[0].endswith(suffix) or status >= 300:
            return body
        obj = json.loads(body)
        *parents, last = field.split(".")
        held = obj
        for part in parents:
            held = held.get(part) or {}
        if held.pop(last, None) is not None:
            self.changed += 1
        return json.dumps(obj).encode()

    def _handler(self):
        proxy = self

        class Forward(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {name: self.headers[name] for name in _FORWARDED if self.headers.get(name)}
                answer = proxy._upstream.request(self.command, proxy.plane.url + self.path, body=body,
                                                 headers=headers, redirect=False, retries=False)
                data = proxy._answer(self.command, self.path, answer.status, answer.data)
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.headers.get("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward  # noqa: N815 - http.server's names

            def log_message(self, *_args) -> None:
                pass

        return Forward
