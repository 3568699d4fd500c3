"""The authorisation matrix: every operation of the served OpenAPI document, as every kind of caller of one server,
against the rule that operation has. A new operation without a rule fails the first test.

Callers: anonymous (no token), alice (a member of tenant vision, who owns the resources tried), carol (vision's
tenant-admin), bob (a member of tenant nlp), root (a platform admin), and the scoped credential of one of alice's
running jobs (its own work only). What a call may do beyond getting past its rule (a 400 for the minimal body
sent, a 404 for a file that is not there, a 409 for a state) is not this test's business: "allowed" means neither
401 nor 403, "refused" means 401 or 403 (another tenant's resource is refused with 403 and the reason, not hidden).
The rules are tests/reliability/rules.py's, which the hub's matrix (tests/hub/test_authorisation.py: hub tokens,
hub services) reads too; XSRF, which concerns cookie-authenticated calls only, is tests/reliability/test_xsrf.py's.
"""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import HTTPClientError

from ..conftest import _token
from ..harness import until_async
from .rules import BODIES, GATE, MODEL, PEOPLE, QUERIES, RULES, credential_in, fill, operations, verdict

pytestmark = [pytest.mark.usefixtures("team"), pytest.mark.team(vision_a100=2)]

CALLERS = ("anonymous", "alice", "carol", "bob", "root", "credential")


def test_every_operation_of_the_document_has_a_rule_and_no_rule_is_left_over():
    assert set(operations()) == set(RULES), (sorted(set(operations()) - set(RULES)),
                                             sorted(set(RULES) - set(operations())))


async def test_every_operation_as_every_caller_gets_past_its_rule_or_is_refused(api, jp_fetch, wait_for,
                                                                                jp_root_dir):
    (jp_root_dir / "gate.py").write_text(GATE, encoding="utf-8")
    gated = {"kind": "job", "template": "data-preprocessing",
             "script": {"path": "gate.py", "args": [str(jp_root_dir / "open")]}}
    holder = await api("workloads", "POST", gated, as_user="alice")  # its credential is the sixth caller
    target = await api("workloads", "POST", gated, as_user="alice")  # the workload the calls name
    for workload in (holder, target):
        await wait_for(workload["id"], lambda w: w["state"] == "running", as_user="alice")
    log = await until_async(lambda: _token_in(api, holder["id"]), "the job's credential in its log")
    await api("services", "POST", {"name": "matrix", "command": MODEL, "parameters": {"devices": 1}},
              as_user="alice")
    schedule = await api("schedules", "POST", BODIES[("post", "/schedules")], as_user="alice")
    tokens = {"anonymous": "", "credential": f"token {log}",
              **{user: f"token {_token(user)}" for user in PEOPLE}}
    wrong = []
    try:
        for method, path in operations():
            route = fill(path, workload_id=str(target["id"]), schedule_id=str(schedule["id"]))
            for caller in CALLERS:
                status = await _status(jp_fetch, method, route, tokens[caller], BODIES.get((method, path), {}),
                                       QUERIES.get((method, path)))
                if (problem := verdict(method, path, caller, status)) is not None:
                    wrong.append(problem)
        assert not wrong, "\n".join(wrong)
    finally:
        (jp_root_dir / "open").touch()  # the service was deleted by the matrix's own DELETE


async def _token_in(api, workload_id: int) -> str | None:
    return credential_in(await api.text(f"workloads/{workload_id}/logs", as_user="alice"))


async def _status(jp_fetch, method: str, route: str, authorization: str, body: dict, query: dict | None) -> int:
    try:
        response = await jp_fetch("hetero", "api", "v1", *route.strip("/").split("/"), method=method.upper(),
                                  body=None if method in ("get", "delete") else json.dumps(body), params=query,
                                  allow_nonstandard_methods=True, raise_error=True,
                                  headers={"Authorization": authorization}, request_timeout=60)
    except HTTPClientError as error:
        return error.code
    return response.code
