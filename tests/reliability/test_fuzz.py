"""Schemathesis over the served OpenAPI document: every operation, with generated valid and invalid parameters and
bodies; then stateful runs that follow the links schemathesis infers between operations (a listed or submitted
workload's id into its reads and changes, a service's name into its scaling and rollouts). No answer may be a 5xx,
and every 4xx is a JSON object with a ``message``; a 400 also names the ``field``.

Two targets: a real `jupyter server` on 127.0.0.1, as a platform admin, a tenant member and her tenant's admin; and
the hetero service of a real JupyterHub (`jupyter hetero service`), through the hub's proxy with the member's and the
admin's hub tokens, fewer requests each. ``pytest -s`` prints the figures. The requests are the same each run;
``HETERO_RELIABILITY_LONG=1`` sends ten times as many, different each run.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import FlakyStrategyDefinition
from schemathesis import GenerationMode

from jupyter_hetero.api.openapi import build_document

from ..builders import team_catalog
from ..conftest import DEMO_NODES, _token
from ..harness import kill_runners_under
from ..hub.harness import CHP, HubProcess, hetero_service

pytestmark = pytest.mark.slow

LONG = os.environ.get("HETERO_RELIABILITY_LONG") == "1"
SCALE = 10 if LONG else 1
# Generated requests per operation and mode (valid, invalid), by caller: root, a platform admin; alice, a member of
# tenant vision; carol, vision's tenant-admin. Through the hub each request takes the proxy's hop: fewer.
SERVER_CALLERS = {"root": 12, "alice": 12, "carol": 4}
HUB_CALLERS = {"alice": 3, "carol": 1}
STATEFUL_RUNS = {"server": 20, "hub": 5}  # per caller, of up to 8 steps each
# A job that ends at once, whose id the generated calls may name as well as random ones.
QUICK = {"kind": "job", "template": "data-preprocessing", "command": ["true"]}
# Hypothesis settings for sending requests: deterministic unless long, no shrinking (a failure is recorded, not
# raised, so every defect of a run is listed at once), no example database on disk.
FUZZ = settings(deadline=None, database=None, derandomize=not LONG, phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck), print_blob=False)


@dataclass
class Findings:
    """What the fuzzer sent and every answer that breaks the rules, once per operation, status and message."""

    sent: Counter = field(default_factory=Counter)  # operation -> requests
    statuses: Counter = field(default_factory=Counter)  # status -> requests
    defects: dict = field(default_factory=dict)  # (operation, status, message) -> a curl command that shows it

    def check(self, case, response: requests.Response) -> None:
        operation = f"{case.method.upper()} {case.path}"
        self.sent[operation] += 1
        self.statuses[response.status_code] += 1
        problem = _problem(response)
        if problem:
            key = (operation, response.status_code, problem)
            self.defects.setdefault(key, case.as_curl_command())

    def report(self) -> str:
        return "\n".join(f"{operation} -> {status}: {problem}\n    {curl}"
                         for (operation, status, problem), curl in sorted(self.defects.items()))


def _problem(response: requests.Response) -> str | None:
    """Why an answer breaks the rules, or None."""
    status = response.status_code
    if status >= 500:
        return f"a server error: {response.text[:300]}"
    if status < 400:
        return None
    try:
        body = response.json()
    except ValueError:
        return f"a {status} whose body is not JSON: {response.text[:120]!r}"
    if not isinstance(body, dict) or not isinstance(body.get("message"), str) or not body["message"]:
        return f"a {status} without a message: {body!r:.200}"
    if status == 400 and not body.get("field"):
        return f"a 400 that names no field: {body['message']}"
    return None


@dataclass(frozen=True)
class Target:
    """Where the requests go, with whose tokens, and how many are generated per operation and mode, by caller."""

    name: str
    api: str
    tokens: dict[str, str]
    callers: dict[str, int]
    stateful_runs: int  # per caller

    def headers(self, user: str) -> dict[str, str]:
        return {"Authorization": f"token {self.tokens[user]}"}


@pytest.fixture(scope="module", params=["server", "hub"])
def target(request, tmp_path_factory) -> Iterator[Target]:
    """conftest's real server; or the hetero service of a real hub, with the same catalog, through the hub's proxy."""
    runs = STATEFUL_RUNS[request.param] * SCALE
    if request.param == "server":
        callers = {user: examples * SCALE for user, examples in SERVER_CALLERS.items()}
        yield Target("server", request.getfixturevalue("team_server").api, {user: _token(user) for user in callers},
                     callers, runs)
        return
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    callers = {user: examples * SCALE for user, examples in HUB_CALLERS.items()}
    root = tmp_path_factory.mktemp("fuzz-hub")
    service, _url = hetero_service(root, team_catalog(root, vision_a100=2), DEMO_NODES)
    try:
        with HubProcess.start(root, groups={}, users=tuple(callers), extra_config=service) as hub:
            hub.with_service(tuple(callers))
            yield Target("hub", f"{hub.url}services/hetero/hetero/api/v1", hub.tokens, callers, runs)
    finally:
        kill_runners_under(root)  # generated jobs and service replicas, orphans included


def _served_schema(target: Target):
    user = next(iter(target.callers))
    schema = schemathesis.openapi.from_url(f"{target.api}/openapi.json", headers=target.headers(user))
    schema.config.update(base_url=target.api)
    # The token is each caller's, sent with every request: a generated or missing one would only meet the
    # authentication, which test_authorisation.py covers, and never reach a handler.
    schema.config.generation.update(with_security_parameters=False)
    return schema


def _call(session: requests.Session, target: Target, user: str, case) -> requests.Response:
    _bound_the_wait(case)
    return case.call(base_url=target.api, session=session, headers=target.headers(user), timeout=60)


def _bound_the_wait(case) -> None:
    """A kernel's start waits at most a second for its placement. The fuzzer fills the inventory with placements
    that it never starts, and a start would then wait its whole wait_timeout (up to an hour) for room."""
    if (case.method.upper(), case.path) == ("POST", "/kernels") and isinstance(case.body, dict):
        wait = case.body.get("wait_timeout", 60)
        if isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait > 1:
            case.body["wait_timeout"] = 1


def test_every_operation_answers_generated_requests_without_a_server_error(target):
    schema = _served_schema(target)
    session = requests.Session()
    # Real things for half the calls to name, so that the handlers past the lookup run too.
    known = {"workload_id": _post(session, target, "workloads", QUICK)["id"], "service": "fuzzed",
             "template": "training", "node": "gpu-t4-0", "tenant": "vision", "family": "nvidia"}
    _post(session, target, "services", {"name": "fuzzed", "command": ["true"]})
    findings = Findings()
    nothing_invalid = set()
    for operation in (result.ok() for result in schema.get_all_operations()):
        fixed = _known_path(operation.path, known)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            if mode is GenerationMode.NEGATIVE and not _can_be_invalid(operation):
                nothing_invalid.add(f"{operation.method.upper()} {operation.path}")  # its valid calls are all
                continue
            strategy = operation.as_strategy(generation_mode=mode)
            if fixed:
                strategy = st.one_of(strategy, operation.as_strategy(generation_mode=mode, path_parameters=fixed))
            for user, examples in target.callers.items():
                _run(strategy, examples,
                     lambda case, user=user: findings.check(case, _call(session, target, user, case)))
    total = sum(findings.sent.values())
    print(f"\n{target.name}: fuzzed {len(findings.sent)} operations ({len(nothing_invalid)} with nothing to make "
          f"invalid) with {total} requests; statuses {dict(sorted(findings.statuses.items()))}; "
          f"{len(findings.defects)} defects")
    # Every operation of the document but the document itself, which schemathesis leaves out as not the API's.
    assert set(findings.sent) == {f"{method.upper()} {path}" for path, methods in build_document()["paths"].items()
                                  for method in methods} - {"GET /openapi.json"}
    assert not findings.defects, findings.report()


def _can_be_invalid(operation) -> bool:
    """Whether a request of ``operation`` can be made invalid: it takes a body or a query, or a path parameter
    that is not any string."""
    parameters = operation.definition.raw.get("parameters", [])
    return "requestBody" in operation.definition.raw or any(
        p["in"] != "path" or p["schema"].get("type") != "string" for p in parameters)


def _known_path(path: str, known: dict) -> dict:
    """Path parameters naming real things for ``path``: its workload, service, template, node or tenant."""
    values = {}
    if "{workload_id}" in path:
        values["workload_id"] = known["workload_id"]
    if "{name}" in path:
        kind = next((kind for prefix, kind in (("/services", "service"), ("/templates", "template"),
                                                ("/nodes", "node"), ("/onboarding/nodes", "node"),
                                                ("/onboarding/tenants", "tenant")) if path.startswith(prefix)), None)
        if kind:
            values["name"] = known[kind]
    if "{template}" in path:
        values.update(template=known["template"], family=known["family"])
    return values


def test_stateful_runs_follow_the_links_between_operations(target):
    schema = _served_schema(target)
    session = requests.Session()
    # Something for the first calls of a run (the lists) to find and the links to carry on: alice's job and service.
    _post(session, target, "workloads", QUICK)
    _post(session, target, "services", {"name": "stateful", "command": ["true"]})
    findings = Findings()
    runs, restarts = Counter(), 0
    for user in target.callers:

        class Run(schema.as_state_machine()):
            def before_call(self, case):
                _bound_the_wait(case)

            def get_call_kwargs(self, case, user=user):
                return {"base_url": target.api, "session": session, "headers": target.headers(user), "timeout": 60}

            def validate_response(self, response, case, **kwargs):
                findings.check(case, response)

            def teardown(self, user=user):
                runs[user] += 1

        while True:
            try:
                Run.run(settings=settings(FUZZ, max_examples=max(target.stateful_runs - runs[user], 1),
                                          stateful_step_count=8, derandomize=not LONG and not restarts))
                break
            except FlakyStrategyDefinition:
                # What a run draws follows the server's answers, and the server has changed since hypothesis last
                # drew that way: go on in a fresh session, as schemathesis's own runner does.
                restarts += 1
                assert restarts <= 10, "the stateful runs keep restarting"
    total = sum(findings.sent.values())
    print(f"\n{target.name}, stateful: runs {dict(runs)} ({restarts} restarts), {total} requests over "
          f"{len(findings.sent)} operations; statuses {dict(sorted(findings.statuses.items()))}; "
          f"{len(findings.defects)} defects")
    assert total >= target.stateful_runs * len(target.callers)
    assert not findings.defects, findings.report()


def _run(strategy, examples: int, send) -> None:
    """``send`` each of ``examples`` cases that ``strategy`` draws."""

    @settings(FUZZ, max_examples=examples)
    @given(case=strategy)
    def fuzz(case):
        send(case)

    fuzz()


def _post(session: requests.Session, target: Target, route: str, body: dict) -> dict:
    """``body`` posted to ``route`` as alice."""
    response = session.post(f"{target.api}/{route}", json=body, headers=target.headers("alice"), timeout=60)
    assert response.status_code == 201, response.text
    return response.json()
