"""One set of answers for putting a workload in its queue (platform/workloads/enqueue.py), whatever its kind: a job, a
kernel of this server, a hub user's server, a kernel of such a server, a service's replicas. Each kind goes
through its own route of a real server; the answers are the same."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

import pytest

from ..conftest import _token
from .test_kernels import kernelspecs  # noqa: F401 - the generic hetero kernelspec, for a kernel of this server

# nlp may use the queues of the templates below but not "training", which every refusal by queue names.
pytestmark = [pytest.mark.usefixtures("team", "kernelspecs"),
              pytest.mark.team(nlp={"queues": ["batch", "experiment", "inference"]})]


@dataclass(frozen=True)
class Kind:
    """How one kind is asked for: its route, a body from a template, and one of its templates."""

    name: str  # as in "does not run {name}s"
    route: str
    runs: str  # a template that runs this kind, whose queue nlp may use
    extra: dict = field(default_factory=dict)

    def body(self, template: str, **fields) -> dict:
        return {"template": template, **self.extra, **fields}


KINDS = [
    pytest.param(Kind("job", "workloads", "data-preprocessing", {"kind": "job", "command": ["true"]}), id="job"),
    pytest.param(Kind("kernel", "kernels", "interactive", {"wait": True}), id="kernel of this server"),
    pytest.param(Kind("server", "servers", "interactive"), id="hub user's server"),
    pytest.param(Kind("kernel", "kernels/placements", "interactive", {"kernel_id": "k-1"}),
                 id="kernel of a hub user's server"),
    pytest.param(Kind("service", "services", "online-inference",
                      {"name": "echo", "command": ["python", "-c", "import time; time.sleep(60)"]}), id="service"),
]


def stored(tmp_path) -> int:
    return sqlite3.connect(tmp_path / "hetero.sqlite").execute("SELECT COUNT(*) FROM workloads").fetchone()[0]


@pytest.mark.parametrize("kind", KINDS)
async def test_an_unknown_template_is_a_404_naming_it(api_error, tmp_path, kind):
    status, error = await api_error(kind.route, "POST", kind.body("no-such"), as_user="alice")
    assert (status, error["field"]) == (404, "template"), error
    assert "template 'no-such' does not exist" in error["message"] and "training" in error["known"], error
    assert stored(tmp_path) == 0


@pytest.mark.parametrize("kind", KINDS)
async def test_a_template_that_does_not_run_the_kind_is_a_400_naming_the_template(api_error, tmp_path, kind):
    # hpc runs jobs only; for a job, interactive runs kernels (and servers) only.
    template = "interactive" if kind.name == "job" else "hpc"
    status, error = await api_error(kind.route, "POST", kind.body(template), as_user="alice")
    assert (status, error["field"]) == (400, "template"), error
    runs = "kernel, server" if kind.name == "job" else "job"
    assert error["message"] == f"template {template} does not run {kind.name}s (it runs {runs})", error
    assert error["message_zh"] != error["message"], error
    assert stored(tmp_path) == 0


@pytest.mark.parametrize("kind", KINDS)
async def test_a_queue_the_tenant_may_not_use_is_a_403_with_the_reason(api_error, tmp_path, kind):
    status, error = await api_error(kind.route, "POST", kind.body(kind.runs, queue="training"), as_user="bob")
    assert (status, error["reason"]) == (403, "tenant nlp may not submit to queue training"), error
    assert stored(tmp_path) == 0


@pytest.mark.parametrize("kind", KINDS)
async def test_an_unknown_queue_is_a_404_naming_it(api_error, tmp_path, kind):
    status, error = await api_error(kind.route, "POST", kind.body(kind.runs, queue="vip"), as_user="alice")
    assert (status, error["field"]) == (404, "queue"), error
    assert stored(tmp_path) == 0


@pytest.mark.parametrize("kind", KINDS)
async def test_a_template_with_no_flavor_the_tenant_has_quota_for_is_a_403(api, api_error, tmp_path, kind):
    # Template vision runs every kind here (servers as an interactive one), on flavors nlp has no quota for.
    status, error = await api_error(kind.route, "POST", kind.body("vision"), as_user="bob")
    assert status == 403, error
    assert error["reason"].startswith("tenant nlp has no quota for any flavor of template vision"), error
    assert stored(tmp_path) == 0
    denied = (await api("audit", as_user="root", outcome="denied"))["entries"]
    assert [(entry["actor"], entry["action"], entry["target"]) for entry in denied] == [
        ("bob", "workload.submit", "template/vision")], denied


@pytest.mark.parametrize("kind", KINDS)
async def test_a_good_request_is_stored_with_its_submitted_event(api, jp_fetch, kind):
    answer = await api(kind.route, "POST", kind.body(kind.runs), as_user="alice")
    [workload] = await api("workloads", as_user="alice")
    assert (workload["kind"], workload["user"], workload["tenant"], workload["template"]) == (
        kind.name, "alice", "vision", kind.runs), workload
    assert workload["queue"] == (await api(f"templates/{kind.runs}", as_user="alice"))["queue"]
    assert workload["request"]["flavors"], workload
    events = await api(f"workloads/{workload['id']}/events", as_user="alice")
    assert [event["type"] for event in events[:1]] == ["submitted"] and events[0]["reason"], events
    if kind.route == "services":
        await api(f"services/{answer['name']}", "DELETE", as_user="alice")
    elif kind.route == "kernels":
        await jp_fetch("api", "kernels", answer["kernel_id"], method="DELETE",
                       headers={"Authorization": f"token {_token('alice')}"})
    elif kind.route != "workloads":
        await api(f"{kind.route}/{workload['id']}", "DELETE", as_user="alice")

