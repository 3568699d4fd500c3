"""A real JupyterHub started by the tests: users in groups, their servers running the extension behind the
hub's proxy, each reachable only by its own user, the hub's groups reaching the catalog's tenants."""

from __future__ import annotations

import pytest

from ..builders import team_catalog
from .harness import CHP, HubProcess

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub")
    # The team catalog: alice is named by tenant vision, tenant nlp takes the hub group nlp-team (bob's).
    catalog = team_catalog(root)
    groups = {"vision": ["alice"], "nlp-team": ["bob"]}
    with HubProcess.start(root, groups=groups, server_args=(f"--HeteroApp.catalog_file={catalog}",)) as running:
        yield running


def test_the_hub_knows_its_users_and_their_groups(hub):
    users = {user["name"]: sorted(user["groups"]) for user in hub.api("users")}
    assert users == {"alice": ["vision"], "bob": ["nlp-team"]}


def test_a_users_server_runs_the_extension_for_its_user_and_her_tenant(hub):
    hub.spawn("alice")
    alice, bob = hub.token_for("alice"), hub.token_for("bob")
    status, me = hub.get("user/alice/hetero/api/v1/tenants/me", alice)
    assert status == 200, me
    assert (me["user"], me["tenant"]) == ("alice", "vision")
    status, _answer = hub.get("user/alice/hetero/api/v1/tenants/me", bob)
    assert status == 403  # the hub lets no one but alice into alice's server


def test_the_hubs_groups_reach_the_catalogs_tenants(hub):
    hub.spawn("bob")
    status, me = hub.get("user/bob/hetero/api/v1/tenants/me", hub.token_for("bob"))
    assert status == 200, me
    assert (me["user"], me["tenant"]) == ("bob", "nlp")  # by his hub group nlp-team
