"""A small model server for the service tests: listens on $HOST:$PORT, answers ``GET /health`` once ready and
``POST /predict`` with a JSON answer naming its replica. ``MODEL_ERROR_RATE`` (0..1) makes that share of
predictions fail with a 500, ``MODEL_DELAY_S`` slows every prediction, ``MODEL_READY_AFTER_S`` delays
readiness: what a bad or slow revision looks like. ``MODEL_DROP_ONCE`` names a file: the one replica that
creates it closes the connection under that prediction unanswered, as a replica dying under a request does."""

from __future__ import annotations

import json
import os
import random
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STARTED = time.monotonic()
REPLICA = f"{os.environ.get('HETERO_WORKLOAD_ID', '?')}:{os.getpid()}"
ERROR_RATE = float(os.environ.get("MODEL_ERROR_RATE", "0"))
DELAY_S = float(os.environ.get("MODEL_DELAY_S", "0"))
READY_AFTER_S = float(os.environ.get("MODEL_READY_AFTER_S", "0"))
VERSION = os.environ.get("MODEL_VERSION", "1")
DROP_ONCE = os.environ.get("MODEL_DROP_ONCE")


class Model(BaseHTTPRequestHandler):
    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        if self.path == "/health":
            ready = time.monotonic() - STARTED >= READY_AFTER_S
            self._answer(200 if ready else 503, {"ready": ready, "replica": REPLICA})
        else:
            self._answer(404, {"message": f"no {self.path}"})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        inputs = json.loads(self.rfile.read(length) or b"{}").get("inputs", [])
        if DROP_ONCE and _first_to_create(DROP_ONCE):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        time.sleep(DELAY_S)
        if random.random() < ERROR_RATE:
            self._answer(500, {"message": "the model failed", "replica": REPLICA})
            return
        self._answer(200, {"outputs": [2 * x for x in inputs], "replica": REPLICA, "path": self.path,
                           "version": VERSION})

    def log_message(self, *args) -> None:
        pass


def _first_to_create(path: str) -> bool:
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


if __name__ == "__main__":
    ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"), int(os.environ["PORT"])), Model).serve_forever()
