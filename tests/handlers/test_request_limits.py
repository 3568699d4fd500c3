"""What one user's requests may take of a shared server, through a real server: a body over the limit is refused
at once (413 naming the limit, in English and Chinese), a big body under it is parsed off the event loop (another
user's GET /queues is answered meanwhile), and a user submitting too fast is told when to come back (429)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_hetero.notebook.client import ApiError, HeteroClient

from ..conftest import _hetero_fetch, _token
from ..fakes import HurriedClock

pytestmark = pytest.mark.usefixtures("team")

QUICK = {"kind": "job", "template": "data-preprocessing", "command": ["true"]}


async def test_a_body_over_the_limit_is_refused_at_once_naming_it(api_error):
    started = time.monotonic()
    status, error = await api_error("workloads", "POST", {**QUICK, "command": None, "code": "x" * 13_000_000},
                                    as_user="alice")
    assert time.monotonic() - started < 5
    assert (status, error["field"], error["limit_bytes"]) == (413, "body", 4 << 20), error
    assert "over this server's limit of 4194304 bytes (c.HeteroApp.max_body_bytes)" in error["message"]
    assert "4194304" in error["message_zh"] and "max_body_bytes" in error["message_zh"]
    # One value over its own limit, in a body under the whole one: named by its path.
    status, error = await api_error("workloads", "POST", {**QUICK, "env": {"BIG": "x" * 1_500_000}}, as_user="alice")
    assert (status, error["field"], error["limit_bytes"]) == (413, "env.BIG", 1 << 20), error
    assert "field 'env.BIG' is over this server's limit of 1048576 bytes" in error["message"]
    assert "1048576" in error["message_zh"]


async def test_a_big_body_under_the_limit_does_not_hold_other_users(jp_fetch, jp_http_port, jp_base_url):
    # Two million small values under a field the model does not know: reading and checking them takes the server
    # about a second, which must not be the event loop's. The body is sent but for its last byte, so that the
    # server reads it at once when that byte comes, and another user asks for the queues meanwhile.
    body = json.dumps({**QUICK, "unknown": [0] * 1_900_000}, separators=(",", ":")).encode()
    assert len(body) < 4 << 20
    reader, writer = await asyncio.open_connection("127.0.0.1", jp_http_port)
    writer.write(f"POST {jp_base_url}hetero/api/v1/workloads HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 f"Authorization: token {_token('alice')}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body[:-1])
    await writer.drain()
    await asyncio.sleep(0.5)  # the server has read all but the last byte
    writer.write(body[-1:])
    await writer.drain()
    sent = time.monotonic()
    answered = asyncio.ensure_future(reader.read())
    # The server reads the body now. This test's client runs on the server's own event loop: timed from the last
    # byte, as a loop held by the parse would hold this sleep too.
    await asyncio.sleep(0.05)
    await _hetero_fetch(jp_fetch)("queues", as_user="bob")
    queues = time.monotonic() - sent
    response = await answered
    posted = time.monotonic() - sent
    writer.close()
    assert response.startswith(b"HTTP/1.1 400") and b"unknown" in response, response[:300]
    assert queues < posted / 2, (queues, posted)


@pytest.fixture
def hurried(hetero_config):
    hetero_config.update(clock_class="tests.fakes.HurriedClock", submissions_per_minute=2, submission_burst=2)
    yield HurriedClock
    HurriedClock.reset()


async def test_a_user_submitting_too_fast_is_told_when_to_retry(hurried, api, jp_fetch):
    fetch = _hetero_fetch(jp_fetch)
    for _ in range(2):
        await api("workloads", "POST", QUICK, as_user="alice")
    with pytest.raises(HTTPClientError) as refused:
        await fetch("workloads", "POST", QUICK, as_user="alice")
    error = json.loads(refused.value.response.body)
    assert (refused.value.code, error["reason"]) == (429, "rate-limited"), error
    assert refused.value.response.headers["Retry-After"] == "30"
    assert "user alice submitted more than 2 workloads at once or more than 2 a minute" in error["message"]
    await api("workloads", "POST", QUICK, as_user="bob")  # a bucket per user
    hurried.step(30)
    await api("workloads", "POST", QUICK, as_user="alice")


async def test_the_client_waits_out_the_rate_and_sends_again(hurried, api, jp_http_port, jp_base_url):
    # A loop of `jupyter hetero submit` (or a notebook's) keeps going: the client sleeps what Retry-After says and
    # sends again, since a 429 stores nothing; past its patience it gives up with the server's answer.
    for _ in range(2):
        await api("workloads", "POST", QUICK, as_user="alice")
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        hurried.step(seconds)  # the server's bucket refills as the client waits

    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    client = HeteroClient(url, _token("alice"), sleep=sleep)
    submitted = await asyncio.to_thread(client.submit, **QUICK)
    assert slept == [30.0] and submitted["user"] == "alice"
    impatient = HeteroClient(url, _token("alice"), rate_wait=10, sleep=sleep)
    with pytest.raises(ApiError) as refused:
        await asyncio.to_thread(impatient.submit, **QUICK)
    assert refused.value.status == 429 and slept == [30.0]
