"""Services between tenants and teammates through a real server (issue 33 item 8): a name is per tenant, each
tenant reaches its own service at /hetero/endpoints/<tenant>/<name>/, a deleted service's name is free again with
a history of its own, and a service's env values are its owner's only."""

from __future__ import annotations

import json

import pytest

from jupyter_hetero.api.openapi import build_document

from ..handlers.test_api_schema import check
from ..harness import until_async
from .test_services import MODEL, _auth

pytestmark = pytest.mark.usefixtures("team")


def _echo(version: str, **changes) -> dict:
    return {"name": "echo", "command": MODEL, "replicas": 1, "parameters": {"devices": 1},
            "env": {"MODEL_VERSION": version}, **changes}


async def _ready(api, user: str, name: str = "echo") -> dict:
    async def ready():
        service = await api(f"services/{name}", as_user=user)
        return service if service["ready_replicas"] == 1 else None

    return await until_async(ready, f"{user}'s {name} to have a ready replica", timeout=60)


async def _predict(jp_fetch, tenant: str, user: str, name: str = "echo") -> dict:
    response = await jp_fetch("hetero", "endpoints", tenant, name, "predict", method="POST",
                              body=json.dumps({"inputs": [1]}), headers=_auth(user))
    return json.loads(response.body)


@pytest.mark.team(vision_a100=2, nlp_a100=1)
async def test_two_tenants_each_have_a_service_of_the_same_name_and_each_reaches_its_own(api, api_error, jp_fetch):
    vision = await api("services", "POST", _echo("vision"), as_user="alice")
    nlp = await api("services", "POST", _echo("nlp"), as_user="bob")
    assert (vision["endpoint"], nlp["endpoint"]) == ("/hetero/endpoints/vision/echo/", "/hetero/endpoints/nlp/echo/")
    assert ((await _ready(api, "alice"))["tenant"], (await _ready(api, "bob"))["tenant"]) == ("vision", "nlp")
    assert (await _predict(jp_fetch, "vision", "alice"))["version"] == "vision"
    assert (await _predict(jp_fetch, "nlp", "bob"))["version"] == "nlp"
    assert [s["tenant"] for s in await api("services", as_user="bob")] == ["nlp"]

    # Another tenant's, named: refused; a platform admin names the tenant and reaches either.
    status, error = await api_error("services/echo", as_user="bob", tenant="vision")
    assert (status, error["reason"]) == (403, "other-tenant"), error
    with pytest.raises(Exception) as refused:
        await _predict(jp_fetch, "vision", "bob")
    assert getattr(refused.value, "code", None) == 403
    assert (await api("services/echo", as_user="root", tenant="nlp"))["user"] == "bob"
    assert (await _predict(jp_fetch, "vision", "root"))["version"] == "vision"
    status, error = await api_error("services/echo", as_user="root")  # root's own tenant has none of that name
    assert status == 404, error
    status, error = await api_error("services/echo", as_user="root", tenant="Not A Tenant")
    assert (status, error["field"]) == (400, "tenant"), error

    for user in ("alice", "bob"):
        await api("services/echo", "DELETE", as_user=user)


@pytest.mark.team(vision_a100=2)
async def test_a_deleted_services_name_is_free_again_and_the_new_service_has_a_history_of_its_own(
        api, api_error, jp_fetch, wait_for):
    first = await api("services", "POST", _echo("1"), as_user="alice")
    await _ready(api, "alice")
    await api("services/echo/rollouts", "POST", {"env": {"MODEL_VERSION": "2"}}, as_user="alice")
    await api("services/echo/rollback", "POST", {}, as_user="alice")
    status, error = await api_error("services", "POST", _echo("again"), as_user="alice")
    assert (status, error["reason"]) == (409, "name-taken"), error
    assert (await api("services/echo", "DELETE", as_user="alice"))["state"] == "deleted"
    for replica in first["replica_workloads"]:
        await wait_for(replica["id"], lambda w: w["state"] == "cancelled", as_user="alice")

    second = await api("services", "POST", _echo("2"), as_user="alice")
    assert [entry["outcome"] for entry in second["revisions"]] == ["created"]
    await _ready(api, "alice")
    assert (await _predict(jp_fetch, "vision", "alice"))["version"] == "2"
    service = await api("services/echo", as_user="alice")
    assert (service["state"], service["revision"], service["traffic"]["requests"]) == ("active", 1, 1)
    assert await api("services/echo/events", as_user="alice") == []  # the first one's rollout is not its history
    await api("services/echo", "DELETE", as_user="alice")


@pytest.mark.team(vision_a100=2)
async def test_a_teammate_sees_a_services_env_names_with_null_values_and_its_owner_sees_the_values(api):
    await api("services", "POST", {**_echo("1"), "env": {"MODEL_VERSION": "1", "API_KEY": "s3cret"}}, as_user="alice")
    await api("services/echo/rollouts", "POST", {"env": {"MODEL_VERSION": "2", "API_KEY": "s3cret"}},
              as_user="alice")
    mine = await api("services/echo", as_user="alice")
    assert mine["env"] == {"MODEL_VERSION": "1", "API_KEY": "s3cret"}
    assert mine["rollout"]["spec"]["env"]["API_KEY"] == "s3cret"
    for seen in (await api("services/echo", as_user="carol"), (await api("services", as_user="carol"))[0]):
        check(build_document(), "/services/{name}", "get", 200, seen)
        assert seen["env"] == {"MODEL_VERSION": None, "API_KEY": None}, seen["env"]
        assert seen["rollout"]["spec"]["env"] == {"MODEL_VERSION": None, "API_KEY": None}
        assert [entry["spec"]["env"] for entry in seen["revisions"]] == [{"MODEL_VERSION": None, "API_KEY": None}]
        assert "s3cret" not in json.dumps(seen)
    # A tenant-admin changes it without seeing the values, and the values stay: the owner still sees them.
    await api("services/echo/rollback", "POST", {}, as_user="carol")
    assert "s3cret" not in json.dumps(await api("services/echo", as_user="carol"))
    assert (await api("services/echo", as_user="alice"))["env"]["API_KEY"] == "s3cret"
    await api("services/echo", "DELETE", as_user="alice")
