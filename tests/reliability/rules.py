"""Who gets past each operation of the served OpenAPI document: one table for every authorisation matrix
(tests/reliability/test_authorisation.py on one server, tests/hub/test_authorisation.py through the hub).

    for method, path in operations():
        allowed = caller in RULES[(method, path)]
        route = fill(path, workload_id="7", name="matrix")

The callers are named as both matrices have them: alice, a member of tenant vision, who owns the resources named
in paths; carol, vision's tenant-admin; bob, a member of tenant nlp; root, a platform admin; and the scoped
credential of another of alice's running jobs: not the workload the paths name, nor one it submitted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from jupyter_hetero.api.openapi import build_document

__all__ = ["BODIES", "EVERYONE", "GATE", "MODEL", "OWNERS", "PEOPLE", "QUERIES", "READERS", "RULES", "credential_in", "fill",
           "operations", "verdict"]

PEOPLE = frozenset({"alice", "carol", "bob", "root"})
EVERYONE = PEOPLE | {"credential"}
# A resource in a path is alice's: her workload, her service, her placement: hers, her tenant's admin's and a platform
# admin's to act on.
OWNERS = frozenset({"alice", "carol", "root"})
# A workload's credential is code running in a job (a dependency, a pasted cell): it acts on its own workload and the
# follow-up jobs it submits (which end with it), never on alice's other work, which the paths name, and it creates
# nothing that would outlive its job: no placement, server, started mark, activity report or service (issue 33).
# It still reads what any member of the tenant reads (queues, nodes, its tenant's services) and submits follow-ups.
READERS = OWNERS | {"credential"}

RULES: dict[tuple[str, str], frozenset[str]] = {
    ("get", "/version"): EVERYONE,
    ("get", "/scheduler/ticks"): frozenset({"root"}),
    ("get", "/openapi.json"): EVERYONE,
    ("get", "/templates"): EVERYONE,
    ("get", "/templates/{name}"): EVERYONE,
    ("get", "/queues"): EVERYONE,
    ("get", "/tenants/me"): EVERYONE,
    ("get", "/tenants"): frozenset({"carol", "root"}),
    ("get", "/audit"): frozenset({"root"}),
    ("get", "/audit/verify"): frozenset({"root"}),
    ("get", "/alerts"): EVERYONE,
    ("get", "/usage"): EVERYONE,
    ("get", "/capacity"): frozenset({"root"}),
    ("get", "/report"): frozenset({"root"}),
    ("get", "/onboarding"): frozenset({"root"}),
    ("post", "/onboarding/nodes/{name}"): frozenset({"root"}),
    ("post", "/onboarding/tenants/{name}"): frozenset({"root"}),
    ("post", "/onboarding/chips/{model}"): frozenset({"root"}),
    ("post", "/onboarding/models/{name}"): frozenset({"root"}),
    ("post", "/onboarding/frameworks/{template}/{family}"): frozenset({"root"}),
    ("post", "/catalog/reload"): frozenset({"root"}),
    ("get", "/metrics"): frozenset({"root"}),
    ("get", "/nodes"): EVERYONE,
    ("delete", "/nodes/{name}"): frozenset({"root"}),
    ("get", "/workloads"): EVERYONE,
    # Work is submitted into a tenant: root, a platform admin named in none, has none to submit into.
    ("post", "/workloads"): EVERYONE - {"root"},
    ("get", "/workloads/{workload_id}"): OWNERS,
    ("delete", "/workloads/{workload_id}"): OWNERS,
    ("get", "/workloads/{workload_id}/events"): OWNERS,
    ("get", "/workloads/{workload_id}/logs"): OWNERS,
    ("get", "/workloads/{workload_id}/explain"): OWNERS,
    ("get", "/workloads/{workload_id}/files"): OWNERS,
    ("get", "/workloads/{workload_id}/evidence"): OWNERS,
    ("get", "/workloads/{workload_id}/metrics"): OWNERS,
    # A workload's figures are reported by the workload itself or by its owner: nobody reports for another.
    ("post", "/workloads/{workload_id}/metrics"): frozenset({"alice"}),
    ("post", "/workloads/{workload_id}/resubmit"): OWNERS - {"root"},  # submitted again, as the caller
    ("post", "/workloads/{workload_id}/preempt"): frozenset({"root"}),
    ("post", "/previews"): EVERYONE - {"root"},  # a preview is of a submission into the caller's tenant
    ("post", "/kernels"): PEOPLE - {"root"},
    ("post", "/servers"): PEOPLE,
    # A placement is started and reported by its own user's server: no admin does it for them.
    ("post", "/servers/{workload_id}/started"): frozenset({"alice"}),
    ("delete", "/servers/{workload_id}"): OWNERS,
    ("post", "/kernels/placements"): PEOPLE,
    ("post", "/kernels/placements/{workload_id}/started"): frozenset({"alice"}),
    ("delete", "/kernels/placements/{workload_id}/pod"): OWNERS,
    ("delete", "/kernels/placements/{workload_id}"): OWNERS,
    ("post", "/activity"): PEOPLE,
    ("get", "/services"): EVERYONE,
    ("post", "/services"): PEOPLE,
    ("get", "/services/{name}"): READERS,
    ("get", "/services/{name}/events"): READERS,
    ("patch", "/services/{name}"): OWNERS,
    ("delete", "/services/{name}"): OWNERS,
    ("post", "/services/{name}/rollouts"): OWNERS,
    ("post", "/services/{name}/rollback"): OWNERS,
    ("get", "/kernels/{kernel_id}/usage"): EVERYONE,
    # A schedule is its owner's (their tenant's admin's, a platform admin's): a member lists their own. Its runs are
    # submitted as its owner, so a platform admin in no tenant defines none; a credential reads its user's, and
    # changes none: a schedule outlives the job.
    ("get", "/schedules"): EVERYONE,
    ("post", "/schedules"): PEOPLE - {"root"},
    ("get", "/schedules/{schedule_id}"): READERS,
    ("patch", "/schedules/{schedule_id}"): OWNERS,
    ("delete", "/schedules/{schedule_id}"): OWNERS,
    ("post", "/schedules/{schedule_id}/pause"): OWNERS,
    ("post", "/schedules/{schedule_id}/resume"): OWNERS,
    ("post", "/schedules/{schedule_id}/run"): OWNERS,
}
# A valid request where one is needed to reach the rule (a body or query that fails validation is a 400 first).
BODIES = {("post", "/workloads"): {"kind": "job", "template": "data-preprocessing", "command": ["true"]},
          ("post", "/previews"): {"template": "training"},
          ("post", "/workloads/{workload_id}/metrics"): {"metrics": {"loss": 0.5}},
          ("patch", "/services/{name}"): {"replicas": 1},
          ("post", "/services/{name}/rollouts"): {"env": {"MODEL_VERSION": "2"}},
          ("post", "/schedules"): {"name": "matrix", "cron": "0 2 * * *",
                                   "job": {"template": "data-preprocessing", "command": ["true"]}},
          ("patch", "/schedules/{schedule_id}"): {"name": "renamed"}}
# A service's name is per tenant: each call names alice's tenant, so that root (a platform admin) reaches her service
# and bob, of another tenant, is refused for naming vision (without it he would look in his own: a 404).
_ALICES_TENANT = {"tenant": "vision"}
QUERIES = {("get", "/workloads/{workload_id}/files"): {"path": "outputs/result.csv"},
           **{(method, path): _ALICES_TENANT for method, path in (
               ("get", "/services/{name}"), ("get", "/services/{name}/events"), ("patch", "/services/{name}"),
               ("delete", "/services/{name}"), ("post", "/services/{name}/rollouts"),
               ("post", "/services/{name}/rollback"))}}
# What a path's parameters are: alice's service "matrix", a kernel and a chip that are not there, and by path the
# names that must be real (a template) or must change nothing (no such node to onboard; root's call takes out a node).
_VALUES = {"name": "matrix", "kernel_id": "no-such-kernel", "model": "no-such-chip", "template": "training",
           "family": "nvidia"}
_NAMES = {"/templates/{name}": "training", "/nodes/{name}": "npu-910b-0", "/onboarding/nodes/{name}": "no-such-node",
          "/onboarding/tenants/{name}": "vision", "/onboarding/models/{name}": "no-such-model"}


# What the matrices run for alice: a job that prints its credential and runs until a file appears, and a model
# server for her service.
GATE = "import os, sys, time\nprint('TOKEN', os.environ['JUPYTER_HETERO_TOKEN'], flush=True)\n" \
       "while not os.path.exists(sys.argv[1]): time.sleep(0.05)\n"
MODEL = [sys.executable, str(Path(__file__).resolve().parents[1] / "serving" / "model_server.py")]


def credential_in(log: str | None) -> str | None:
    """The credential a GATE job printed in its ``log``, once it has."""
    return next((line.split()[1] for line in (log or "").splitlines() if line.startswith("TOKEN ")), None)


def operations() -> list[tuple[str, str]]:
    """Every (method, path) of the served document, sorted."""
    return sorted((method, path) for path, methods in build_document()["paths"].items() for method in methods)


def fill(path: str, *, workload_id: str, schedule_id: str = "1") -> str:
    """``path`` with its parameters named: alice's workload ``workload_id`` and schedule ``schedule_id``, and the
    values above."""
    values = {**_VALUES, "workload_id": workload_id, "schedule_id": schedule_id,
              "name": _NAMES.get(path, _VALUES["name"])}
    for key, value in values.items():
        path = path.replace(f"{{{key}}}", value)
    return path


def verdict(method: str, path: str, caller: str, status: int,
            rules: dict[tuple[str, str], frozenset[str]] = RULES) -> str | None:
    """What is wrong with ``status`` for ``caller`` under the operation's rule in ``rules``, or None: "allowed" is
    neither 401 nor 403 (a 400, 404 or 409 is past the rule), "refused" is 401 or 403; a 500 is wrong either way."""
    allowed = caller in rules[(method, path)]
    if status >= 500 or allowed == (status in (401, 403)):
        return f"{method.upper()} {path} as {caller}: {status}, expected {'allowed' if allowed else 'refused'}"
    return None
