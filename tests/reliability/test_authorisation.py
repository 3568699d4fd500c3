"""The authorisation matrix: every operation of the served OpenAPI document, as every kind of caller of one server,
against the rule that operation has. A new operation without a rule fails the first test.

Callers: anonymous (no token), alice (a member of tenant vision, who owns the resources tried), carol (vision's
tenant-admin), bob (a member of tenant nlp), root (a platform admin), and the scoped credential of one of alice's
running jobs (its own work only). What a call may do beyond getting past its rule (a 400 for the minimal body
sent, a 404 for a file that is not there, a 409 for a state) is not this test's business: "allowed" means neither
401 nor 403, "refused" means 401 or 403 (another tenant's resource is refused with 403 and the reason, not hidden).
Not covered here: a JupyterHub service token (the hub suites test those) and XSRF, which jupyter-server itself
enforces on cookie-authenticated calls, never on token-authenticated ones.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_hetero.api.openapi import build_document

from ..conftest import _token
from ..harness import until_async

pytestmark = [pytest.mark.usefixtures("team"), pytest.mark.team(vision_a100=2)]

MODEL = [sys.executable, str(Path(__file__).resolve().parents[1] / "serving" / "model_server.py")]
GATE = "import os, sys, time\nprint('TOKEN', os.environ['JUPYTER_HETERO_TOKEN'], flush=True)\n" \
       "while not os.path.exists(sys.argv[1]): time.sleep(0.05)\n"
CALLERS = ("anonymous", "alice", "carol", "bob", "root", "credential")
PEOPLE = {"alice", "carol", "bob", "root"}
EVERYONE = PEOPLE | {"credential"}

# Who gets past each operation's rule. A resource in a path is alice's: her workload, her service, her placement.
# A workload's credential acts as its submitter, for her own work only: alice's workloads and services are its.
OWNERS = {"alice", "carol", "root", "credential"}  # alice, her tenant's admin, a platform admin, her credential
RULES: dict[tuple[str, str], set[str]] = {
    ("get", "/version"): EVERYONE,
    ("get", "/openapi.json"): EVERYONE,
    ("get", "/templates"): EVERYONE,
    ("get", "/templates/{name}"): EVERYONE,
    ("get", "/queues"): EVERYONE,
    ("get", "/tenants/me"): EVERYONE,
    ("get", "/tenants"): {"carol", "root"},
    ("get", "/audit"): {"root"},
    ("get", "/audit/verify"): {"root"},
    ("get", "/alerts"): EVERYONE,
    ("get", "/usage"): EVERYONE,
    ("get", "/capacity"): {"root"},
    ("get", "/report"): {"root"},
    ("get", "/onboarding"): {"root"},
    ("post", "/onboarding/nodes/{name}"): {"root"},
    ("post", "/onboarding/tenants/{name}"): {"root"},
    ("post", "/onboarding/chips/{model}"): {"root"},
    ("post", "/onboarding/models/{name}"): {"root"},
    ("post", "/onboarding/frameworks/{template}/{family}"): {"root"},
    ("post", "/catalog/reload"): {"root"},
    ("get", "/metrics"): {"root"},
    ("get", "/nodes"): EVERYONE,
    ("delete", "/nodes/{name}"): {"root"},
    ("get", "/workloads"): EVERYONE,
    # Work is submitted into a tenant: root, a platform admin named in none, has none to submit into.
    ("post", "/workloads"): EVERYONE - {"root"},
    ("get", "/workloads/{workload_id}"): OWNERS,
    ("delete", "/workloads/{workload_id}"): OWNERS,
    ("get", "/workloads/{workload_id}/events"): OWNERS,
    ("get", "/workloads/{workload_id}/logs"): OWNERS,
    ("get", "/workloads/{workload_id}/explain"): OWNERS,
    ("get", "/workloads/{workload_id}/files"): OWNERS,
    ("post", "/workloads/{workload_id}/resubmit"): OWNERS - {"root"},  # submitted again, as the caller
    ("post", "/workloads/{workload_id}/preempt"): {"root"},
    ("post", "/previews"): EVERYONE - {"root"},  # a preview is of a submission into the caller's tenant
    ("post", "/kernels"): EVERYONE - {"root"},
    ("post", "/servers"): EVERYONE,
    # A placement is started and reported by its own user's server: no admin does it for them.
    ("post", "/servers/{workload_id}/started"): {"alice", "credential"},
    ("delete", "/servers/{workload_id}"): OWNERS,
    ("post", "/kernels/placements"): EVERYONE,
    ("post", "/kernels/placements/{workload_id}/started"): {"alice", "credential"},
    ("delete", "/kernels/placements/{workload_id}/pod"): OWNERS,
    ("delete", "/kernels/placements/{workload_id}"): OWNERS,
    ("post", "/activity"): EVERYONE,
    ("get", "/services"): EVERYONE,
    ("post", "/services"): EVERYONE,
    ("get", "/services/{name}"): OWNERS,
    ("patch", "/services/{name}"): OWNERS,
    ("delete", "/services/{name}"): OWNERS,
    ("post", "/services/{name}/rollouts"): OWNERS,
    ("post", "/services/{name}/rollback"): OWNERS,
    ("get", "/kernels/{kernel_id}/usage"): EVERYONE,
}
# A valid request where one is needed to reach the rule (a body or query that fails validation is a 400 first).
BODIES = {("post", "/workloads"): {"kind": "job", "template": "data-preprocessing", "command": ["true"]},
          ("post", "/previews"): {"template": "training"},
          ("patch", "/services/{name}"): {"replicas": 1},
          ("post", "/services/{name}/rollouts"): {"env": {"MODEL_VERSION": "2"}}}
QUERIES = {("get", "/workloads/{workload_id}/files"): {"path": "outputs/result.csv"}}

def operations() -> list[tuple[str, str]]:
    return sorted((method, path) for path, methods in build_document()["paths"].items() for method in methods)


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
    tokens = {"anonymous": "", "credential": f"token {log}",
              **{user: f"token {_token(user)}" for user in PEOPLE}}
    values = {"name": "matrix", "workload_id": str(target["id"]), "kernel_id": "no-such-kernel",
              "model": "no-such-chip", "template": "training", "family": "nvidia"}
    names = {"/templates/{name}": "training", "/nodes/{name}": "npu-910b-0",  # root's call takes it out
             "/onboarding/nodes/{name}": "no-such-node", "/onboarding/tenants/{name}": "vision",
             "/onboarding/models/{name}": "no-such-model"}

    wrong = []
    try:
        for method, path in operations():
            route = path
            for key, value in {**values, "name": names.get(path, values["name"])}.items():
                route = route.replace(f"{{{key}}}", value)
            for caller in CALLERS:
                status = await _status(jp_fetch, method, route, tokens[caller], BODIES.get((method, path), {}),
                                       QUERIES.get((method, path)))
                allowed = caller in RULES[(method, path)]
                if allowed == (status in (401, 403)):
                    wrong.append(f"{method.upper()} {path} as {caller}: {status}, expected "
                                 f"{'allowed' if allowed else 'refused'}")
        assert not wrong, "\n".join(wrong)
    finally:
        (jp_root_dir / "open").touch()  # the service was deleted by the matrix's own DELETE


async def _token_in(api, workload_id: int) -> str | None:
    log = await api.text(f"workloads/{workload_id}/logs", as_user="alice")
    return next((line.split()[1] for line in log.splitlines() if line.startswith("TOKEN ")), None)


async def _status(jp_fetch, method: str, route: str, authorization: str, body: dict, query: dict | None) -> int:
    try:
        response = await jp_fetch("hetero", "api", "v1", *route.strip("/").split("/"), method=method.upper(),
                                  body=None if method in ("get", "delete") else json.dumps(body), params=query,
                                  allow_nonstandard_methods=True, raise_error=True,
                                  headers={"Authorization": authorization}, request_timeout=60)
    except HTTPClientError as error:
        return error.code
    return response.code
