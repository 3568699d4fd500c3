"""XSRF through the hub, as JupyterHub's single-user server (HubOAuth) enforces it: at the hetero service, and at
alice's own server, whose forwarder passes her calls on to the service (the panel's way).

A browser opens the service's URL; the hub's OAuth sends it to the hub's login page, whose form it submits with
the `_xsrf` cookie that page set, then to the page where the hub asks alice to let the service know who she is
(a service gets no `oauth_no_confirm` here), whose form it submits too. The service's OAuth callback sets its
login cookie and its own `_xsrf` cookie, both on /services/hetero/. Then it opens alice's server, whose OAuth
asks nothing (her own server) and sets its cookies on /user/alice/. With those cookies only, at either place:

- a read answers alice; a read as a browser's fetch() makes it (Sec-Fetch-Mode: cors) needs the XSRF token
  too, which HubOAuth asks of every cookie-authenticated request that is not a page's navigation;
- a POST, PATCH or DELETE without the `_xsrf` value in its X-XSRFToken header, or with the value of another
  browser of alice's, is not authenticated by the cookie and is refused 403, and changes nothing; with the right
  value (as JupyterLab sends it) it is accepted;
- the same calls with alice's hub token in the Authorization header need no XSRF token.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
import requests

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from ..harness import kill_runners_under
from .harness import CHP, PASSWORD, HubProcess, hetero_service

pytestmark = pytest.mark.slow

SERVICE = "services/hetero/"
# Where a browser calls the hetero API: the service itself, and alice's server, which forwards to it.
PLACES = [pytest.param(SERVICE, id="at the service"), pytest.param("user/alice/", id="through alice's server")]
# A job no node fits (none has 64 CPUs): it waits, so nothing a test submits runs.
UNFIT = {"kind": "job", "template": "data-preprocessing", "command": ["true"], "parameters": {"cpu": 64}}
# Changes each allowed to alice, and what each answers once accepted: a submission, a service that is not there
# (past her rule, a 404), a cancellation of a queued job of hers ({queued}: made for the test, with her token).
CHANGES = [pytest.param("POST", "workloads", UNFIT, 201, id="POST a workload"),
           pytest.param("PATCH", "services/no-such-service", {"replicas": 1}, 404, id="PATCH a service"),
           pytest.param("DELETE", "workloads/{queued}", None, 200, id="DELETE a workload")]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub-xsrf")
    service, _url = hetero_service(root, team_catalog(root), DEMO_NODES)  # vision: alice
    with HubProcess.start(root, groups={}, users=("alice",), extra_config=service) as running:
        running.spawn("alice")  # while the service starts
        yield running.with_service(("alice",))
    kill_runners_under(root)


@pytest.fixture(scope="module")
def alice(hub) -> requests.Session:
    return browser(hub, "alice")


@pytest.fixture(scope="module")
def elsewhere(hub) -> requests.Session:
    """Another browser of alice's, signed in on its own: its `_xsrf` is well formed, signed, and not hers here."""
    return browser(hub, "alice")


class _HiddenInputs(HTMLParser):
    """What a page's form sends that its user does not type: the hub's `_xsrf`, the scopes asked for."""

    def __init__(self, page: str):
        super().__init__()
        self.fields: dict[str, str] = {}
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "input" and attributes.get("type") == "hidden" and attributes.get("name"):
            self.fields[attributes["name"]] = attributes.get("value") or ""


def browser(hub: HubProcess, user: str) -> requests.Session:
    """A browser of ``user``'s that opened the service, signed in at the hub and let the service know who they are;
    then opened their own server."""
    session = requests.Session()
    page = session.get(hub.url + SERVICE, timeout=30)  # the service -> the hub's OAuth -> the hub's login page
    assert "/hub/login" in page.url, (page.status_code, page.url)
    page = session.post(page.url, timeout=30, data={"username": user, "password": PASSWORD,
                                                    **_HiddenInputs(page.text).fields})
    if "/hub/api/oauth2/authorize" in page.url:  # "Authorize access": once per user, then the hub remembers
        page = session.post(page.url, data=_HiddenInputs(page.text).fields, timeout=30)
    assert page.ok and page.url.startswith(hub.url + SERVICE), (page.status_code, page.url, page.text[:300])
    own = session.get(hub.url + f"user/{user}/", timeout=30)
    assert own.ok and own.url.startswith(hub.url + f"user/{user}/"), (own.status_code, own.url, own.text[:300])
    assert session.cookies.get("service-hetero", path="/" + SERVICE) and xsrf_of(session, SERVICE), session.cookies
    assert session.cookies.get(f"jupyterhub-user-{user}") and xsrf_of(session, f"user/{user}/"), session.cookies
    return session


def xsrf_of(session: requests.Session, place: str) -> str | None:
    """The `_xsrf` cookie ``place`` set on its path (the hub's own is another, on /hub/)."""
    return session.cookies.get("_xsrf", path="/" + place)


def call(hub: HubProcess, session: requests.Session, method: str, route: str, body=None, *, place: str = SERVICE,
         **headers: str):
    """One call through the proxy to ``place``'s hetero API with ``session``'s cookies (a fresh session has none):
    (status, text)."""
    response = session.request(method, f"{hub.url}{place}hetero/api/v1/{route}", json=body, allow_redirects=False,
                               headers={key.replace("_", "-"): value for key, value in headers.items()}, timeout=30)
    return response.status_code, response.text


def by_token(hub: HubProcess, method: str, route: str, body=None, *, place: str = SERVICE):
    """A call as alice's scripts make it: her hub token in the Authorization header, no cookie."""
    return call(hub, requests.Session(), method, route, body, place=place,
                Authorization=f"token {hub.tokens['alice']}")


def fill(hub: HubProcess, route: str) -> str:
    """``route`` naming a job of alice's that waits, made now with her token, where it says {queued}."""
    return route.format(queued=waiting_job(hub)) if "{queued}" in route else route


def waiting_job(hub: HubProcess) -> int:
    status, text = by_token(hub, "POST", "workloads", UNFIT)
    assert status == 201, text
    return json.loads(text)["id"]


def store(hub: HubProcess) -> list[tuple[int, bool]]:
    """alice's workloads and whether each is cancelled, as the service lists them: unchanged by a refused call (the
    scheduler finds the unfit ones inadmissible meanwhile)."""
    status, text = by_token(hub, "GET", "workloads")
    assert status == 200, text
    return sorted((workload["id"], workload["state"] == "cancelled") for workload in json.loads(text))


@pytest.mark.parametrize("place", PLACES)
def test_a_cookie_authenticated_read_needs_no_xsrf_token_and_is_alice(hub, alice, place):
    status, text = call(hub, alice, "GET", "tenants/me", place=place)
    assert status == 200 and '"user": "alice"' in text and '"tenant": "vision"' in text, text


@pytest.mark.parametrize("place", PLACES)
def test_a_cookie_authenticated_read_by_fetch_needs_the_xsrf_token(hub, alice, place):
    status, text = call(hub, alice, "GET", "tenants/me", place=place, Sec_Fetch_Mode="cors")
    assert status == 403, text
    status, text = call(hub, alice, "GET", "tenants/me", place=place, Sec_Fetch_Mode="cors",
                        X_XSRFToken=xsrf_of(alice, place))
    assert status == 200 and '"user": "alice"' in text, text


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(("method", "route", "body", "accepted"), CHANGES)
def test_a_cookie_authenticated_change_without_the_xsrf_token_is_refused(hub, alice, elsewhere, place, method, route,
                                                                          body, accepted):
    route = fill(hub, route)
    before = store(hub)
    status, text = call(hub, alice, method, route, body, place=place)
    assert status == 403 and "'_xsrf' argument missing" in text, (status, text)
    status, text = call(hub, alice, method, route, body, place=place, X_XSRFToken=xsrf_of(elsewhere, place))
    assert status == 403 and "XSRF cookie does not match" in text, (status, text)
    assert store(hub) == before


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(("method", "route", "body", "accepted"), CHANGES)
def test_a_cookie_authenticated_change_with_the_xsrf_token_is_accepted(hub, alice, place, method, route, body,
                                                                       accepted):
    status, text = call(hub, alice, method, fill(hub, route), body, place=place, X_XSRFToken=xsrf_of(alice, place))
    assert status == accepted and ('"user": "alice"' in text or accepted == 404), (status, text)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(("method", "route", "body", "accepted"), CHANGES)
def test_a_token_authenticated_change_needs_no_xsrf_token(hub, place, method, route, body, accepted):
    status, text = by_token(hub, method, fill(hub, route), body, place=place)
    assert status == accepted, (status, text)
