"""XSRF on a single server, as jupyter-server has it: a call authenticated by the login cookie (a browser's) that
changes something (POST, PATCH, DELETE) is refused with 403 unless it carries the _xsrf cookie and the same value
in its X-XSRFToken header; a call with a token in its Authorization header needs no XSRF token.

The browser is alice, a member of tenant vision, signed in with her personal token (TeamIdentityProvider)."""

from __future__ import annotations

import json
from http.cookies import SimpleCookie

import pytest

from ..conftest import _token

pytestmark = pytest.mark.usefixtures("team")

# Changes each allowed to alice, past her rule: a preview (200) and two of things that are not there (404).
CHANGES = [pytest.param("POST", "previews", {"template": "training"}, id="POST a preview"),
           pytest.param("PATCH", "services/no-such-service", {"replicas": 1}, id="PATCH a service"),
           pytest.param("DELETE", "workloads/999999", None, id="DELETE a workload")]


async def _cookies(jp_fetch, *path: str, **params: str) -> dict[str, str]:
    response = await jp_fetch(*path, params=params, headers={"Authorization": ""}, raise_error=False,
                              follow_redirects=False)
    jar = SimpleCookie()
    for header in response.headers.get_list("Set-Cookie"):
        jar.load(header)
    return {name: morsel.value for name, morsel in jar.items()}


async def _browser(jp_fetch) -> dict[str, str]:
    """alice's browser: her login cookie (from opening a page with ?token=) and the _xsrf cookie a page sets."""
    login = await _cookies(jp_fetch, "api", "me", token=_token("alice"))
    xsrf = await _cookies(jp_fetch, "login")
    assert any(name.startswith("username-") for name in login) and "_xsrf" in xsrf, (login, xsrf)
    return {**login, **xsrf}


async def _call(jp_fetch, method: str, route: str, body, headers: dict[str, str]):
    response = await jp_fetch("hetero", "api", "v1", *route.split("/"), method=method,
                              body=None if body is None else json.dumps(body), allow_nonstandard_methods=True,
                              headers={"Authorization": "", **headers}, raise_error=False)
    return response.code, response.body.decode(errors="replace")


def _cookie_header(cookies: dict[str, str], *names: str) -> str:
    return "; ".join(f"{name}={value}" for name, value in cookies.items() if name in names or name.startswith(names))


@pytest.mark.parametrize(("method", "route", "body"), CHANGES)
async def test_a_cookie_authenticated_change_without_the_xsrf_token_is_refused(jp_fetch, method, route, body):
    browser = await _browser(jp_fetch)
    login = _cookie_header(browser, "username-")
    status, answer = await _call(jp_fetch, method, route, body, {"Cookie": login})
    assert status == 403 and "_xsrf" in answer, (status, answer)
    with_both = _cookie_header(browser, "username-", "_xsrf")
    status, answer = await _call(jp_fetch, method, route, body, {"Cookie": with_both})  # the cookie alone: no header
    assert status == 403 and "_xsrf" in answer, (status, answer)
    another = (await _cookies(jp_fetch, "login"))["_xsrf"]  # well formed, but another browser's
    status, answer = await _call(jp_fetch, method, route, body, {"Cookie": with_both, "X-XSRFToken": another})
    assert status == 403 and "XSRF cookie does not match" in answer, (status, answer)


@pytest.mark.parametrize(("method", "route", "body"), CHANGES)
async def test_a_cookie_authenticated_change_with_the_xsrf_token_is_accepted(jp_fetch, method, route, body):
    browser = await _browser(jp_fetch)
    headers = {"Cookie": _cookie_header(browser, "username-", "_xsrf"), "X-XSRFToken": browser["_xsrf"]}
    status, answer = await _call(jp_fetch, method, route, body, headers)
    assert status in (200, 404), (status, answer)


@pytest.mark.parametrize(("method", "route", "body"), CHANGES)
async def test_a_token_authenticated_change_needs_no_xsrf_token(jp_fetch, method, route, body):
    status, answer = await _call(jp_fetch, method, route, body, {"Authorization": f"token {_token('alice')}"})
    assert status in (200, 404), (status, answer)


async def test_a_cookie_authenticated_read_needs_no_xsrf_token_and_is_the_member_herself(jp_fetch):
    browser = await _browser(jp_fetch)
    status, answer = await _call(jp_fetch, "GET", "tenants/me", None, {"Cookie": _cookie_header(browser, "username-")})
    assert status == 200 and (json.loads(answer)["user"], json.loads(answer)["tenant"]) == ("alice", "vision"), answer
