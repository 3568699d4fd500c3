"""Hub users' servers as workloads of kind server: asked for, placed, started and released by the
spawner as its user, counted against the tenant's quota, closed to everyone else."""

from __future__ import annotations

import asyncio
import time

import pytest

pytestmark = pytest.mark.usefixtures("team")

A100 = {"template": "interactive", "flavor": "a100-80g", "parameters": {"devices": 1}}


async def _placed(wait_for, workload_id: int, user: str) -> dict:
    return await wait_for(workload_id, lambda w: w["state"] == "admitted", as_user=user)


async def test_a_server_is_placed_started_with_its_devices_and_released(api, api_error, wait_for):
    asked = await api("servers", "POST", A100, as_user="alice")
    assert (asked["kind"], asked["state"], asked["user"], asked["tenant"]) == ("server", "queued", "alice", "vision")
    placed = await _placed(wait_for, asked["id"], "alice")
    devices = [share["index"] for share in placed["placement"]["slots"][0]["devices"]]
    started = await api(f"servers/{asked['id']}/started", "POST", {"where": "pid 4242"}, as_user="alice")
    assert started["workload"]["state"] == "running"
    env = started["environment"]
    assert env["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, devices)) and len(devices) == 1, env
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == ""  # every other family's devices hidden
    assert (env["HETERO_NODE"], env["HETERO_FLAVOR"]) == (placed["node"], "a100-80g")

    # Held against vision's one A100: carol's server (same tenant) waits, blocked by the quota.
    second = await api("servers", "POST", A100, as_user="carol")
    waiting = await wait_for(second["id"], lambda w: w["state"] == "queued" and w.get("blockers"), as_user="carol")
    assert any("quota" in blocker["message"] for blocker in waiting["blockers"]), waiting

    released = await api(f"servers/{asked['id']}", "DELETE", as_user="alice")
    assert (released["state"], released["placement"]) == ("succeeded", None)
    await _placed(wait_for, second["id"], "carol")  # the released A100 goes to the next server
    # Placed but never started: given back as abandoned, not as done.
    assert (await api(f"servers/{second['id']}", "DELETE", as_user="carol"))["state"] == "cancelled"


async def test_only_the_owner_starts_a_server_and_another_tenant_sees_nothing(api, api_error, wait_for):
    asked = await api("servers", "POST", A100, as_user="alice")
    await _placed(wait_for, asked["id"], "alice")
    for method, route in (("POST", "started"), ("DELETE", "")):
        status, error = await api_error(f"servers/{asked['id']}" + (f"/{route}" if route else ""), method,
                                        {} if method == "POST" else None, as_user="bob")
        assert status == 403 and "not to your tenant nlp" in error["reason"], error
    status, error = await api_error(f"servers/{asked['id']}/started", "POST", {}, as_user="carol")
    assert status == 403 and "only they launch it" in error["reason"], error
    status, _error = await api_error("servers/999999/started", "POST", {}, as_user="alice")
    assert status == 404
    status, _error = await api_error("servers/999999", "DELETE", as_user="alice")
    assert status == 404
    await api(f"servers/{asked['id']}", "DELETE", as_user="alice")


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        pytest.param({"template": "no-such"}, 404, "template", id="unknown template"),
        pytest.param({"template": "training"}, 400, "template", id="a template without kernels runs no servers"),
        pytest.param({"template": "interactive", "image": "x"}, 400, "image", id="unknown field"),
        pytest.param({"template": "interactive", "parameters": {"devices": 99}}, 400, "parameters.devices",
                     id="a parameter out of bounds"),
        pytest.param({"template": "fine-tuning", "flavor": "cpu-standard"}, 400, "flavor",
                     id="a flavor the template does not run on"),
    ],
)
async def test_bad_server_requests_name_the_field(api_error, body, status, field):
    code, error = await api_error("servers", "POST", body, as_user="alice")
    assert code == status, error
    assert field in (error.get("field") or ""), error


async def test_a_waiting_server_cannot_start_and_a_job_is_not_a_server(api, api_error, wait_for):
    first = await api("servers", "POST", A100, as_user="alice")
    await _placed(wait_for, first["id"], "alice")
    second = await api("servers", "POST", A100, as_user="alice")  # over vision's one A100: waits
    status, error = await api_error(f"servers/{second['id']}/started", "POST", {}, as_user="alice")
    assert (status, error["reason"]) == (409, "not-placed") and "not placed" in error["message"], error
    abandoned = await api(f"servers/{second['id']}", "DELETE", as_user="alice")
    assert abandoned["state"] == "cancelled"
    job = await api("workloads", "POST", {"template": "data-preprocessing", "command": ["true"]}, as_user="alice")
    status, error = await api_error(f"servers/{job['id']}/started", "POST", {}, as_user="alice")
    assert (status, error["field"]) == (400, "workload_id") and "not a server" in error["message"], error
    await api(f"servers/{first['id']}", "DELETE", as_user="alice")


@pytest.mark.team(templates={"interactive": {"idle_timeout_s": 5}})
async def test_a_server_reported_idle_past_its_timeout_is_culled_and_no_one_else_reports_it(team, api, wait_for):
    asked = await api("servers", "POST", A100, as_user="alice")
    await _placed(wait_for, asked["id"], "alice")
    await api(f"servers/{asked['id']}/started", "POST", {}, as_user="alice")
    # Carol's word on alice's server is not taken: reported idle for an hour by her, it is left alone.
    await api("activity", "POST", {"server": {"workload_id": asked["id"], "last_activity": time.time() - 3600}},
              as_user="carol")
    await asyncio.sleep(1.0)  # a few scheduler ticks, each running the idle rules
    assert (await api(f"workloads/{asked['id']}", as_user="alice"))["stopping"] is None

    await api("activity", "POST", {"server": {"workload_id": asked["id"], "last_activity": time.time() - 60}},
              as_user="alice")
    culled = await wait_for(asked["id"], lambda w: w["stopping"] == "cancel", as_user="alice")
    assert culled["reason"].startswith("culled: idle") and "5 s idle timeout of template interactive" in culled["reason"]
    # The hub stops the server (here, its spawner's release): it ends cancelled with the culler's reason.
    released = await api(f"servers/{asked['id']}", "DELETE", as_user="alice")
    assert released["state"] == "cancelled" and released["reason"].startswith("culled: idle"), released


async def test_a_server_whose_launch_failed_ends_failed_with_the_reason(api, wait_for):
    asked = await api("servers", "POST", A100, as_user="alice")
    await _placed(wait_for, asked["id"], "alice")
    await api(f"servers/{asked['id']}/started", "POST", {}, as_user="alice")
    ended = await api(f"servers/{asked['id']}", "DELETE", as_user="alice", failed="FileNotFoundError: jupyterhub-singleuser")
    assert (ended["state"], ended["placement"]) == ("failed", None), ended
    assert ended["reason"].endswith("could not start: FileNotFoundError: jupyterhub-singleuser"), ended
