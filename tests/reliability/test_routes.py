"""Every route of a team's server, as a member: what MEMBER_ROUTES gives them answers, everything else is a 403 (or a
405 for a method the route has not), and no answer anywhere carries the server's own token; the owner keeps it all.

The routes are the running application's own (jupyter_server's, JupyterLab's, the terminals', the language servers'
and the hetero API's), so a route that a package adds later is swept too, and refused until it is listed.
A member is alice (tenant vision), by her personal token and by the login cookie it gets her, as a browser has it.
"""

from __future__ import annotations

import json
from http.cookies import SimpleCookie

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.httputil import HTTPHeaders
from tornado.simple_httpclient import HTTPStreamClosedError, HTTPTimeoutError
from tornado.websocket import websocket_connect

from jupyter_hetero.authorizer import MEMBER_ROUTES

from ..conftest import _token
from ..handlers.test_kernels import kernelspecs  # noqa: F401 - the fixture
from .routes import routes_of

pytestmark = pytest.mark.usefixtures("team")

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# JupyterLab's licenses handler breaks on any answer but its GET's (its finish() takes another argument): the refusal
# is never sent, to the owner neither, and the connection waits for its timeout.
UNANSWERED = {("jupyterlab_server.licenses_handler.LicensesHandler", method) for method in ("POST", "PUT", "PATCH",
                                                                                            "DELETE")}
# Every extension installed with the product, so that the sweep meets their routes.
EXTENSIONS = {"jupyter_hetero": True, "jupyterlab": True, "jupyter_server_terminals": True, "jupyter_lsp": True}


@pytest.fixture
def everything(team, server_config):
    server_config["ServerApp"] = {**server_config["ServerApp"], "jpserver_extensions": EXTENSIONS}


async def _call(port: int, method: str, path: str, headers: dict[str, str], body: str | None = None,
                timeout: float = 60):
    if body is None and method in ("POST", "PUT", "PATCH"):
        body = "{}"
    try:
        response = await AsyncHTTPClient().fetch(
            HTTPRequest(f"http://127.0.0.1:{port}{path}", method=method, headers=headers, body=body,
                        allow_nonstandard_methods=True, follow_redirects=False, request_timeout=timeout),
            raise_error=False)
    except (HTTPTimeoutError, HTTPStreamClosedError):
        # Nothing served: jupyter_server's pages do not answer the owner a method they have not (their error page
        # asks for the user in a way jupyter_server 2 refuses), nor JupyterLab's licenses anything but a GET.
        return 599, b"", HTTPHeaders()
    return response.code, response.body or b"", response.headers


async def _login_cookie(port: int, base_url: str) -> str:
    """alice's browser: the login cookie she gets by opening a page with her token in its URL."""
    _status, _body, headers = await _call(port, "GET", f"{base_url}api/me?token={_token('alice')}", {})
    jar = SimpleCookie()
    for header in headers.get_list("Set-Cookie"):
        jar.load(header)
    cookie = "; ".join(f"{name}={morsel.value}" for name, morsel in jar.items() if name.startswith("username-"))
    assert cookie, "no login cookie"
    return cookie


def _leaks(token: str, body: bytes, headers) -> bool:
    return token.encode() in body or any(token in value for _name, value in headers.get_all())


@pytest.mark.parametrize("by", ["token", "cookie"])
async def test_a_member_reaches_only_the_listed_routes_and_never_the_owners_token(
        everything, by, jp_fetch, jp_serverapp, jp_http_port, jp_base_url):
    owner_token = jp_serverapp.identity_provider.token
    routes = routes_of(jp_serverapp.web_app, jp_base_url)
    keys = {route.key for route in routes}
    assert {"jupyter_server.services.contents.handlers.ContentsHandler", "jupyterlab_server.handlers.LabHandler",
            "jupyter_server_terminals.api_handlers.TerminalRootHandler"} <= keys, sorted(keys)
    headers = ({"Authorization": f"token {_token('alice')}"} if by == "token"
               else {"Cookie": await _login_cookie(jp_http_port, jp_base_url)})
    wrong = []
    for route in routes:
        grant = MEMBER_ROUTES.get(route.key)
        for method in METHODS:
            listed = grant is not None and method in grant.methods
            if listed and method != "GET":
                continue  # what a listed change does is its own tests' business (the hetero API's: the matrix)
            if (route.key, method) in UNANSWERED:
                continue
            status, body, answer_headers = await _call(jp_http_port, method, route.path, headers)
            if _leaks(owner_token, body, answer_headers):
                wrong.append(f"{method} {route}: {status}, the owner's token in the answer")
            # A method the handler has not is refused by tornado before any of it runs, and a bare tornado handler
            # (public static files) asks no one who they are; some of their error pages break and close the
            # connection: nothing is served.
            refusals = (403, 405) if method in route.methods and route.authenticates else (403, 405, 599)
            if not listed and status not in refusals:
                wrong.append(f"{method} {route}: {status}, not refused: {body[:200]!r}")
    assert not wrong, "\n".join(wrong)


async def test_every_route_a_member_is_given_is_one_the_server_has(everything, jp_serverapp, jp_base_url):
    # A name in the list that matches no route is a typo, or a route renamed under it: the list would say what isn't.
    keys = {route.key for route in routes_of(jp_serverapp.web_app, jp_base_url)}
    assert set(MEMBER_ROUTES) <= keys, sorted(set(MEMBER_ROUTES) - keys)


async def test_the_owner_keeps_every_route(everything, jp_fetch, jp_serverapp, jp_http_port, jp_base_url):
    owner = {"Authorization": f"token {jp_serverapp.identity_provider.token}"}
    refused = []
    for route in routes_of(jp_serverapp.web_app, jp_base_url):
        status, body, _headers = await _call(jp_http_port, "GET", route.path, owner, timeout=5)
        if status in (401, 403):
            refused.append(f"GET {route}: {status} {body[:200]!r}")
    assert not refused, "\n".join(refused)
    for path in ("api/contents", "api/sessions", "api/kernels", "api/terminals", "lab"):
        status, _body, _headers = await _call(jp_http_port, "GET", jp_base_url + path, owner)
        assert status == 200, (path, status)


async def test_a_member_gets_jupyterlab_the_hetero_api_and_their_own_hetero_kernels(
        everything, kernelspecs, jp_fetch, jp_serverapp, jp_http_port, jp_base_url):  # noqa: F811
    owner_token = jp_serverapp.identity_provider.token
    alice, bob = ({"Authorization": f"token {_token(user)}"} for user in ("alice", "bob"))
    for path in ("lab", "api/me", "api/kernelspecs", "hetero/api/v1/tenants/me", "lab/api/settings"):
        status, body, _headers = await _call(jp_http_port, "GET", jp_base_url + path, alice)
        assert status == 200 and owner_token.encode() not in body, (path, status, body[:300])
    assert json.loads((await _call(jp_http_port, "GET", jp_base_url + "api/me", alice))[1])["identity"]["username"] \
        == "alice"

    status, body, _headers = await _call(jp_http_port, "POST", jp_base_url + "api/kernels", alice,
                                         json.dumps({"name": "python3"}))
    assert status == 403 and b"hetero kernels only" in body, (status, body)
    status, body, _headers = await _call(jp_http_port, "POST", jp_base_url + "api/kernels", alice,
                                         json.dumps({"name": "hetero-cpu"}))
    assert status == 201, (status, body)
    kernel = jp_base_url + "api/kernels/" + json.loads(body)["id"]
    try:
        assert (await _call(jp_http_port, "GET", kernel, alice))[0] == 200
        channels = f"ws://127.0.0.1:{jp_http_port}{kernel}/channels"
        (await websocket_connect(HTTPRequest(channels, headers=alice))).close()  # her notebook's connection
        with pytest.raises(HTTPClientError) as refused:
            await websocket_connect(HTTPRequest(channels, headers=bob))
        assert refused.value.code == 403
        status, body, _headers = await _call(jp_http_port, "GET", kernel, bob)  # a colleague's kernel is not his
        assert status == 403 and b"not one of team member bob's own" in body, (status, body)
        assert (await _call(jp_http_port, "POST", kernel + "/interrupt", bob))[0] == 403
    finally:
        assert (await _call(jp_http_port, "DELETE", kernel, alice))[0] == 204


async def test_an_error_page_shows_the_owner_the_token_and_a_member_not(everything, jp_fetch, jp_serverapp, jp_http_port,
                                                                        jp_base_url):
    owner_token = jp_serverapp.identity_provider.token
    page = jp_base_url + "no-such-page"
    _status, body, _headers = await _call(jp_http_port, "GET", page, {"Authorization": f"token {owner_token}"})
    assert owner_token.encode() in body  # jupyter_server's own page, for whoever holds the token anyway
    cookie = await _login_cookie(jp_http_port, jp_base_url)
    status, body, _headers = await _call(jp_http_port, "GET", page, {"Cookie": cookie})
    assert status == 404 and owner_token.encode() not in body, body[:300]
