"""Words that are right, through a real server (issue 37 item 5): a request beyond its tenant's quota says it can
never run as asked, a job whose node was deleted says "node lost", a member is offered only the templates their
tenant may use, and every denial (a user in no tenant's included) leaves one audit entry."""

from __future__ import annotations

import json

import pytest
import yaml
from tornado.httpclient import HTTPClientError

from jupyter_hetero.i18n import translate
from jupyter_hetero.notebook.display import status_line

from ..builders import TOKENS
from .test_kernels import kernelspecs  # noqa: F401 - the fixture
from .test_lifecycle import gate, running  # noqa: F401 - the gate fixture
from .test_metric_faces import hetero_cli

MALLORY = {"Authorization": "token mallory-token"}  # a user the identity provider knows, in no tenant
PREPROCESS = {"kind": "job", "template": "data-preprocessing", "command": ["true"]}
# vision (alice) may use three templates, nlp (bob) three others; each tenant's own are the only ones it is offered.
TEMPLATES = {"vision": {"templates": ["data-preprocessing", "training", "vision"]},
             "nlp": {"templates": ["data-preprocessing", "hpc", "embedding"]}}


@pytest.fixture
def mallory(team, server_config):
    server_config["TeamIdentityProvider"] = {"user_tokens": {**TOKENS, "mallory-token": "mallory"}}


@pytest.mark.team(**TEMPLATES)
async def test_a_member_is_offered_only_the_templates_of_their_tenant(team, api):
    for user, tenant in (("alice", "vision"), ("bob", "nlp")):
        offered = [t["name"] for t in await api("templates", as_user=user, mine="true")]
        assert sorted(offered) == sorted(TEMPLATES[tenant]["templates"]), user
    jobs = [t["name"] for t in await api("templates", as_user="alice", mine="true", kind="job")]
    assert "hpc" not in jobs and "training" in jobs  # nlp's template is not offered to vision's member
    assert "hpc" in [t["name"] for t in await api("templates", as_user="alice")]  # the whole catalog, when asked


async def _denied(api) -> list[tuple]:
    page = await api("audit", as_user="root", outcome="denied", limit=1000)
    return [(e["actor"], e["action"], e["target"]) for e in page["entries"]]


@pytest.mark.team(**TEMPLATES)
@pytest.mark.parametrize(
    ("user", "method", "route", "body", "entry"),
    [
        pytest.param(None, "POST", "workloads", PREPROCESS, ("mallory", "POST workloads", "workloads"),
                     id="a user in no tenant submits"),
        pytest.param("bob", "GET", "workloads/{alices}", None, ("bob", "workload.read", "workload/{alices}"),
                     id="a member reads another tenant's workload"),
        pytest.param("alice", "POST", "workloads", {**PREPROCESS, "template": "hpc"},
                     ("alice", "workload.submit", "template/hpc"), id="a template the tenant may not use"),
        pytest.param("alice", "GET", "audit", None, ("alice", "audit.read", "audit"), id="a member on an admin route"),
        pytest.param(None, "POST", "kernels", {"template": "interactive"}, ("mallory", "POST kernels", "kernels"),
                     id="a user in no tenant starts a kernel"),
        pytest.param(None, "POST", "/api/kernels", {"name": "hetero-interactive"},
                     ("mallory", "POST api/kernels", "api/kernels"),
                     id="a user in no tenant starts a hetero kernel through Jupyter's own route"),
        pytest.param(None, "POST", "kernels/placements", {"template": "interactive"},
                     ("mallory", "POST kernels/placements", "kernels/placements"),
                     id="a user in no tenant asks for a hub kernel's placement"),
    ],
)
async def test_every_denial_leaves_one_audit_entry(kernelspecs, mallory, api, api_error, jp_fetch, user, method,  # noqa: F811
                                                   route, body, entry):
    alices = (await api("workloads", "POST", PREPROCESS, as_user="alice"))["id"]
    before = await _denied(api)
    headers = MALLORY if user is None else None
    if route.startswith("/"):  # Jupyter's own route, which answers a refusal as Jupyter does (no reason of ours)
        with pytest.raises(HTTPClientError) as refused:
            await jp_fetch(*route.strip("/").split("/"), method=method, body=json.dumps(body), headers=headers)
        assert refused.value.code == 403 and "belongs to no tenant" in refused.value.response.body.decode()
    else:
        status, error = await api_error(route.format(alices=alices), method, body, as_user=user, headers=headers)
        assert status == 403 and error["reason"], error
    after = await _denied(api)
    assert after[:len(before)] == before
    assert after[len(before):] == [tuple(part.format(alices=alices) for part in entry)]


async def test_a_user_in_no_tenant_is_audited_for_each_change_and_once_for_a_repeated_read(mallory, api, api_error):
    for _ in range(2):
        assert (await api_error("workloads", "POST", PREPROCESS, headers=MALLORY))[0] == 403
        assert (await api_error("tenants/me", headers=MALLORY))[0] == 403
    page = await api("audit", as_user="root", actor="mallory")
    assert [(e["action"], e["outcome"]) for e in page["entries"]] == [
        ("POST workloads", "denied"), ("GET tenants/me", "denied"), ("POST workloads", "denied")]
    first = page["entries"][0]["detail"]
    assert first["reason"].startswith("user 'mallory' belongs to no tenant") and first["reason_code"] == "no-tenant"


async def test_a_request_beyond_the_quota_says_it_can_never_run_as_asked(team, api, wait_for, jp_http_port,
                                                                         jp_base_url):
    # vision has one A100 and may borrow none: two can never be its.
    job = await api("workloads", "POST", {**PREPROCESS, "template": "training",
                                          "parameters": {"devices": 2, "flavor": "a100-80g"}}, as_user="alice")
    waiting = await wait_for(job["id"], lambda w: w["state"] == "inadmissible", as_user="alice")
    assert waiting["reason"] == (
        "its tenant's quota can never give it what it asks: request exceeds the tenant's quota: it can never run as "
        "asked (it asks 2 devices of flavor a100-80g; tenant vision has a quota of 1 and could borrow 0 more)")
    assert status_line(waiting).startswith(
        "inadmissible in training - request exceeds the tenant's quota: it can never run as asked (request exceeds")
    explained = await api(f"workloads/{job['id']}/explain", as_user="alice", lang="en")
    assert "exceeds-quota" in str(explained) and "uses 0/1" not in str(explained), explained
    # `jupyter hetero status` says the same, with the figures, in either language; never that no node can hold it.
    for lang, headline in (("en", "request exceeds the tenant's quota: it can never run as asked"),
                           ("zh", translate("request exceeds the tenant's quota: it can never run as asked", "zh"))):
        code, out, err = await hetero_cli("status", str(job["id"]), "--lang", lang, port=jp_http_port,
                                          base_url=jp_base_url, token="alice-token")
        lines = out.splitlines()
        said = next(i for i, line in enumerate(lines) if line.startswith(f"  {headline}; "))
        assert code == 0 and lines[said + 1].startswith("  - "), (out, err)
        assert lines[said + 1].endswith("tenant vision has a quota of 1 and could borrow 0 more)" if lang == "en"
                                        else "0）")
        assert "no node" not in out, out


async def test_a_job_whose_node_was_deleted_waits_on_node_lost(team, api, wait_for, gate, jp_http_port,  # noqa: F811
                                                                jp_base_url):
    job = await api("workloads", "POST", gate.job("never", template="vision"), as_user="alice")
    placed = await wait_for(job["id"], running, as_user="alice")
    assert placed["node"] == "gpu-t4-0"
    await api("nodes/gpu-t4-0", "DELETE", as_user="root")
    requeued = await wait_for(job["id"], lambda w: w["state"] == "inadmissible", as_user="alice")
    assert requeued["reason"].startswith(
        "its nodes were lost: node lost: the nodes of flavor t4 left the inventory (1 node(s), such as gpu-t4-0)")
    assert "onboarding" not in requeued["reason"], requeued["reason"]
    assert status_line(requeued).startswith("inadmissible in batch - the nodes of its flavor were lost (node lost:")
    code, out, err = await hetero_cli("status", str(job["id"]), port=jp_http_port, base_url=jp_base_url,
                                      token="alice-token")
    assert code == 0 and (
        "  the nodes of its flavor were lost; it waits until one is back or another node joins the flavor "
        "(queue batch):") in out.splitlines(), (out, err)


async def test_a_reload_that_raises_the_quota_queues_the_request_again(team, api, wait_for, hetero_config):
    job = await api("workloads", "POST", {**PREPROCESS, "template": "training",
                                          "parameters": {"devices": 2, "flavor": "a100-80g"}}, as_user="alice")
    await wait_for(job["id"], lambda w: w["state"] == "inadmissible", as_user="alice")
    path = hetero_config["catalog_file"]
    with open(path, encoding="utf-8") as source:
        data = yaml.safe_load(source)
    next(t for t in data["tenants"] if t["name"] == "vision")["quotas"]["a100-80g"]["nominal"]["devices"] = 2
    with open(path, "w", encoding="utf-8") as out:
        yaml.safe_dump(data, out, allow_unicode=True)
    await api("catalog/reload", "POST", {}, as_user="root")
    # The inventory did not change: only the reload hands the inadmissible job to a cycle again, which admits it.
    placed = await wait_for(job["id"], lambda w: w["state"] in ("admitted", "starting", "running", "succeeded"),
                            as_user="alice")
    assert placed["node"] == "gpu-a100-0"
