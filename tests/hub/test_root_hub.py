"""A hub run as root from its admin's config with `jupyter hetero hub-config --local` appended: the admin's services,
roles, user scopes and server environment all survive beside the hetero ones, and a user's server runs as that
user's Unix account, placed by the service, with the extension reaching it."""

from __future__ import annotations

import pwd
from pathlib import Path

import pytest

from jupyter_hetero.hub.config import hub_config

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from ..harness import free_port
from .harness import CHP, HubProcess, account_servers

pytestmark = pytest.mark.slow

ANN = "hetero-t-ann"  # in the hub group nlp-team: tenant nlp
ZOE = "no-account-zoe"  # in nlp-team too, with no Unix account on this machine
ADMINS_SCOPE = "read:groups!group=nlp-team"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub-root")
    catalog = team_catalog(root)
    port = free_port()
    # The admin's own config (the harness's `tests` service and role are theirs too): a list of scopes, as admins
    # write them, and a variable every server gets.
    admins = account_servers(ANN) + f"""
c.JupyterHub.extra_user_scopes = [{ADMINS_SCOPE!r}]
c.Spawner.environment = {{"SITE_NOTICE": "from the admin"}}
"""
    # Then the generated fragment, then where the service finds its catalog and nodes (a site's own choices).
    site = f"""
hetero = next(service for service in c.JupyterHub.services if service["name"] == "hetero")
hetero["command"] += [
    "--HeteroApp.catalog_file={catalog}", "--HeteroApp.db_url=sqlite:///{root / 'hetero.sqlite'}",
    "--HeteroApp.work_dir={root / 'work'}", "--HeteroApp.emulated_nodes_file={DEMO_NODES}",
    "--HeteroApp.local_node_name=local", "--HeteroApp.schedule_interval=0.2",
]
c.HeteroHub.catalog_file = {catalog!r}
c.HeteroLocalSpawner.hetero_poll_s = 0.2
"""
    config = admins + hub_config(local=True, port=port) + site
    with HubProcess.start(root, groups={"nlp-team": [ANN, ZOE]}, extra_config=config) as running:
        yield running.with_service((ANN, ZOE))


def proc_status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_the_admins_services_roles_and_scopes_survive_beside_the_hetero_ones(hub):
    # The admin's `tests` service and its role: its token still lists users (admin:users).
    assert ANN in [user["name"] for user in hub.api("users")]
    assert hub._request("hub/api/services/hetero", token=hub.tokens[ANN])["name"] == "hetero"
    scopes = set(hub._request("hub/api/user", token=hub.tokens[ANN])["scopes"])
    assert {ADMINS_SCOPE, "access:services!service=hetero", "read:services!service=hetero"} <= scopes, scopes


def test_a_users_server_runs_as_her_unix_account_with_both_environments(hub):
    hub.spawn(ANN)
    account = pwd.getpwnam(ANN)
    pid = hub.api(f"users/{ANN}")["servers"][""]["state"]["pid"]
    uids = proc_status(pid)["Uid"].split()
    assert set(uids) == {str(account.pw_uid)}, uids  # real, effective, saved and filesystem: all hers
    seen = environ(pid)
    assert (seen["USER"], seen["HOME"]) == (ANN, account.pw_dir)
    assert seen["SITE_NOTICE"] == "from the admin"
    assert seen["JUPYTER_HETERO_SERVICE_URL"].endswith("/services/hetero/") and seen["HETERO_WORKLOAD_ID"]
    # Her server's own token carries the hetero scopes next to the server role's.
    token_scopes = set(hub._request("hub/api/user", token=seen["JUPYTERHUB_API_TOKEN"])["scopes"])
    assert "access:services!service=hetero" in token_scopes, token_scopes
    # The extension in her server, run by her account, passes her calls to the service as her.
    status, me = hub.get(f"user/{ANN}/hetero/api/v1/tenants/me", hub.tokens[ANN])
    assert status == 200, me
    assert (me["user"], me["tenant"]) == (ANN, "nlp")


def test_a_user_without_a_unix_account_is_refused_before_her_server_is_queued(hub):
    status, answer = hub._request(f"hub/api/users/{ZOE}/server", "POST", token=hub.admin_token, check=False,
                                  with_status=True)
    assert status == 403 and "has no Unix account" in answer["message"], answer
    status, held = hub.get("services/hetero/hetero/api/v1/workloads?kind=server&mine=true", hub.tokens[ZOE])
    assert (status, held) == (200, []), held  # nothing queued, no devices held for a server that cannot start
