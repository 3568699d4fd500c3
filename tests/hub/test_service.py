"""The hub service: one shared scheduler for every hub user (`jupyter hetero service` as a hub-managed
service), each request the hub user it names, their hub groups mapped to tenants, one set of quotas."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from ..harness import kill_runners_under
from .harness import CHP, HubProcess, hetero_service

pytestmark = pytest.mark.slow

API = "services/hetero/hetero/api/v1/"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub-service")
    catalog = team_catalog(root)  # vision: alice and carol by name, A100 quota 1; nlp: the hub group nlp-team
    service, _url = hetero_service(root, catalog, DEMO_NODES)
    with HubProcess.start(root, groups={"nlp-team": ["bob"]}, users=("alice", "carol", "eve"),
                          extra_config=service) as running:
        yield running.with_service(("alice", "carol", "bob", "eve"))
    kill_runners_under(root)  # an online service's replicas run until scaled down


def hub_call(hub, user: str, route: str, method: str = "GET", body=None):
    if method == "GET":
        return hub.get(API + route, hub.tokens[user])
    return hub._request(API + route, method, body, token=hub.tokens[user], check=False, with_status=True)


def until_state(hub, user: str, workload_id: int, states: tuple[str, ...], timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status, workload = hub_call(hub, user, f"workloads/{workload_id}")
        if status == 200 and workload["state"] in states:
            return workload
        assert time.monotonic() < deadline, f"workload {workload_id} never reached {states}: {workload}"
        time.sleep(0.2)


def test_each_hub_user_is_who_the_hub_says_with_the_tenant_of_their_name_or_group(hub):
    assert hub_call(hub, "alice", "tenants/me")[1]["tenant"] == "vision"
    assert hub_call(hub, "bob", "tenants/me")[1]["tenant"] == "nlp"  # by his hub group nlp-team
    status, answer = hub_call(hub, "eve", "tenants/me")
    assert status == 403 and answer["reason"] == "no-tenant", answer
    status, version = hub_call(hub, "alice", "version")
    assert (status, version["mode"]) == (200, "service")


def test_one_scheduler_for_everyone_with_each_ones_work_their_own(hub):
    status, job = hub_call(hub, "alice", "workloads", "POST", {
        "kind": "job", "template": "data-preprocessing", "command": ["python", "-c", "print('from alice')"]})
    assert status in (200, 201), job
    done = until_state(hub, "alice", job["id"], ("succeeded", "failed"))
    assert (done["state"], done["user"], done["tenant"]) == ("succeeded", "alice", "vision"), done
    status, _answer = hub_call(hub, "bob", f"workloads/{job['id']}")
    assert status in (403, 404)
    assert job["id"] not in [w["id"] for w in hub_call(hub, "bob", "workloads")[1]]
    status, _answer = hub_call(hub, "bob", f"workloads/{job['id']}", "DELETE")
    assert status in (403, 404)


def test_a_tenants_quota_holds_across_its_users(hub):
    hold = {"kind": "job", "template": "training", "parameters": {"devices": 1, "flavor": "a100-80g"},
            "command": ["python", "-c", "import time; time.sleep(120)"]}
    status, first = hub_call(hub, "alice", "workloads", "POST", hold)
    assert status in (200, 201), first
    until_state(hub, "alice", first["id"], ("running",))
    status, second = hub_call(hub, "carol", "workloads", "POST", hold)  # the same tenant, another user
    waiting = until_state(hub, "carol", second["id"], ("queued",))
    deadline = time.monotonic() + 30
    while not waiting.get("blockers") and time.monotonic() < deadline:
        time.sleep(0.2)
        waiting = hub_call(hub, "carol", f"workloads/{second['id']}")[1]
    assert any("quota" in blocker["message"] for blocker in waiting["blockers"]), waiting
    for user, workload in (("alice", first), ("carol", second)):
        assert hub_call(hub, user, f"workloads/{workload['id']}", "DELETE")[0] in (200, 202, 204)


def test_a_users_server_passes_the_hetero_api_to_the_service_as_its_user(hub):
    hub.spawn("alice")
    hub.spawn("bob")
    own = "user/alice/hetero/api/v1/"
    status, version = hub.get(own + "version", hub.tokens["alice"])
    assert (status, version["mode"]) == (200, "service")  # the service's answer, through alice's server
    status, me = hub.get(own + "tenants/me", hub.tokens["alice"])
    assert (status, me["user"], me["tenant"]) == (200, "alice", "vision")
    status, job = hub._request(own + "workloads", "POST", {
        "kind": "job", "template": "data-preprocessing", "command": ["python", "-c", "print('via my server')"]},
        token=hub.tokens["alice"], check=False, with_status=True)
    assert status in (200, 201), job
    done = until_state(hub, "alice", job["id"], ("succeeded", "failed"))  # asked of the service itself
    assert (done["state"], done["user"]) == ("succeeded", "alice")
    status, log = hub.get(own + f"workloads/{job['id']}/logs", hub.tokens["alice"])
    assert status == 200 and "via my server" in log
    status, _answer = hub.get(f"user/bob/hetero/api/v1/workloads/{job['id']}", hub.tokens["bob"])
    assert status in (403, 404)  # bob's server asks as bob


def test_a_users_files_are_read_from_their_own_root_and_nowhere_else(hub):
    homes = hub.root / "homes"
    for user in ("alice", "bob"):
        (homes / user).mkdir(parents=True, exist_ok=True)
        (homes / user / "mine.py").write_text(f"print('{user} wrote this')\n", encoding="utf-8")
    status, job = hub_call(hub, "alice", "workloads", "POST",
                           {"kind": "job", "template": "data-preprocessing", "script": {"path": "mine.py"}})
    assert status in (200, 201), job
    until_state(hub, "alice", job["id"], ("succeeded",))
    assert "alice wrote this" in hub_call(hub, "alice", f"workloads/{job['id']}/logs")[1]
    status, error = hub_call(hub, "alice", "workloads", "POST",
                             {"kind": "job", "template": "data-preprocessing", "script": {"path": "../bob/mine.py"}})
    assert status == 400 and "outside" in error["message"] and error.get("field") == "script.path", error


def test_a_user_may_neither_run_in_anothers_home_nor_after_another_tenants_work(hub):
    homes = hub.root / "homes"
    for user in ("alice", "bob"):
        (homes / user / "project").mkdir(parents=True, exist_ok=True)
    job = {"kind": "job", "template": "data-preprocessing", "command": ["python", "-c", "pass"]}
    status, bobs = hub_call(hub, "bob", "workloads", "POST", job)  # nlp's
    assert status in (200, 201), bobs
    # alice (vision) names bob's home as where her job runs: a 400 naming cwd, nothing stored.
    before = [w["id"] for w in hub_call(hub, "alice", "workloads")[1]]
    for cwd in (str(homes / "bob" / "project"), "../bob/project"):
        status, error = hub_call(hub, "alice", "workloads", "POST", {**job, "cwd": cwd})
        assert (status, error.get("field")) == (400, "cwd") and "outside" in error["message"], error
    assert sorted(w["id"] for w in hub_call(hub, "alice", "workloads")[1]) == sorted(before)
    status, mine = hub_call(hub, "alice", "workloads", "POST", {**job, "cwd": "project"})  # her own root's
    assert status in (200, 201) and mine["spec"]["cwd"] == str((homes / "alice" / "project").resolve()), mine
    # ... nor may she wait for bob's workload, from the command line: a 403 with the reason, audited.
    login = ("--url", hub.url + "services/hetero/", "--token", hub.tokens["alice"])
    refused = subprocess.run([sys.executable, "-m", "jupyter_hetero.cli", "submit", *login, "--template",
                              "data-preprocessing", "--cwd", str(homes / "alice" / "project"), "--after",
                              str(bobs["id"]), "--", "python", "-c", "pass"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and not refused.stdout, (refused.stdout, refused.stderr)
    assert f"workload {bobs['id']} belongs to tenant nlp, not to your tenant vision" in refused.stderr
    audit = sqlite3.connect(hub.root / "hetero.sqlite")
    denied = audit.execute("SELECT actor, action, target FROM audit WHERE outcome = 'denied' AND actor = 'alice'")
    assert ("alice", "workload.read", f"workload/{bobs['id']}") in denied.fetchall()
    audit.close()
    assert sorted(w["id"] for w in hub_call(hub, "alice", "workloads")[1]) == sorted([mine["id"], *before])
    # Her own work she may wait for.
    status, after = hub_call(hub, "alice", "workloads", "POST", {**job, "after": [{"workload": mine["id"]}]})
    assert status in (200, 201) and after["spec"]["after"] == [{"workload": mine["id"], "condition": "ok"}], after


def test_a_users_server_not_told_where_the_service_is_asks_the_hub(hub):
    hub.spawn("carol")  # her server's environment names no service: it reads GET /hub/api/services/hetero
    status, version = hub.get("user/carol/hetero/api/v1/version", hub.tokens["carol"])
    assert (status, version["mode"]) == (200, "service")
    status, me = hub.get("user/carol/hetero/api/v1/tenants/me", hub.tokens["carol"])
    assert (status, me["user"], me["tenant"]) == (200, "carol", "vision")


def test_a_users_server_starts_kernels_the_service_places_and_stops(hub):
    hub.spawn("alice")
    own, token = "user/alice/", hub.tokens["alice"]
    status, started = hub._request(own + "hetero/api/v1/kernels", "POST", {
        "template": "interactive", "parameters": {"devices": 1, "flavor": "a100-80g"}},
        token=token, check=False, with_status=True)
    assert status == 201, started
    workload = until_state(hub, "alice", started["workload_id"], ("running",))  # asked of the service itself
    assert (workload["kind"], workload["user"], workload["tenant"]) == ("kernel", "alice", "vision")
    status, usage = hub.get(own + f"hetero/api/v1/kernels/{started['kernel_id']}/usage", token)
    assert status == 200 and usage["workload_id"] == workload["id"], usage
    env = _environ(usage["pid"])
    devices = [share["index"] for share in workload["placement"]["slots"][0]["devices"]]
    assert env["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, devices)) and env["HETERO_FLAVOR"] == "a100-80g", env
    assert env["JUPYTER_HETERO_TOKEN"].startswith("hetero_wc_") and "/services/hetero/" in env["JUPYTER_HETERO_URL"]
    assert "JUPYTERHUB_API_TOKEN" not in env  # the server's own hub token never reaches its kernels
    # The kernel's credential reaches the service as alice (the magics inside it use it).
    status, me = hub.get(API + "tenants/me", env["JUPYTER_HETERO_TOKEN"])
    assert (status, me["user"]) == (200, "alice"), me

    # Held against vision's one A100: carol's kernel, in her own server, cannot be placed while alice's runs.
    hub.spawn("carol")
    status, refused = hub._request("user/carol/hetero/api/v1/kernels", "POST", {
        "template": "interactive", "parameters": {"devices": 1, "flavor": "a100-80g"}, "wait_timeout": 2},
        token=hub.tokens["carol"], check=False, with_status=True)
    assert status == 409 and refused["reason"] == "no-placement" and "quota" in refused["message"], refused
    assert "配额：租户 vision" in refused["message_zh"], refused  # in Chinese, its blockers as the service says them

    # Cancelled at the service: alice's server shuts the kernel down at its next report.
    assert hub_call(hub, "alice", f"workloads/{workload['id']}", "DELETE")[0] in (200, 202)
    deadline = time.monotonic() + 30
    while started["kernel_id"] in [k["id"] for k in hub.get(own + "api/kernels", token)[1]]:
        assert time.monotonic() < deadline, "the cancelled kernel still runs in alice's server"
        time.sleep(0.3)
    assert until_state(hub, "alice", workload["id"], ("cancelled",))["placement"] is None

    # Shut down by Jupyter's own API: its devices go back.
    status, again = hub._request(own + "hetero/api/v1/kernels", "POST", {"template": "interactive"},
                                 token=token, check=False, with_status=True)
    assert status == 201, again
    hub._request(own + f"api/kernels/{again['kernel_id']}", "DELETE", token=token, check=False, with_status=True)
    assert until_state(hub, "alice", again["workload_id"], ("succeeded",))["reason"].endswith("stopped by alice")


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_a_service_asked_for_through_a_users_server_answers_at_the_shared_services_endpoint_and_hers(hub):
    hub.spawn("alice")
    model = [sys.executable, str(Path(__file__).resolve().parents[1] / "serving" / "model_server.py")]
    status, created = hub._request("user/alice/hetero/api/v1/services", "POST", {
        "name": "hub-echo", "command": model, "parameters": {"devices": 1}},
        token=hub.tokens["alice"], check=False, with_status=True)  # through her own server, to the service
    assert status == 201 and created["tenant"] == "vision", created
    deadline = time.monotonic() + 60
    while hub_call(hub, "alice", "services/hub-echo")[1]["ready_replicas"] < 1:
        assert time.monotonic() < deadline, "the service's replica never became ready"
        time.sleep(0.3)
    endpoint = "services/hetero/hetero/endpoints/vision/hub-echo/predict"
    status, answer = hub._request(endpoint, "POST", {"inputs": [4]}, token=hub.tokens["alice"], check=False,
                                  with_status=True)
    assert (status, answer["outputs"]) == (200, [8]), answer
    status, _answer = hub._request(endpoint, "POST", {"inputs": [4]}, token=hub.tokens["bob"], check=False,
                                   with_status=True)
    assert status == 403  # tenant nlp's bob may not call tenant vision's service
    # The same endpoint through alice's own server, which passes it on to the service as her.
    status, answer = hub._request("user/alice/hetero/endpoints/vision/hub-echo/predict?x=1", "POST", {"inputs": [5]},
                                  token=hub.tokens["alice"], check=False, with_status=True)
    assert (status, answer["outputs"], answer["path"]) == (200, [10], "/predict?x=1"), answer
    assert hub_call(hub, "alice", "services/hub-echo", "DELETE")[1]["state"] == "deleted"
