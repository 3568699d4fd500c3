"""Live governance through a real server (issue 36 item 5): the catalog file changed and reloaded, through the REST
route and through ``jupyter hetero catalog reload`` as its own process, with real jobs. Quotas, tenants and
members change without a restart, running work is never stopped by a lowered quota (it is said), each change is
audited as what it is with the reloading admin as its actor, an invalid file changes nothing and only platform admins
may reload."""

from __future__ import annotations

import asyncio
import sys

import pytest
import yaml

from ..builders import TOKENS
from ..harness import until_async
from .test_lifecycle import final, gate, running  # noqa: F401 - gate is a fixture

NEWCOMERS = {"dave-token": "dave", "erin-token": "erin"}


@pytest.fixture
def newcomers(team, server_config):
    """Two people no tenant names yet, with tokens (list it before ``api``)."""
    server_config["TeamIdentityProvider"] = {"user_tokens": {**TOKENS, **NEWCOMERS}}


def as_token(token: str) -> dict:
    return {"headers": {"Authorization": f"token {token}"}}


def edit_catalog(path: str, change) -> None:
    data = yaml.safe_load(open(path, encoding="utf-8"))
    change(data)
    with open(path, "w", encoding="utf-8") as out:
        yaml.safe_dump(data, out, allow_unicode=True)


def tenant(data: dict, name: str) -> dict:
    return next(t for t in data["tenants"] if t["name"] == name)


async def reload_by_cli(port: int, base_url: str, token: str = "root-token") -> str:
    """``jupyter hetero catalog reload`` as its own process; off the event loop, which serves its requests."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jupyter_hetero.cli", "catalog", "reload", "--url",
        f"http://127.0.0.1:{port}{base_url}", "--token", token, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()
    return out.decode()


async def audit(api, action: str) -> list[dict]:
    return (await api("audit", as_user="root", action=action, limit=500))["entries"]


@pytest.fixture(params=[True, False], ids=["cycles in the engine process", "cycles in the server's process"])
def engine_process(request, hetero_config):
    hetero_config["engine_process"] = request.param


async def test_a_raised_quota_admits_the_waiting_job_without_a_restart(team, engine_process, hetero_config, api,
                                                                       wait_for, gate, jp_http_port, jp_base_url):
    first = await api("workloads", "POST", gate.job("g1", template="training"), as_user="alice")
    await wait_for(first["id"], running, as_user="alice")
    second = await api("workloads", "POST", gate.job("g2", template="training"), as_user="alice")
    waiting = await wait_for(second["id"], lambda w: w.get("blockers"), as_user="alice")
    assert waiting["state"] == "queued" and waiting["blockers"][0]["message"].startswith("quota:"), waiting

    edit_catalog(hetero_config["catalog_file"],
                 lambda data: tenant(data, "vision")["quotas"]["a100-80g"]["nominal"].update(devices=2))
    printed = await reload_by_cli(jp_http_port, jp_base_url)
    assert "quota.changed" in printed and "quota of vision on a100-80g raised from 1 devices to 2 devices" in printed

    await wait_for(second["id"], running, as_user="alice")  # admitted under the new quota, no restart
    [entry] = await audit(api, "quota.changed")
    assert entry["actor"] == "root" and entry["target"] == "tenant/vision/a100-80g", entry
    assert entry["detail"]["before"]["nominal"]["device_milli"] == 1000
    assert entry["detail"]["after"]["nominal"]["device_milli"] == 2000
    gate.open("g1")
    gate.open("g2")
    for workload in (first, second):
        assert (await wait_for(workload["id"], final, as_user="alice"))["state"] == "succeeded"
    assert (await api("audit/verify", as_user="root"))["intact"] is True


async def test_a_new_tenant_and_a_new_member_may_submit_right_after_the_reload(newcomers, hetero_config, api,
                                                                               api_error):
    job = {"kind": "job", "template": "data-preprocessing", "command": [sys.executable, "-c", "print('hi')"]}
    for token in NEWCOMERS:
        status, error = await api_error("workloads", "POST", job, **as_token(token))
        assert status == 403, error

    def change(data):
        data["tenants"].append({"name": "speech", "display": {"en": "Speech", "zh": "语音"}, "users": ["dave"],
                                "quotas": {"cpu-standard": {"nominal": {"cpu": 8, "memory": "32Gi"}}}})
        tenant(data, "vision")["users"].append("erin")

    edit_catalog(hetero_config["catalog_file"], change)
    answer = await api("catalog/reload", "POST", {}, as_user="root")
    assert answer["in_effect"] is True and answer["applies"] == "at the next tick", answer
    assert {(c["action"], c["target"]) for c in answer["changes"]} == {
        ("tenant.added", "tenant/speech"), ("tenant.member-added", "tenant/vision")}, answer["changes"]
    assert answer["applied"] == ["tenants"]
    member = next(c for c in answer["changes"] if c["action"] == "tenant.member-added")
    assert member["detail"] == {"tenant": "vision", "user": "erin"} and member["message_zh"], member

    submitted = [await api("workloads", "POST", job, **as_token(token)) for token in NEWCOMERS]
    assert [w["tenant"] for w in submitted] == ["speech", "vision"], submitted
    added = await audit(api, "tenant.")
    assert {(e["action"], e["actor"]) for e in added} >= {("tenant.added", "root"), ("tenant.member-added", "root")}


async def test_a_quota_lowered_below_running_use_leaves_the_job_running_and_says_so(team, hetero_config, api, wait_for,
                                                                                   gate, jp_serverapp):
    job = await api("workloads", "POST", gate.job("g1", template="training"), as_user="alice")
    await wait_for(job["id"], running, as_user="alice")
    await until_async(lambda: _holds(api), "the scheduler's status to show the job's device", timeout=30)
    edit_catalog(hetero_config["catalog_file"],
                 lambda data: tenant(data, "vision")["quotas"]["a100-80g"]["nominal"].update(devices=0))
    answer = await api("catalog/reload", "POST", {}, as_user="root")
    assert [c["message"] for c in answer["changes"]] == [
        "quota of vision on a100-80g lowered from 1 devices to 0 devices"], answer
    assert [s["message"] for s in answer["said"]] == [
        "tenant vision uses 1 devices of its quota on a100-80g, now 0 devices; running work continues, new work "
        "waits"], answer
    stored = jp_serverapp.web_app.settings["hetero_platform"].repository.events()
    assert [e.reason for e in stored if e.type == "quota-exceeded"] == [answer["said"][0]["message"]]

    # Several ticks later it still runs; new work of the tenant waits on the quota.
    later = await api("workloads", "POST", gate.job("g2", template="training"), as_user="alice")
    waiting = await _wait_blocked(api, later["id"])
    assert waiting["state"] in ("queued", "inadmissible"), waiting
    assert (await api(f"workloads/{job['id']}", as_user="alice"))["state"] == "running"
    gate.open("g1")
    assert (await wait_for(job["id"], final, as_user="alice"))["state"] == "succeeded"
    await api(f"workloads/{later['id']}", "DELETE", as_user="alice")


async def test_an_invalid_file_changes_nothing_and_only_platform_admins_may_reload(team, hetero_config, api,
                                                                                  api_error):
    path = hetero_config["catalog_file"]
    good = open(path, encoding="utf-8").read()
    edit_catalog(path, lambda data: tenant(data, "vision")["quotas"]["a100-80g"]["nominal"].update(devices=5))
    for who in ("alice", "carol"):  # a member, and vision's tenant admin: neither is a platform admin
        status, error = await api_error("catalog/reload", "POST", {}, as_user=who)
        assert status == 403 and "platform-admin" in error["message"], error
    denied = [e for e in await audit(api, "catalog.reload") if e["outcome"] == "denied"]
    assert [e["actor"] for e in denied] == ["alice", "carol"], denied
    assert await audit(api, "quota.changed") == []

    with open(path, "a", encoding="utf-8") as out:
        out.write("\nqueues: [{name: Not A Name}]\n")
    status, error = await api_error("catalog/reload", "POST", {}, as_user="root")
    assert (status, error["field"]) == (400, "catalog") and "nothing was changed" in error["message"], error
    assert await audit(api, "quota.changed") == []
    tenants = {t["tenant"]: t for t in await api("tenants", as_user="root")}
    [a100] = [q for q in tenants["vision"]["quota"] if q["flavor"] == "a100-80g"]
    assert a100["nominal"]["device_milli"] == 1000, a100  # as the server started

    open(path, "w", encoding="utf-8").write(good)
    answer = await api("catalog/reload", "POST", {}, as_user="root")
    assert answer["changes"] == [] and answer["applied"] == [], answer


async def _holds(api) -> bool:
    tenants = {t["tenant"]: t for t in await api("tenants", as_user="root")}
    return any(q["used"]["device_milli"] for q in tenants["vision"]["quota"] if q["flavor"] == "a100-80g")


async def _wait_blocked(api, workload_id: int) -> dict:
    async def blocked():
        workload = await api(f"workloads/{workload_id}", as_user="alice")
        return workload if workload.get("blockers") else None
    return await until_async(blocked, "the new job to wait on its quota", timeout=30)


def remove_queue(name: str):
    """The catalog without queue ``name``: its templates go to the first other queue, no queue may preempt it."""
    def change(data):
        data["queues"] = [q for q in data["queues"] if q["name"] != name]
        for template in data["templates"]:
            if template["queue"] == name:
                template["queue"] = data["queues"][0]["name"]
        for queue in data["queues"]:
            preempts = (queue.get("preemption") or {}).get("may_preempt", [])
            if name in preempts:
                preempts.remove(name)
    return change


async def test_waiting_work_in_a_removed_queue_becomes_inadmissible_and_comes_back_with_it(team, hetero_config, api,
                                                                                          wait_for, gate):
    path = hetero_config["catalog_file"]
    good = open(path, encoding="utf-8").read()
    first = await api("workloads", "POST", gate.job("g1", template="training"), as_user="alice")
    await wait_for(first["id"], running, as_user="alice")
    second = await api("workloads", "POST", gate.job("g2", template="training"), as_user="alice")
    await wait_for(second["id"], lambda w: w.get("blockers"), as_user="alice")
    queue = first["queue"]

    edit_catalog(path, remove_queue(queue))
    answer = await api("catalog/reload", "POST", {}, as_user="root")
    assert ("queue.removed", f"queue/{queue}") in {(c["action"], c["target"]) for c in answer["changes"]}
    stranded = await wait_for(second["id"], lambda w: w["state"] == "inadmissible", as_user="alice")
    assert stranded["reason"].startswith(f"the reloaded catalog has no queue {queue}"), stranded
    assert (await api(f"workloads/{first['id']}", as_user="alice"))["state"] == "running"  # never stopped

    open(path, "w", encoding="utf-8").write(good)
    answer = await api("catalog/reload", "POST", {}, as_user="root")
    assert ("queue.added", f"queue/{queue}") in {(c["action"], c["target"]) for c in answer["changes"]}
    await wait_for(second["id"], lambda w: w["state"] == "queued", as_user="alice")
    gate.open("g1")
    gate.open("g2")
    assert (await wait_for(first["id"], final, as_user="alice"))["state"] == "succeeded"
    assert (await wait_for(second["id"], final, as_user="alice"))["state"] == "succeeded"


async def test_a_catalog_that_takes_a_flavor_from_running_work_is_refused(team, hetero_config, api, api_error,
                                                                         wait_for, gate):
    job = await api("workloads", "POST", gate.job("g1", template="training"), as_user="alice")
    placed = await wait_for(job["id"], running, as_user="alice")

    def move_node(data):  # the flavor's selector no longer takes A100s: its node would fall to another flavor
        flavor = next(f for f in data["flavors"] if f["name"] == placed["flavor"])
        flavor["selector"]["models"] = ["A800"]

    edit_catalog(hetero_config["catalog_file"], move_node)
    status, error = await api_error("catalog/reload", "POST", {}, as_user="root")
    assert (status, error["field"]) == (400, "catalog"), error
    node = placed["attempts"][0]["node"]
    assert f"node {node} would move from flavor {placed['flavor']} to " in error["message"], error
    assert f"while workloads {job['id']} run on it" in error["message"], error
    assert await audit(api, "flavor.changed") == []
    gate.open("g1")
    assert (await wait_for(job["id"], final, as_user="alice"))["state"] == "succeeded"


async def test_a_reload_on_a_machine_that_is_the_whole_inventory_fits_defaults_as_the_start_did(team, hetero_config,
                                                                                             api):
    """Template defaults are fitted to this machine at start (catalog/fit.py); a reload of the same file fits them
    the same way, so it changes nothing."""
    hetero_config.update(emulated_nodes_file="", discover_local=True)
    answer = await api("catalog/reload", "POST", {}, as_user="root")
    assert (answer["changes"], answer["applied"]) == ([], []), answer
