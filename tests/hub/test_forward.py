"""A hub user's server while the hub's hetero service is away: a real server in hub-user mode forwarding to a real
socket that refuses, accepts and drops, or answers half. A call that never reached the service is tried again for
the retry window; one it may have received is sent again only if it is a GET, or a submission (with the same
Idempotency-Key each time); none is sent again once an answer began; what cannot be answered is a 502 that says why,
in English and Chinese, never a 500."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_hetero.handlers.forward import Delivery, HubService, delivery
from jupyter_hetero.kernel.hub_kernels import HubKernels, ServiceUnavailable

from ..harness import free_port

WINDOW_S = 1.0
OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"ok": true}'


class FakeService:
    """A socket where the service would be, answering each connection as ``behaviour`` says; ``seen`` counts them."""

    def __init__(self, port: int):
        self.port, self.behaviour, self.seen, self._server = port, "ok", 0, None
        self.keys: list[str | None] = []  # each try's Idempotency-Key

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.seen += 1
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        self.keys.append(next((line.split(":", 1)[1].strip() for line in head
                               if line.lower().startswith("idempotency-key:")), None))
        if self.behaviour == "drop-once":  # this try dropped unanswered, the next answered
            self.behaviour = "drop-then-ok"
        elif self.behaviour in ("ok", "drop-then-ok"):
            writer.write(OK)
        elif self.behaviour == "status":  # the status line and headers, then nothing
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
        elif self.behaviour == "part":  # some of the body, then nothing
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
        await writer.drain()
        if self.behaviour not in ("ok", "drop-then-ok"):
            await asyncio.sleep(0.05)  # the part reaches the server before the connection ends
        writer.close()


@pytest.fixture
def service_port(hetero_config, monkeypatch) -> int:
    port = free_port()
    hetero_config.update(service_url=f"http://127.0.0.1:{port}/services/hetero/", service_retry_seconds=WINDOW_S)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "hub-token-of-this-server")
    return port


async def forwarded(jp_fetch, method: str, route: str = "workloads",
                    headers: dict[str, str] | None = None) -> tuple[int, bytes, float]:
    began = time.monotonic()
    body = json.dumps({"kind": "job"}) if method == "POST" else None
    try:
        response = await jp_fetch("hetero", "api", "v1", *route.split("/"), method=method, body=body, headers=headers)
        status, raw = response.code, response.body
    except HTTPClientError as error:
        status, raw = error.code, error.response.body if error.response else b""
    return status, raw, time.monotonic() - began


@pytest.mark.parametrize(("exc", "expected"), [
    pytest.param(ConnectionRefusedError(111, "Connection refused"), Delivery.UNREACHED, id="refused: never sent"),
    pytest.param(OSError(113, "No route to host"), Delivery.UNREACHED, id="no route: never sent"),
    pytest.param(HTTPClientError(599, "Timeout while connecting"), Delivery.UNREACHED, id="connect timeout: never sent"),
    pytest.param(ConnectionResetError(104, "Connection reset by peer"), Delivery.MAYBE_RECEIVED, id="reset: maybe sent"),
    pytest.param(HTTPClientError(599, "Stream closed"), Delivery.MAYBE_RECEIVED, id="closed: maybe sent"),
    pytest.param(HTTPClientError(599, "Timeout during request"), Delivery.MAYBE_RECEIVED, id="timeout: maybe sent"),
])
def test_how_far_a_call_without_an_answer_went(exc, expected):
    assert delivery(exc) is expected


async def test_a_call_while_nothing_listens_is_tried_for_the_window_then_a_clear_502(service_port, jp_fetch):
    for method in ("GET", "POST"):  # never sent, so a POST goes again too
        status, raw, took = await forwarded(jp_fetch, method)
        answer = json.loads(raw)
        assert (status, answer["reason"]) == (502, "service-unreachable"), answer
        assert "restarting or down" in answer["message"] and "重启" in answer["message_zh"], answer
        assert WINDOW_S * 0.6 < took < WINDOW_S + 2, (method, took)


async def test_a_get_reaches_a_service_that_comes_back_within_the_window(service_port, jp_fetch):
    service = FakeService(service_port)

    async def back_soon() -> None:
        await asyncio.sleep(WINDOW_S / 3)
        await service.start()

    started = asyncio.ensure_future(back_soon())
    try:
        status, raw, _took = await forwarded(jp_fetch, "GET")
        assert (status, json.loads(raw)) == (200, {"ok": True})
    finally:
        await started
        await service.stop()


@pytest.mark.parametrize(("method", "route", "behaviour", "status", "reason", "sent"), [
    # It was a 500: tornado's "Stream closed" is no OSError, which was all the forwarder caught.
    pytest.param("POST", "workloads/7/resubmit", "drop", 502, "outcome-unknown", 1,
                 id="POST dropped after sending: not sent twice"),
    pytest.param("DELETE", "workloads/7", "drop", 502, "outcome-unknown", 1,
                 id="DELETE dropped after sending: not sent twice"),
    pytest.param("GET", "workloads", "drop", 502, "service-unreachable", None,
                 id="GET dropped: asked again for the window"),
    # Every try reached the service, which may have stored one before it dropped the connection: the answer is
    # that the outcome is unknown, never that it was not sent (the hub restart test once found such a submission
    # stored after a 502 service-unreachable).
    pytest.param("POST", "workloads", "drop", 502, "outcome-unknown", None,
                 id="submission dropped: sent again, with its key, for the window; then its outcome unknown"),
    pytest.param("GET", "workloads", "status", 502, "outcome-unknown", 1, id="GET cut after its status: never asked again"),
    pytest.param("POST", "workloads", "status", 502, "outcome-unknown", 1,
                 id="submission cut after its status: never sent again"),
    pytest.param("GET", "workloads", "part", 200, None, 1, id="GET cut mid-body: ends where the connection did"),
])
async def test_a_call_the_service_may_have_received_is_never_repeated_unless_a_get_or_keyed_with_no_answer_yet(
        service_port, jp_fetch, method, route, behaviour, status, reason, sent):
    service = FakeService(service_port)
    service.behaviour = behaviour
    await service.start()
    try:
        got, raw, _took = await forwarded(jp_fetch, method, route)
    finally:
        await service.stop()
    assert got == status, raw
    if reason is not None:
        answer = json.loads(raw)
        assert answer["reason"] == reason and answer["message_zh"] and answer["message_zh"] != answer["message"]
    if sent is None:
        assert service.seen > 1
    else:
        assert service.seen == sent


@pytest.mark.parametrize("own_key", [None, "the-callers-own-key"])
async def test_a_submission_cut_off_unanswered_goes_again_with_the_same_key(service_port, jp_fetch, own_key):
    # The service, if it stored the first try, answers the second with that workload (tests/handlers/test_idempotency.py).
    service = FakeService(service_port)
    service.behaviour = "drop-once"
    await service.start()
    try:
        got, raw, _took = await forwarded(jp_fetch, "POST", headers={"Idempotency-Key": own_key} if own_key else None)
    finally:
        await service.stop()
    assert (got, json.loads(raw)) == (200, {"ok": True})
    assert service.seen == 2 and service.keys[0] == service.keys[1] and service.keys[0], service.keys
    assert own_key is None or service.keys[0] == own_key
    # A call of another kind carries no key of the forwarder's making.
    service.behaviour = "ok"
    await service.start()
    try:
        await forwarded(jp_fetch, "GET")
    finally:
        await service.stop()
    assert service.keys[-1] is None


async def test_a_kernel_call_cut_off_by_the_service_is_service_unavailable_not_a_crash():
    # It was tornado's HTTPClientError (599 Stream closed), which a kernel launch did not expect.
    service = FakeService(free_port())
    service.behaviour = "drop"
    await service.start()
    try:
        kernels = HubKernels(HubService(f"http://127.0.0.1:{service.port}/", "token"), passthrough=(), environ={})
        with pytest.raises(ServiceUnavailable):
            await kernels.call("kernels/placements", {"template": "interactive"})
    finally:
        await service.stop()
