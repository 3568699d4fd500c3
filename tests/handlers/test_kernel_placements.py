"""Kernels of hub users' servers: placed here as their user, launched there with their devices and their own
credential, followed by the server's reports (idle, culled, cancelled, gone) and released, closed to everyone else."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from tornado.httpclient import HTTPClientError

from ..harness import until_async

pytestmark = pytest.mark.usefixtures("team")

A100 = {"template": "interactive", "parameters": {"devices": 1, "flavor": "a100-80g"}, "kernel_id": "k-alice-1"}


async def _placed(api, wait_for, body: dict, user: str = "alice") -> dict:
    asked = await api("kernels/placements", "POST", body, as_user=user)
    assert (asked["kind"], asked["state"], asked["user"]) == ("kernel", "queued", user), asked
    return await wait_for(asked["id"], lambda w: w["state"] == "admitted", as_user=user)


def _report(workload_id: int, state: str = "idle", last_activity: float | None = None) -> dict:
    return {"kernels": [{"workload_id": workload_id, "execution_state": state,
                         "last_activity": time.time() if last_activity is None else last_activity}]}


def as_credential(jp_fetch, env: dict, route: str):
    return jp_fetch("hetero", "api", "v1", *route.split("/"),
                    headers={"Authorization": f"token {env['JUPYTER_HETERO_TOKEN']}"})


async def test_a_kernel_is_placed_here_launched_there_with_its_devices_and_released(api, jp_fetch, wait_for):
    placed = await _placed(api, wait_for, A100)
    devices = [share["index"] for share in placed["placement"]["slots"][0]["devices"]]
    started = await api(f"kernels/placements/{placed['id']}/started", "POST", {"where": "pid 77"}, as_user="alice")
    env = started["environment"]
    assert started["workload"]["state"] == "running"
    assert env["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, devices)) and len(devices) == 1, env
    assert (env["HETERO_NODE"], env["HETERO_FLAVOR"]) == (placed["node"], "a100-80g")
    assert "PATH" not in env and "HOME" not in env  # the user's server adds its own, not this server's
    # The kernel's own credential reaches this API as alice, with her rights and no more.
    me = json.loads((await as_credential(jp_fetch, env, "tenants/me")).body)
    assert (me["user"], me["tenant"]) == ("alice", "vision")

    # Held against vision's one A100: carol's kernel waits, blocked by the quota.
    waiting = await api("kernels/placements", "POST", {**A100, "kernel_id": "k-carol-1"}, as_user="carol")
    blocked = await wait_for(waiting["id"], lambda w: w.get("blockers"), as_user="carol")
    assert any("quota" in blocker["message"] for blocker in blocked["blockers"]), blocked

    assert (await api("activity", "POST", _report(placed["id"]), as_user="alice"))["stop"] == []
    released = await api(f"kernels/placements/{placed['id']}", "DELETE", as_user="alice")
    assert (released["state"], released["placement"]) == ("succeeded", None)
    with pytest.raises(HTTPClientError) as refused:
        await as_credential(jp_fetch, env, "tenants/me")
    assert refused.value.code in (401, 403)  # the credential ended with its workload
    await wait_for(waiting["id"], lambda w: w["state"] == "admitted", as_user="carol")
    abandoned = await api(f"kernels/placements/{waiting['id']}", "DELETE", as_user="carol",
                          failed="the kernelspec's command was not found")
    assert abandoned["state"] == "failed" and "command was not found" in abandoned["reason"], abandoned


async def test_a_cancelled_kernel_is_stopped_through_its_servers_next_report(api, wait_for):
    placed = await _placed(api, wait_for, A100)
    await api(f"kernels/placements/{placed['id']}/started", "POST", {}, as_user="alice")
    await api(f"workloads/{placed['id']}", "DELETE", as_user="alice")  # cancelled, from the panel say

    async def stop_said():
        stop = (await api("activity", "POST", _report(placed["id"]), as_user="alice"))["stop"]
        return stop or None

    stop = await until_async(stop_said, "the stop in the report's answer")
    assert [item["workload_id"] for item in stop] == [placed["id"]] and stop[0]["reason"], stop
    released = await api(f"kernels/placements/{placed['id']}", "DELETE", as_user="alice")
    assert released["state"] == "cancelled"


async def test_an_idle_kernel_is_culled_by_its_timeout_through_the_report(api, wait_for):
    placed = await _placed(api, wait_for, {**A100, "idle_timeout": 5})
    await api(f"kernels/placements/{placed['id']}/started", "POST", {}, as_user="alice")
    idle_since = time.time() - 60  # its server says: idle for a minute, past the kernel's 5 s

    async def culled():
        stop = (await api("activity", "POST", _report(placed["id"], "idle", idle_since),
                          as_user="alice"))["stop"]
        return stop or None

    stop = await until_async(culled, "the cull in the report's answer")
    assert "culled: idle" in stop[0]["reason"], stop
    assert (await api(f"kernels/placements/{placed['id']}", "DELETE", as_user="alice"))["state"] == "cancelled"


async def test_a_busy_kernel_is_not_culled(api, wait_for):
    placed = await _placed(api, wait_for, {**A100, "idle_timeout": 1})
    await api(f"kernels/placements/{placed['id']}/started", "POST", {}, as_user="alice")
    for _ in range(8):  # a few scheduler ticks, each sweeping
        stop = await api("activity", "POST", _report(placed["id"], "busy", time.time() - 60),
                         as_user="alice")
        assert stop["stop"] == []
        await asyncio.sleep(0.3)
    assert (await api(f"workloads/{placed['id']}", as_user="alice"))["state"] == "running"
    await api(f"kernels/placements/{placed['id']}", "DELETE", as_user="alice")


@pytest.fixture
def short_grace(hetero_config):
    hetero_config["kernel_report_grace"] = 1.0


async def test_a_kernel_its_server_stops_reporting_is_lost_and_its_devices_freed(short_grace, api, wait_for):
    placed = await _placed(api, wait_for, A100)
    await api(f"kernels/placements/{placed['id']}/started", "POST", {}, as_user="alice")
    lost = await wait_for(placed["id"], lambda w: w["state"] == "lost", as_user="alice")
    assert "stopped reporting" in lost["reason"] and lost["placement"] is None, lost


async def test_only_the_owner_launches_and_reports_and_another_tenant_sees_nothing(api, api_error, wait_for):
    placed = await _placed(api, wait_for, A100)
    for method, route in (("POST", "/started"), ("DELETE", "")):
        status, error = await api_error(f"kernels/placements/{placed['id']}{route}", method,
                                        {} if method == "POST" else None, as_user="bob")
        assert status == 403 and "not to your tenant nlp" in error["reason"], error
    status, error = await api_error(f"kernels/placements/{placed['id']}/started", "POST", {}, as_user="carol")
    assert status == 403 and "only they launch it" in error["reason"], error
    # Another user's kernel reported as one's own is named for a stop, and its activity is not taken.
    stop = (await api("activity", "POST", _report(placed["id"]), as_user="carol"))["stop"]
    assert stop == [{"workload_id": placed["id"], "reason": f"kernel workload {placed['id']} is not one of yours "
                                                            "placed by this service"}]
    status, _error = await api_error("kernels/placements/999999/started", "POST", {}, as_user="alice")
    assert status == 404
    job = await api("workloads", "POST", {"template": "data-preprocessing", "command": ["true"]}, as_user="alice")
    status, error = await api_error(f"kernels/placements/{job['id']}", "DELETE", as_user="alice")
    assert (status, error["field"]) == (400, "workload_id"), error
    await api(f"kernels/placements/{placed['id']}", "DELETE", as_user="alice")


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        pytest.param({"template": "no-such", "kernel_id": "k"}, 404, "template", id="unknown template"),
        pytest.param({"template": "training", "kernel_id": "k"}, 400, "template", id="a template without kernels"),
        pytest.param({"template": "interactive"}, 400, "kernel_id", id="no kernel id"),
        pytest.param({"template": "interactive", "kernel_id": "../x"}, 400, "kernel_id", id="a kernel id with a path"),
        pytest.param({"template": "interactive", "kernel_id": "k", "idle_timeout": 0}, 400, "idle_timeout",
                     id="a zero idle timeout"),
        pytest.param({"template": "interactive", "kernel_id": "k", "parameters": {"devices": 99}}, 400,
                     "parameters.devices", id="a parameter out of bounds"),
    ],
)
async def test_bad_kernel_placements_name_the_field(api_error, body, status, field):
    code, error = await api_error("kernels/placements", "POST", body, as_user="alice")
    assert code == status, error
    assert field in (error.get("field") or ""), error


@pytest.fixture
def service_mode(hetero_config):
    hetero_config["mode"] = "service"


async def test_the_hubs_service_runs_no_kernels_of_its_own(service_mode, api_error):
    status, error = await api_error("kernels", "POST", {"template": "interactive"}, as_user="alice")
    assert (status, error["reason"]) == (409, "kernels-run-in-user-servers"), error
