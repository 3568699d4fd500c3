"""What a request costs: requests share the server's interpreter with the ticks, so each question to
the store counts (the queues view, polled by every open panel, asks none), and so does the work
jupyter_server does for browsers on API calls that will never use it (a login cookie per call)."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from sqlalchemy import event
from tornado.httpclient import HTTPClientError

from ..conftest import _token


async def test_the_queues_view_reads_the_last_cycles_sums_and_asks_the_store_nothing(api, jp_serverapp):
    await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing", "command": ["true"]})
    deadline = time.monotonic() + 30
    while not (await api("scheduler/ticks"))["ticks"]:  # the server's owner is a platform admin
        assert time.monotonic() < deadline, "the scheduler never ticked"
        await asyncio.sleep(0.05)
    engine = jp_serverapp.web_app.settings["hetero_platform"].repository.engine
    statements, loop = [], threading.get_ident()

    def count(_connection, _cursor, statement, *_args):
        if threading.get_ident() == loop:  # the request's, not the ticks' or the alert rules' in their threads
            statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        queues = await api("queues")
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(queues) == 5
    assert [s for s in statements if "workloads" in s] == [], statements
    assert all(q["status_at"] > 0 for q in queues)


async def _identity(jp_fetch, *, headers: dict, **params) -> tuple[dict, list[str]]:
    response = await jp_fetch("hetero", "api", "v1", "tenants", "me", headers=headers, params=params or None)
    return json.loads(response.body), response.headers.get_list("Set-Cookie")


async def test_the_owners_api_calls_with_the_token_in_a_header_get_no_login_cookie(jp_fetch, jp_auth_header):
    me, cookies = await _identity(jp_fetch, headers=jp_auth_header)
    assert (me["tenant"], me["role"]) == ("default", "platform-admin")
    assert cookies == [], "an API call was answered with a login cookie it will never send back"


@pytest.mark.usefixtures("team")
async def test_a_members_api_calls_get_no_login_cookie_and_a_browser_sign_in_still_gets_one(jp_fetch):
    me, cookies = await _identity(jp_fetch, headers={"Authorization": f"token {_token('alice')}"})
    assert (me["user"], me["tenant"], me["role"]) == ("alice", "vision", "member") and cookies == []
    me, cookies = await _identity(jp_fetch, headers={"Authorization": ""}, token=_token("alice"))
    assert (me["user"], me["role"]) == ("alice", "member") and cookies, "a sign-in through the URL sets the cookie"
    with pytest.raises(HTTPClientError) as refused:
        await _identity(jp_fetch, headers={"Authorization": "token not-a-token"})
    assert refused.value.code == 403
