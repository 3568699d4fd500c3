"""Workload credentials, from inside real kernels and jobs: the hetero API as their submitter, own
work only, nothing else of the server, and nothing at all once the workload has ended."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import time

import pytest
from tornado.httpclient import HTTPClientError

from ..conftest import _token
from .test_kernels import kernelspecs, run_code  # noqa: F401 - the kernelspecs fixture
from .test_lifecycle import gate  # noqa: F401 - the gate fixture

pytestmark = pytest.mark.usefixtures("team")

HUB_SECRET = "hub-api-token-of-this-server"

# What the code inside a kernel or job runs: it reads its own environment and calls the server with
# the credential it finds there. ``TARGETS`` (other users' workload ids) is prepended by the test.
PROBE = '''
import json, os, urllib.error, urllib.request
BASE = os.environ["JUPYTER_HETERO_URL"].rstrip("/") + "/"
TOKEN = os.environ["JUPYTER_HETERO_TOKEN"]
API = "hetero/api/v1/"

def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, data=data, method=method,
                                     headers={"Authorization": "token " + TOKEN, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    try:
        return [status, json.loads(raw or b"null")]
    except ValueError:
        return [status, raw.decode(errors="replace")]

report = {
    "env": dict(os.environ),
    "contents": call("GET", "api/contents")[0],
    "terminals": call("POST", "api/terminals")[0],
    "kernels": call("GET", "api/kernels")[0],
    "sessions": call("GET", "api/sessions")[0],
    "me": call("GET", API + "tenants/me"),
    "own": call("GET", API + "workloads/" + os.environ["HETERO_WORKLOAD_ID"])[0],
    "listed": [w["user"] for w in call("GET", API + "workloads")[1]],
    "colleague": call("GET", API + "workloads/%d" % TARGETS["colleague"]),
    "cancel_colleague": call("DELETE", API + "workloads/%d" % TARGETS["colleague"])[0],
    "other_tenant": call("GET", API + "workloads/%d/logs" % TARGETS["other_tenant"])[0],
    "tenants": call("GET", API + "tenants")[0],
    "preempt": call("POST", API + "workloads/%d/preempt" % TARGETS["other_tenant"])[0],
    "submitted": call("POST", API + "workloads", {"kind": "job", "template": "data-preprocessing",
                                                  "command": ["true"]}),
}
print("PROBE " + json.dumps(report))
'''

REFUSED = (401, 403, 404)


@pytest.fixture
def server_secrets_in_environment(monkeypatch, jp_serverapp):
    """The server process holds its own token (and a hub's) in its environment, as deployments do."""
    token = jp_serverapp.identity_provider.token
    monkeypatch.setenv("JUPYTER_TOKEN", token)
    monkeypatch.setenv("JPY_API_TOKEN", HUB_SECRET)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", HUB_SECRET)
    return token


def probe(targets: dict[str, int]) -> str:
    return f"TARGETS = {json.dumps(targets)}\n{PROBE}"


def report_in(text: str) -> dict:
    line = next(line for line in text.splitlines() if line.startswith("PROBE "))
    return json.loads(line.removeprefix("PROBE "))


async def as_credential(jp_fetch, credential: str, *route: str, method: str = "GET"):
    """(status, JSON) of a call to the hetero API with ``credential``, from outside any workload."""
    try:
        response = await jp_fetch("hetero", "api", "v1", *route, method=method, allow_nonstandard_methods=True,
                                  headers={"Authorization": f"token {credential}"})
    except HTTPClientError as error:
        return error.code, json.loads(error.response.body)
    return response.code, json.loads(response.body)


async def waiting_job(api, gate, user: str) -> int:  # noqa: F811
    """A job of ``user`` that waits on a gate nobody opens (cancelled by the test when done)."""
    return (await api("workloads", "POST", gate.job(f"{user}-gate", template="training"), as_user=user))["id"]


def assert_confined(report: dict, *, user: str, tenant: str, server_token: str, colleague: int) -> None:
    """What a workload's credential may and may not do, as its code saw it."""
    leaked = sorted(name for name, value in report["env"].items() if server_token in value or HUB_SECRET in value)
    assert leaked == [], f"the server's secrets reached the workload as {leaked}"
    assert not {"JUPYTER_TOKEN", "JPY_API_TOKEN", "JUPYTERHUB_API_TOKEN"} & set(report["env"])
    assert report["env"]["JUPYTER_HETERO_TOKEN"].startswith("hetero_wc_")
    # Nothing of the server but the hetero API.
    assert report["contents"] in REFUSED and report["terminals"] in REFUSED, report
    assert report["kernels"] in REFUSED and report["sessions"] in REFUSED, report
    # The hetero API as the submitter, a plain member, own work only.
    status, me = report["me"]
    assert (status, me["user"], me["tenant"], me["role"]) == (200, user, tenant, "member")
    assert report["own"] == 200
    assert set(report["listed"]) == {user}
    status, error = report["colleague"]
    assert status == 403 and f"workload {colleague} is not {user}'s own" in error["reason"]
    assert report["cancel_colleague"] == 403 and report["other_tenant"] == 403
    assert report["tenants"] == 403 and report["preempt"] == 403
    status, submitted = report["submitted"]
    assert (status, submitted["user"], submitted["tenant"]) == (201, user, tenant)


async def test_a_kernel_holds_a_credential_for_its_users_own_work_until_it_shuts_down(
        server_secrets_in_environment, kernelspecs, api, jp_fetch, jp_serverapp, gate, tmp_path):  # noqa: F811
    colleague, other_tenant = await waiting_job(api, gate, "carol"), await waiting_job(api, gate, "bob")
    # Started through Jupyter's own kernels API, by alice: the kernel is hers, not the server owner's.
    started = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "hetero-cpu"}),
                             headers={"Authorization": f"token {_token('alice')}"})
    kernel_id = json.loads(started.body)["id"]
    workload = next(w for w in await api("workloads", kind="kernel", as_user="alice")
                    if w["spec"]["kernel_id"] == kernel_id)
    assert (workload["user"], workload["tenant"]) == ("alice", "vision")

    printed = await run_code(jp_serverapp, kernel_id, probe({"colleague": colleague, "other_tenant": other_tenant}))
    report = report_in(printed)
    assert_confined(report, user="alice", tenant="vision", server_token=server_secrets_in_environment,
                    colleague=colleague)
    assert (await api(f"workloads/{colleague}", as_user="carol"))["state"] != "cancelled"

    credential = report["env"]["JUPYTER_HETERO_TOKEN"]
    credential_id, secret = credential.removeprefix("hetero_wc_").split("_", 1)
    database = sqlite3.connect(tmp_path / "hetero.sqlite")
    digest, = database.execute("SELECT digest FROM credentials WHERE id = ?", (int(credential_id),)).fetchone()
    assert digest == hashlib.sha256(secret.encode()).hexdigest()
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("hetero.sqlite*"))
    assert secret.encode() not in stored, "only the digest of a credential is stored"

    await jp_fetch("api", "kernels", kernel_id, method="DELETE", headers={"Authorization": f"token {_token('alice')}"})
    deadline = time.monotonic() + 30
    while database.execute("SELECT revoked_at FROM credentials WHERE id = ?", (int(credential_id),)).fetchone()[0] \
            is None:
        assert time.monotonic() < deadline, "the credential was never revoked after its kernel ended"
        await asyncio.sleep(0.1)
    status, error = await as_credential(jp_fetch, credential, "workloads", str(workload["id"]))
    assert (status, error["reason"]) == (403, "credential-revoked")
    for other in (colleague, other_tenant):
        await api(f"workloads/{other}", "DELETE", as_user="root")


async def test_a_job_holds_a_credential_for_its_users_own_work_until_it_ends(
        server_secrets_in_environment, api, jp_fetch, gate, wait_for):  # noqa: F811
    # Carol is vision's tenant-admin: as a person she may see and stop alice's work; her job may not.
    colleague, other_tenant = await waiting_job(api, gate, "alice"), await waiting_job(api, gate, "bob")
    job = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing",
                                          "code": probe({"colleague": colleague, "other_tenant": other_tenant})},
                    as_user="carol")
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), as_user="carol")
    log = await api.text(f"workloads/{job['id']}/logs", as_user="carol")
    assert done["state"] == "succeeded", log
    report = report_in(log)
    assert_confined(report, user="carol", tenant="vision", server_token=server_secrets_in_environment,
                    colleague=colleague)
    assert (await api(f"workloads/{colleague}", as_user="alice"))["stopping"] is None

    status, error = await as_credential(jp_fetch, report["env"]["JUPYTER_HETERO_TOKEN"], "workloads", str(job["id"]))
    assert (status, error["reason"]) == (403, "credential-revoked")
    for other in (colleague, other_tenant):
        await api(f"workloads/{other}", "DELETE", as_user="root")


async def test_made_up_and_tampered_credentials_are_refused(api, jp_fetch, jp_serverapp, gate):  # noqa: F811
    job = await waiting_job(api, gate, "alice")
    issued = jp_serverapp.web_app.settings["hetero_platform"].credentials.issue(job)
    tampered = issued[:-1] + ("A" if issued[-1] != "A" else "B")
    for credential in (tampered, "hetero_wc_1_guess", "hetero_wc_x_y", "hetero_wc_", "hetero_wc_999_" + "a" * 43):
        status, error = await as_credential(jp_fetch, credential, "tenants", "me")
        assert (status, error["reason"]) == (403, "credential-unknown"), credential
    await api(f"workloads/{job}", "DELETE", as_user="alice")


async def test_a_cell_submitted_from_a_hetero_kernel_runs_as_its_user(kernelspecs, api, jp_fetch, jp_serverapp):  # noqa: F811
    started = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "hetero-cpu"}),
                             headers={"Authorization": f"token {_token('alice')}"})
    kernel_id = json.loads(started.body)["id"]
    await run_code(jp_serverapp, kernel_id, "%load_ext jupyter_hetero\ndata = [1, 2, 3]")
    await run_code(jp_serverapp, kernel_id, "%%hetero_submit --template data-preprocessing --push data --pull total "
                                            "--wait\ntotal = sum(data)")
    assert (await run_code(jp_serverapp, kernel_id, "print('total is', total)")).strip() == "total is 6"
    jobs = await api("workloads", kind="job", as_user="alice")
    assert [(j["user"], j["tenant"], j["state"]) for j in jobs] == [("alice", "vision", "succeeded")]
    await jp_fetch("api", "kernels", kernel_id, method="DELETE", headers={"Authorization": f"token {_token('alice')}"})


def test_code_in_a_workload_never_falls_back_to_the_servers_runtime_file(monkeypatch, jp_environ, jp_runtime_dir):
    import os

    from jupyter_hetero.notebook.client import HeteroClient, ServerNotFound

    # The file a running server leaves in the runtime directory, with its own token in it.
    (jp_runtime_dir / "jpserver-1.json").write_text(json.dumps(
        {"pid": os.getpid(), "url": "http://127.0.0.1:1/", "token": "the-servers-own-token"}))
    for name in ("JUPYTER_HETERO_URL", "JUPYTER_HETERO_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    assert HeteroClient.discover().token == "the-servers-own-token"  # outside a workload, as before
    monkeypatch.setenv("HETERO_WORKLOAD_ID", "7")
    with pytest.raises(ServerNotFound, match="without JUPYTER_HETERO_URL"):
        HeteroClient.discover()
