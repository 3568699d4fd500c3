"""The authorisation matrix through the hub: every operation of the served OpenAPI document, as every kind of caller
the hub's hetero service has, against the same rules as the single server's (tests/reliability/rules.py).

One real JupyterHub, its proxy and the hetero service for the whole module; every call goes through the proxy to
/services/hetero/hetero/api/v1/..., with a hub token in its Authorization header, as a user's script or server
makes it. The service is JupyterHub's single-user server: the hub's HubAuth lets a token in only with the scope
access:services!service=hetero, and names its owner; the catalog maps a user, by name or hub group, to a tenant.

Callers: the six of the single server (anonymous; alice of tenant vision, who owns what the paths name; carol,
vision's tenant-admin; bob of tenant nlp, by his hub group nlp-team; root, a platform admin; the credential of one
of alice's running jobs); then the hub's own: another hub service's token without access to hetero (the tests'
admin service), a token of alice's without that scope, the hetero service's own token, a hub service granted
access (monitor), and one granted access whose name is a user's (alice). The single server's owner (whoever holds
its token) does not exist here: the service has no owner, and its own token is refused like any other service's.
"""

from __future__ import annotations

import secrets
import time
import urllib.parse

import pytest

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from ..harness import kill_runners_under
from ..reliability.rules import BODIES, EVERYONE, GATE, MODEL, QUERIES, RULES, credential_in, fill, operations, verdict
from .harness import CHP, HubProcess, hetero_service

pytestmark = pytest.mark.slow

API = "services/hetero/hetero/api/v1/"
PEOPLE = ("alice", "carol", "bob", "root")
RULED = ("anonymous", *PEOPLE, "credential")  # the callers the rules name
# Refused everywhere by the hub's own check (403): no access:services!service=hetero in the token.
UNSCOPED = ("other-service", "no-access", "hetero-service")
# Past the hub's check, refused by the service: a hub service is no person, whatever its name (403 hub-service).
SERVICES = ("monitor", "alice-service")
CALLERS = (*RULED, *UNSCOPED, *SERVICES)
# Where the hub's service answers a ruled caller otherwise than the single server, and why.
HUB_RULES = {
    # The service starts no kernels (a user's server does, placed by it): 409 to every signed-in caller, before
    # the tenant check that refuses root on a single server.
    ("post", "/kernels"): EVERYONE,
}
# What a hub service with access gets past: the catalog's public parts and the node list, which ask no one's
# tenant; and a call answered before the rule is reached (a 404 for no such kernel). Creating a server, a service
# or a kernel placement asks for a person before its body is read (what it creates, and the credential it may
# mint, must belong to someone), so a hub service gets its 403 there before any 400 for the minimal body.
SERVICE_PAST = {("get", "/openapi.json"), ("get", "/templates"), ("get", "/templates/{name}"), ("get", "/nodes"),
                ("get", "/kernels/{kernel_id}/usage")}
SERVICE_TOKEN, MONITOR_TOKEN, ALICE_SERVICE_TOKEN = (secrets.token_hex(16) for _ in range(3))
GRANTED = f"""
c.JupyterHub.services += [{{"name": "monitor", "api_token": "{MONITOR_TOKEN}"}},
                          {{"name": "alice", "api_token": "{ALICE_SERVICE_TOKEN}"}}]  # a service, not the user alice
c.JupyterHub.load_roles.append({{"name": "hetero-readers", "services": ["monitor", "alice"],
                                "scopes": ["access:services!service=hetero"]}})
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub-authorisation")
    catalog = team_catalog(root, vision_a100=2)  # vision: alice, carol its admin; nlp: hub group nlp-team; root
    service, _url = hetero_service(root, catalog, DEMO_NODES, api_token=SERVICE_TOKEN)
    with HubProcess.start(root, groups={"nlp-team": ["bob"]}, users=("alice", "carol", "root"),
                          extra_config=service + GRANTED) as running:
        yield running.with_service(PEOPLE)
    kill_runners_under(root)  # alice's service, if the matrix failed before its DELETE


def call(hub: HubProcess, method: str, route: str, token: str, body=None, query=None) -> tuple[int, object]:
    """One call through the hub's proxy to the service: (status, decoded answer)."""
    path = API + route.strip("/") + (f"?{urllib.parse.urlencode(query)}" if query else "")
    if method in ("post", "patch", "put") and body is None:
        body = {}
    return hub._request(path, method.upper(), body, token=token, check=False, with_status=True)


def until(predicate, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return found


def expected_past(method: str, path: str, caller: str) -> bool:
    if caller in UNSCOPED:
        return False
    if caller in SERVICES:
        return (method, path) in SERVICE_PAST
    return caller in HUB_RULES.get((method, path), RULES[(method, path)])


def test_every_hub_difference_is_of_an_operation_the_document_has():
    assert set(HUB_RULES) | SERVICE_PAST <= set(operations())


def test_every_operation_as_every_hub_caller_gets_past_its_rule_or_is_refused(hub):
    home = hub.root / "homes" / "alice"  # the service reads alice's scripts from her own root
    home.mkdir(parents=True, exist_ok=True)
    (home / "gate.py").write_text(GATE, encoding="utf-8")
    gated = {"kind": "job", "template": "data-preprocessing", "script": {"path": "gate.py", "args": [str(home / "open")]}}
    alice = hub.tokens["alice"]
    holder, target = (call(hub, "post", "workloads", alice, gated)[1] for _ in range(2))
    for workload in (holder, target):
        until(lambda: call(hub, "get", f"workloads/{workload['id']}", alice)[1]["state"] == "running",
              f"workload {workload['id']} to run")
    credential = until(lambda: credential_in(call(hub, "get", f"workloads/{holder['id']}/logs", alice)[1]),
                       "the job's credential in its log")
    status, created = call(hub, "post", "services", alice, {"name": "matrix", "command": MODEL,
                                                           "parameters": {"devices": 1}})
    assert status == 201, created
    status, schedule = call(hub, "post", "schedules", alice, BODIES[("post", "/schedules")])
    assert status == 201, schedule
    no_access = hub.api("users/alice/tokens", "POST", {"note": "no hetero access",
                                                        "scopes": ["read:users:name!user=alice"]})["token"]
    tokens = {"anonymous": "", **{user: hub.tokens[user] for user in PEOPLE}, "credential": credential,
              "other-service": hub.admin_token, "no-access": no_access, "hetero-service": SERVICE_TOKEN,
              "monitor": MONITOR_TOKEN, "alice-service": ALICE_SERVICE_TOKEN}
    wrong, calls = [], 0
    try:
        for method, path in operations():
            route = fill(path, workload_id=str(target["id"]), schedule_id=str(schedule["id"]))
            for caller in CALLERS:
                status, answer = call(hub, method, route, tokens[caller], BODIES.get((method, path)),
                                      QUERIES.get((method, path)))
                calls += 1
                rules = {(method, path): frozenset({caller} if expected_past(method, path, caller) else ())}
                if (problem := verdict(method, path, caller, status, rules)) is not None:
                    wrong.append(f"{problem}: {str(answer)[:160]}")
        assert not wrong, "\n".join(wrong)
    finally:
        (home / "open").touch()  # alice's gated jobs end; her service was deleted by the matrix's DELETE
    print(f"\nhub matrix: {len(operations())} operations x {len(CALLERS)} callers = {calls} calls")


def test_a_hub_service_named_as_a_user_is_not_that_user(hub):
    # It was: a service called alice, granted access to hetero, read, cancelled and submitted alice's work as hers.
    for token in (ALICE_SERVICE_TOKEN, MONITOR_TOKEN):
        status, answer = call(hub, "get", "tenants/me", token)
        assert (status, answer["reason"]) == (403, "hub-service"), answer
        assert "is not a user" in answer["message"] and answer["message_zh"] != answer["message"], answer
        status, answer = call(hub, "post", "workloads", token, BODIES[("post", "/workloads")])
        assert (status, answer["reason"]) == (403, "hub-service"), answer
    status, me = call(hub, "get", "tenants/me", hub.tokens["alice"])  # the user alice is still herself
    assert (status, me["user"], me["tenant"]) == (200, "alice", "vision"), me
