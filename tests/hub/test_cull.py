"""The idle rules reach hub users' servers: a server placed on an accelerator that sits idle past its template's
idle timeout is warned, then stopped through the hub by the service, and its devices go back."""

from __future__ import annotations


import pytest

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from .harness import CHP, HubProcess, account_servers, hetero_service

pytestmark = pytest.mark.slow

API = "services/hetero/hetero/api/v1/"
IDLE_TIMEOUT_S = 8
ALICE = "hetero-t-alice"  # a Unix account too: HeteroLocalSpawner runs her server as it


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub-cull")
    catalog = team_catalog(root, templates={"interactive": {"idle_timeout_s": IDLE_TIMEOUT_S}},
                           vision={"users": [ALICE, "carol"]})
    service, _url = hetero_service(root, catalog, DEMO_NODES)
    spawner = account_servers(ALICE) + f"""
import jupyter_hetero.hub
c.JupyterHub.spawner_class = "jupyter_hetero.hub.HeteroLocalSpawner"
c.Spawner.options_form = jupyter_hetero.hub.options_form
c.Spawner.options_from_form = jupyter_hetero.hub.options_from_form
c.HeteroHub.service_url = "{_url}"
c.HeteroHub.catalog_file = {catalog!r}
c.HeteroLocalSpawner.hetero_poll_s = 0.2
"""
    with HubProcess.start(root, groups={}, users=(ALICE,), extra_config=service + spawner) as running:
        yield running.with_service((ALICE,))


def test_an_idle_server_is_warned_then_stopped_through_the_hub_and_its_devices_released(hub):
    hub._request(f"hub/api/users/{ALICE}/server", "POST", {"profile": "interactive--a100-80g"}, token=hub.admin_token)
    hub._wait(lambda: hub.api(f"users/{ALICE}")["servers"][""]["ready"], "alice's server to be ready", 60)
    status, found = hub.get(API + "workloads?kind=server&mine=true", hub.tokens[ALICE])
    (server,) = [w for w in found if w["state"] == "running"]
    assert server["flavor"] == "a100-80g", server

    hub._wait(lambda: not hub.api(f"users/{ALICE}")["servers"], "the hub to stop alice's idle server",
              IDLE_TIMEOUT_S + 40)
    ended = hub.get(API + f"workloads/{server['id']}", hub.tokens[ALICE])[1]
    assert (ended["state"], ended["placement"]) == ("cancelled", None), ended
    assert ended["reason"].startswith("culled: idle") and f"{IDLE_TIMEOUT_S} s idle timeout" in ended["reason"], ended
    events = [event["type"] for event in hub.get(API + f"workloads/{server['id']}/events", hub.tokens[ALICE])[1]]
    assert events.index("idle-warning") < events.index("culling") < events.index("released"), events
