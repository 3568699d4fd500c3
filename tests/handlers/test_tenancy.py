"""Tenants, roles and quotas enforced server-side: a direct REST call cannot get around them."""

from __future__ import annotations

import json
import sqlite3
from http.cookies import SimpleCookie
from types import SimpleNamespace

import pytest
from jupyter_server.auth.identity import User

from jupyter_hetero.auth import TeamUser, hide_server_token_from_members

from ..conftest import _token
from .test_lifecycle import gate, running  # noqa: F401 - the gate fixture

pytestmark = pytest.mark.usefixtures("team")


async def _alice_job(api, gate, name="g"):  # noqa: F811
    return await api("workloads", "POST", gate.job(name, template="training"), as_user="alice")


@pytest.mark.parametrize(
    ("method", "suffix"),
    [
        pytest.param("GET", "", id="see"),
        pytest.param("DELETE", "", id="cancel"),
        pytest.param("GET", "/explain", id="explain"),
        pytest.param("GET", "/logs", id="logs"),
        pytest.param("GET", "/events", id="events"),
    ],
)
async def test_another_tenant_gets_403_with_the_reason(api, api_error, gate, tmp_path, method, suffix):  # noqa: F811
    job = await _alice_job(api, gate)
    status, error = await api_error(f"workloads/{job['id']}{suffix}", method, as_user="bob")
    assert status == 403
    assert error["reason"] == f"workload {job['id']} belongs to tenant vision, not to your tenant nlp"
    audit = sqlite3.connect(tmp_path / "hetero.sqlite").execute(
        "SELECT actor, outcome, target FROM audit WHERE outcome = 'denied'").fetchall()
    assert ("bob", "denied", f"workload/{job['id']}") in audit


async def test_lists_show_only_the_callers_tenant(api, api_error, gate):  # noqa: F811
    job = await _alice_job(api, gate)
    assert [w["id"] for w in await api("workloads", as_user="carol")] == [job["id"]]
    assert await api("workloads", as_user="bob") == []
    status, error = await api_error("workloads", as_user="bob", tenant="vision")
    assert status == 403 and "only your tenant" in error["reason"]
    assert [w["id"] for w in await api("workloads", as_user="root")] == [job["id"]]


async def test_a_member_cannot_cancel_a_colleagues_job_but_the_tenant_admin_can(api, api_error, gate, wait_for):  # noqa: F811
    job = await _alice_job(api, gate)
    await api("workloads", "POST", gate.job("x", template="training"), as_user="carol")
    status, _error = await api_error(f"workloads/{job['id']}", "DELETE", as_user="bob")
    assert status == 403
    answer = await api(f"workloads/{job['id']}", "DELETE", as_user="carol")
    assert answer["stopping"] == "cancel" or answer["state"] == "cancelled"
    assert (await wait_for(job["id"], lambda w: w["state"] == "cancelled", as_user="alice"))["reason"].startswith(
        "cancelled by carol")


async def test_the_quota_holds_against_a_burst_of_direct_calls(api, gate, wait_for):  # noqa: F811
    ids = [(await api("workloads", "POST", gate.job(f"b{i}", template="training"), as_user="bob"))["id"]
           for i in range(4)]
    await wait_for(ids[0], running, as_user="bob")
    states = [(await api(f"workloads/{i}", as_user="bob"))["state"] for i in ids]
    assert states.count("running") == 1
    waiting = await wait_for(ids[1], lambda w: w.get("blockers"), as_user="bob")
    assert waiting["blockers"][0]["kind"] == "quota"
    me = await api("tenants/me", as_user="bob")
    a100 = next(q for q in me["quota"] if q["flavor"] == "a100-80g")
    assert a100["used"]["device_milli"] == 1000 == a100["nominal"]["device_milli"]


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        pytest.param({"template": "nope", "command": ["true"]}, 404, "template", id="unknown template"),
        pytest.param({"template": "training", "queue": "vip", "command": ["true"]}, 404, "queue", id="unknown queue"),
        pytest.param({"template": "training", "command": ["true"], "parameters": {"devices": 64}}, 400,
                     "parameters.devices", id="devices above the template bound"),
        pytest.param({"template": "training", "command": ["true"], "parameters": {"colour": "red"}}, 400,
                     "parameters.colour", id="parameter the template does not offer"),
        pytest.param({"template": "training", "command": ["true"], "parameters": {"memory": "lots"}}, 400,
                     "parameters.memory", id="memory that is not a quantity"),
        pytest.param({"template": "training"}, 400, "body", id="nothing to run"),
        pytest.param({"template": "training", "command": ["true"], "code": "print(1)"}, 400, "body", id="two payloads"),
        pytest.param({"template": "training", "command": []}, 400, "command", id="empty command"),
        pytest.param({"template": "training", "code": "def broken(:"}, 400, "code", id="code with a syntax error"),
        pytest.param({"template": "training", "script": {"path": "missing.py"}}, 400, "script.path", id="missing script"),
        pytest.param({"template": "training", "script": {"path": "../../etc/passwd.py"}}, 400, "script.path",
                     id="script outside the root"),
        pytest.param({"template": "training", "notebook": {"path": "gate.py"}}, 400, "notebook.path",
                     id="notebook that is not a notebook"),
        pytest.param({"template": "training", "command": ["true"], "env": {"CUDA_VISIBLE_DEVICES": "0"}}, 400,
                     "env.CUDA_VISIBLE_DEVICES", id="env the scheduler owns"),
        pytest.param({"template": "training", "command": ["true"], "runtime": "soon"}, 400, "runtime", id="bad runtime"),
        pytest.param({"template": "training", "command": ["true"], "priority": 9}, 400, "priority", id="unknown field"),
        pytest.param({"template": "online-inference", "kind": "job", "queue": "inference", "command": ["true"],
                      "parameters": {"replicas": 0}}, 400, "parameters.replicas", id="replicas below bound"),
    ],
)
async def test_bad_submissions_are_rejected_naming_the_field_and_nothing_is_stored(api, api_error, gate, tmp_path,  # noqa: F811
                                                                                  body, status, field):
    got, error = await api_error("workloads", "POST", {"kind": "job", **body}, as_user="alice")
    assert (got, error.get("field")) == (status, field), error
    assert field.split(".")[0] in error["message"]
    assert sqlite3.connect(tmp_path / "hetero.sqlite").execute("SELECT COUNT(*) FROM workloads").fetchone() == (0,)


@pytest.mark.team(nlp={"queues": ["batch", "experiment"]})
async def test_a_queue_the_tenant_may_not_use_is_refused(api_error):
    status, error = await api_error("workloads", "POST", {"kind": "job", "template": "training", "command": ["true"]},
                                    as_user="bob")
    assert (status, error["reason"]) == (403, "tenant nlp may not submit to queue training")


async def test_a_template_with_no_flavor_the_tenant_has_quota_for_is_refused(api_error):
    status, error = await api_error("workloads", "POST", {"kind": "job", "template": "vision", "command": ["true"]},
                                    as_user="bob")
    assert status == 403
    assert error["reason"].startswith("tenant nlp has no quota for any flavor of template vision")


async def test_tenants_are_listed_for_admins_only(api, api_error):
    status, error = await api_error("tenants", as_user="alice")
    assert status == 403 and "tenant-admin" in error["reason"]
    assert [t["tenant"] for t in await api("tenants", as_user="carol")] == ["vision"]
    everyone = await api("tenants", as_user="root")
    assert [t["tenant"] for t in everyone] == ["vision", "nlp"]
    assert {q["flavor"] for q in everyone[0]["quota"]} == {"a100-80g", "cpu-standard", "t4"}


async def test_resubmit_runs_the_same_job_again(api, gate, wait_for):  # noqa: F811
    gate.open("open")
    first = await api("workloads", "POST", gate.job("open", template="training", parameters={"devices": 1}),
                      as_user="alice")
    await wait_for(first["id"], lambda w: w["state"] == "succeeded", as_user="alice")
    again = await api(f"workloads/{first['id']}/resubmit", "POST", as_user="carol")
    assert again["id"] != first["id"] and again["user"] == "carol"
    assert (again["template"], again["queue"], again["spec"]["script"]) == (
        first["template"], first["queue"], first["spec"]["script"])
    done = await wait_for(again["id"], lambda w: w["state"] == "succeeded", as_user="carol")
    queues = {q["name"]: q for q in await api("queues", as_user="alice")}
    assert queues["training"]["admitted_last_day"] == 2 and queues["training"]["wait_p95_s"] >= 0
    nodes = {n["name"]: n for n in await api("nodes", as_user="alice")}
    assert nodes["gpu-a100-0"]["allocated"]["device_milli"] == 0
    assert done["attempts"][0]["outcome"] == "succeeded"


async def test_nodes_show_what_is_allocated_on_them(api, gate, wait_for):  # noqa: F811
    job = await api("workloads", "POST", gate.job("never", template="training", parameters={"devices": 1}),
                    as_user="alice")
    await wait_for(job["id"], running, as_user="alice")
    allocated = {n["name"]: n["allocated"] for n in await api("nodes", as_user="alice")}["gpu-a100-0"]
    assert allocated["device_milli"] == 1000 and allocated["workloads"] == 1 and allocated["cpu_milli"] == 16000
    await api(f"workloads/{job['id']}", "DELETE", as_user="alice")


async def test_a_member_stays_that_member_on_the_login_cookie(jp_fetch):
    # A browser signs in with the token in the URL (an API client sends it in a header each time and
    # gets no cookie: see test_read_costs.py).
    signed_in = await jp_fetch("hetero", "api", "v1", "tenants", "me", params={"token": _token("alice")},
                               headers={"Authorization": ""})
    cookies = SimpleCookie()
    for header in signed_in.headers.get_list("Set-Cookie"):
        cookies.load(header)
    assert cookies, "a token sign-in sets the login cookie"

    # The next request carries only the cookie, as JupyterLab's do in a member's browser.
    cookie_only = {"Authorization": "", "Cookie": "; ".join(f"{k}={v.value}" for k, v in cookies.items())}
    again = await jp_fetch("hetero", "api", "v1", "tenants", "me", headers=cookie_only)

    first, second = json.loads(signed_in.body), json.loads(again.body)
    assert (second["user"], second["tenant"], second["role"]) == (first["user"], first["tenant"], first["role"])
    assert (second["user"], second["role"]) == ("alice", "member")


def test_jupyterlab_pages_of_members_do_not_carry_the_server_token():
    earlier_hook = hide_server_token_from_members(lambda handler, config: {**config, "seen": True})
    member, owner = SimpleNamespace(current_user=TeamUser(username="mia")), SimpleNamespace(current_user=User("me"))

    assert earlier_hook(member, {"token": "secret"}) == {"token": "", "seen": True}
    assert earlier_hook(owner, {"token": "secret"}) == {"token": "secret", "seen": True}
