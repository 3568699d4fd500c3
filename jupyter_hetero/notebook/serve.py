"""A function as a model server: what ``%%hetero_serve`` runs in each replica.

    def predict(inputs):
        return [2 * x for x in inputs]

    serve(predict)      # listens on $HOST:$PORT: GET /health, POST <any path> {"inputs": ...} -> {"outputs": ...}

The standard library's threading HTTP server, nothing more: each replica answers its endpoint's
requests one thread each; a function that raises answers 500 with the error's text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["serve"]


def serve(function: Callable[[Any], Any], port: int | None = None, host: str | None = None) -> None:
    """Answer ``POST`` requests with ``function(body["inputs"])`` on ``host`` and ``port`` ($HOST and $PORT by
    default: the replica's address, loopback on one machine, its pod's IP on Kubernetes), forever."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body, default=str).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            if self.path.split("?")[0] == "/health":
                self._answer(200, {"ready": True})
            else:
                self._answer(404, {"message": f"POST your inputs; GET answers /health only, not {self.path}"})

        def do_POST(self) -> None:  # noqa: N802
            try:
                length = int(self.headers.get("Content-Length") or 0)
                inputs = json.loads(self.rfile.read(length) or b"{}").get("inputs")
            except (ValueError, AttributeError) as exc:
                self._answer(400, {"message": f"the body must be JSON with 'inputs': {exc}"})
                return
            try:
                self._answer(200, {"outputs": function(inputs)})
            except Exception as exc:  # noqa: BLE001 - the caller gets the model's error, the server goes on
                self._answer(500, {"message": f"{type(exc).__name__}: {exc}"})

        def log_message(self, *args) -> None:
            pass

    address = (host or os.environ.get("HOST") or "0.0.0.0", int(port or os.environ["PORT"]))
    ThreadingHTTPServer(address, Handler).serve_forever()
