"""Who a request is: the owner is whoever holds the server's own token, configured users get their
tenant (by name or group, JupyterHub's groups included), and anyone else gets no tenant and no role."""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import HTTPClientError

from .test_kernels import kernelspecs  # noqa: F401 - the kernelspecs fixture

SUBMIT = {"kind": "job", "template": "data-preprocessing", "command": ["true"]}


@pytest.fixture
def header_identity(server_config):
    """The server authenticates through another site's identity provider (tests/fakes.py)."""
    server_config["ServerApp"] = {"identity_provider_class": "tests.fakes.HeaderIdentityProvider"}


async def call(jp_fetch, headers: dict, route: str, method: str = "GET", body=None) -> tuple[int, dict]:
    """(status, JSON) of one hetero API call with exactly these identity headers (no server token)."""
    try:
        response = await jp_fetch("hetero", "api", "v1", *route.split("/"), method=method,
                                  body=json.dumps(body) if body is not None else None, allow_nonstandard_methods=True,
                                  headers={"Authorization": "", **headers})
    except HTTPClientError as error:
        return error.code, json.loads(error.response.body)
    return response.code, json.loads(response.body)


async def test_a_user_of_another_identity_provider_is_neither_the_owner_nor_an_admin(header_identity, jp_fetch, api):
    mallory = {"X-Test-User": "mallory"}
    status, error = await call(jp_fetch, mallory, "workloads", "POST", SUBMIT)
    assert (status, error["reason"]) == (403, "no-tenant")
    assert error["message"].startswith("user 'mallory' belongs to no tenant: a platform admin must add")
    assert error["message_zh"].startswith("用户 'mallory' 不属于任何租户")
    for route, method in (("tenants/me", "GET"), ("tenants", "GET"), ("nodes/cpu-0", "DELETE")):
        status, error = await call(jp_fetch, mallory, route, method)
        assert (status, error.get("reason")) == (403, "no-tenant"), route
    # The holder of the server's own token is still its owner under this provider.
    owner = await api("tenants/me")
    assert (owner["tenant"], owner["role"]) == ("default", "platform-admin")
    assert await api("workloads") == [], "nothing was submitted"


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        pytest.param("nlp-team", (200, "nlp", "member"), id="hub group of a tenant"),
        pytest.param("", (403, None, None), id="no hub group"),
    ],
)
async def test_a_hub_user_gets_the_tenant_of_the_groups_in_their_hub_model(team, header_identity, jp_fetch, groups,
                                                                          expected):
    dave = {"X-Test-Hub-User": "dave", "X-Test-Hub-Groups": groups}
    status, me = await call(jp_fetch, dave, "tenants/me")
    assert (status, me.get("tenant"), me.get("role")) == expected, me
    if status == 200:
        status, created = await call(jp_fetch, dave, "workloads", "POST", SUBMIT)
        assert (status, created["user"], created["tenant"]) == (201, "dave", "nlp")


@pytest.fixture
def zoe(server_config):
    """A team member whom the shipped catalog (with its default tenant) does not name."""
    server_config["ServerApp"] = {"identity_provider_class": "jupyter_hetero.auth.TeamIdentityProvider"}
    server_config["TeamIdentityProvider"] = {"user_tokens": {"zoe-token": "zoe"}}


async def test_the_default_tenant_is_the_owners_and_not_everyones(zoe, jp_fetch, api):
    status, error = await call(jp_fetch, {"Authorization": "token zoe-token"}, "workloads", "POST", SUBMIT)
    assert (status, error["reason"]) == (403, "no-tenant")
    owner = await api("tenants/me")  # the server's own token
    assert (owner["tenant"], owner["role"]) == ("default", "platform-admin")
    assert (await api("workloads", "POST", SUBMIT))["tenant"] == "default"


async def test_a_user_in_no_tenant_cannot_start_a_hetero_kernel_through_jupyters_api(zoe, kernelspecs, jp_fetch):  # noqa: F811
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "hetero-cpu"}),
                       headers={"Authorization": "token zoe-token"})
    assert refused.value.code == 403
    assert json.loads(refused.value.response.body)["message"].startswith("user 'zoe' belongs to no tenant")



# Alice's tenant has quota only for a flavor the interactive template (hetero-cpu's) cannot use.
@pytest.mark.team(vision={"quotas": {"amd-mi300": {"nominal": {"devices": 1, "cpu": 8, "memory": "32Gi"}}}})
async def test_a_refused_kernel_request_through_jupyters_api_is_answered_as_a_refusal_not_a_fault(
        team, kernelspecs, jp_fetch):  # noqa: F811
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "hetero-cpu"}),
                       headers={"Authorization": "token alice-token"})
    assert refused.value.code == 403, refused.value.response.body
    assert json.loads(refused.value.response.body)["message"].startswith(
        "tenant vision has no quota for any flavor of template interactive")
