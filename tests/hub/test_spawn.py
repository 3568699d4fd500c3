"""Servers on matched nodes: a hub user's server from a hetero profile is a `server` workload, placed by
the shared service before HeteroLocalSpawner starts it, seeing only its devices, held against the
tenant's quota, its wait streamed to the spawn-pending page, released when it stops."""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from ..harness import free_port
from .harness import CHP, HubProcess, account_servers

pytestmark = pytest.mark.slow

API = "services/hetero/hetero/api/v1/"
# Hub users with Unix accounts of their names: HeteroLocalSpawner runs each one's server as its account.
ALICE, CAROL = "hetero-t-alice", "hetero-t-carol"
A100 = {"profile": "interactive--a100-80g"}  # vision's one A100 holds one such server at a time


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub-spawn")
    catalog = team_catalog(root, vision={"users": [ALICE, CAROL], "admins": [CAROL]})  # A100 quota 1
    command = [sys.executable, "-m", "jupyter_hetero.cli", "service", "--allow-root",
               f"--HeteroApp.catalog_file={catalog}", f"--HeteroApp.db_url=sqlite:///{root / 'hetero.sqlite'}",
               f"--HeteroApp.work_dir={root / 'work'}", f"--HeteroApp.emulated_nodes_file={DEMO_NODES}",
               "--HeteroApp.local_node_name=local", "--HeteroApp.schedule_interval=0.2"]
    port = free_port()
    service = account_servers(ALICE, CAROL) + f"""
import jupyter_hetero.hub
c.JupyterHub.services.append({{"name": "hetero", "url": "http://127.0.0.1:{port}", "command": {command!r}}})
c.JupyterHub.load_roles.append({{"name": "user", "scopes": ["self", "access:services!service=hetero"]}})
c.JupyterHub.spawner_class = "jupyter_hetero.hub.HeteroLocalSpawner"
c.JupyterHub.tornado_settings = {{"slow_spawn_timeout": 1}}  # a waiting spawn answers 202 at once
c.Spawner.options_form = jupyter_hetero.hub.options_form
c.Spawner.options_from_form = jupyter_hetero.hub.options_from_form
c.HeteroHub.service_url = "http://127.0.0.1:{port}/services/hetero/"
c.HeteroHub.catalog_file = {catalog!r}
c.HeteroLocalSpawner.hetero_poll_s = 0.2
"""
    with HubProcess.start(root, groups={}, users=(ALICE, CAROL), extra_config=service) as running:
        yield running.with_service((ALICE, CAROL))


def servers(hub, user: str) -> list[dict]:
    status, found = hub.get(API + "workloads?kind=server&mine=true", hub.tokens[user])
    assert status == 200, found
    return found


def server_pid(hub, user: str) -> int:
    return hub.api(f"users/{user}")["servers"][""]["state"]["pid"]


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def progress_until(hub, user: str, predicate, timeout: float = 30) -> list[dict]:
    """The hub's spawn progress stream (what the spawn-pending page shows) until an event satisfies ``predicate``."""
    request = urllib.request.Request(hub.url + f"hub/api/users/{user}/server/progress",
                                     headers={"Authorization": f"token {hub.tokens[user]}",
                                              "Accept": "text/event-stream"})
    events, deadline = [], time.monotonic() + timeout
    with urllib.request.urlopen(request, timeout=timeout) as stream:
        for line in stream:
            if line.startswith(b"data:"):
                events.append(json.loads(line[5:]))
                if predicate(events[-1]):
                    return events
            assert time.monotonic() < deadline, events
    raise AssertionError(f"the progress stream ended first: {events}")


def test_a_server_is_a_workload_placed_before_it_starts_and_sees_only_its_devices(hub):
    hub._request(f"hub/api/users/{ALICE}/server", "POST", A100, token=hub.admin_token)
    hub._wait(lambda: hub.api(f"users/{ALICE}")["servers"][""]["ready"], "alice's server to be ready", 60)
    (workload,) = [w for w in servers(hub, ALICE) if w["state"] == "running"]
    assert (workload["kind"], workload["user"], workload["tenant"]) == ("server", ALICE, "vision")
    slot = workload["placement"]["slots"][0]
    assert (slot["node"], workload["flavor"]) == ("gpu-a100-0", "a100-80g")
    seen = environ(server_pid(hub, ALICE))
    assert seen["CUDA_VISIBLE_DEVICES"] == ",".join(str(d["index"]) for d in slot["devices"]), seen
    assert len(slot["devices"]) == 1 and seen["ASCEND_RT_VISIBLE_DEVICES"] == ""
    assert (seen["HETERO_WORKLOAD_ID"], seen["HETERO_NODE"]) == (str(workload["id"]), "gpu-a100-0")


def test_a_spawn_stopped_while_it_waits_gives_up_its_place(hub):
    status, _answer = hub._request(f"hub/api/users/{CAROL}/server", "POST", A100, token=hub.admin_token, check=False,
                                   with_status=True)
    assert status == 202, hub.log()  # alice's server holds vision's A100
    hub._wait(lambda: [w for w in servers(hub, CAROL) if w["state"] == "queued"], "carol's server to queue", 30)
    hub._request(f"hub/api/users/{CAROL}/server", "DELETE", token=hub.admin_token, check=False)
    hub._wait(lambda: [w["state"] for w in servers(hub, CAROL)] == ["cancelled"],
              "carol's abandoned server workload to be cancelled", 30)
    hub._wait(lambda: not hub.api(f"users/{CAROL}")["servers"], "carol's spawn to end", 30)


def test_a_server_over_the_quota_waits_with_its_place_shown_and_starts_when_the_first_stops(hub):
    first = next(w for w in servers(hub, ALICE) if w["state"] == "running")  # from the test above
    status, _answer = hub._request(f"hub/api/users/{CAROL}/server", "POST", A100, token=hub.admin_token, check=False,
                                   with_status=True)
    assert status == 202, hub.log()
    events = progress_until(hub, CAROL, lambda event: "quota" in event.get("message", ""))
    waiting = events[-1]
    assert waiting["message"].startswith("Waiting in queue experiment"), waiting
    assert waiting["hetero"]["state"] == "queued" and waiting["hetero"]["blockers"], waiting
    (queued,) = [w for w in servers(hub, CAROL) if w["state"] == "queued"]

    hub._request(f"hub/api/users/{ALICE}/server", "DELETE", token=hub.admin_token, check=False)
    hub._wait(lambda: hub.get(API + f"workloads/{first['id']}", hub.tokens[ALICE])[1]["state"] == "succeeded",
              "alice's server to give its A100 back", 30)
    hub._wait(lambda: hub.api(f"users/{CAROL}")["servers"][""]["ready"], "carol's server, placed on the freed A100", 60)
    started = hub.get(API + f"workloads/{queued['id']}", hub.tokens[CAROL])[1]
    assert (started["state"], started["node"]) == ("running", "gpu-a100-0"), started
    hub._request(f"hub/api/users/{CAROL}/server", "DELETE", token=hub.admin_token, check=False)
    hub._wait(lambda: hub.get(API + f"workloads/{queued['id']}", hub.tokens[CAROL])[1]["state"] == "succeeded",
              "carol's server to be released", 30)
