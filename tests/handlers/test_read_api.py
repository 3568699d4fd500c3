"""The read API against a real jupyter-server with the extension loaded and a real SQLite file."""

from __future__ import annotations

import re

import pytest

from jupyter_hetero import __version__
from jupyter_hetero.handlers import default_handlers

TEMPLATES = {
    "data-preprocessing", "training", "fine-tuning", "online-inference", "batch-inference",
    "embedding", "vision", "hpc", "interactive",
}
QUEUES = ["urgent", "inference", "training", "experiment", "batch"]


async def test_version(api):
    version = await api("version")
    assert version["version"] == __version__
    assert version["mode"] == "single-server"
    assert version["database"] == "sqlite"


async def test_templates_lists_the_nine_task_types(api):
    templates = await api("templates")
    assert {t["name"] for t in templates} == TEMPLATES
    fine_tuning = next(t for t in templates if t["name"] == "fine-tuning")
    assert fine_tuning["display"] == {"en": "Fine-tuning", "zh": "模型微调"}
    assert fine_tuning["request"]["devices"] == 1
    assert fine_tuning["request"]["device_memory_mib"] == 40 * 1024
    assert fine_tuning["flavors"][0] == "a100-80g"
    assert {v["family"] for v in fine_tuning["variants"]} == {"nvidia", "ascend", "amd"}


async def test_templates_filter_by_kind(api):
    kernels = await api("templates", kind="kernel")
    assert "interactive" in {t["name"] for t in kernels}
    assert "training" not in {t["name"] for t in kernels}
    assert all(t["interactive"] for t in kernels)


async def test_one_template_and_unknown_template(api, api_error):
    assert (await api("templates/hpc"))["request"]["replicas"] == 2
    status, error = await api_error("templates/no-such-thing")
    assert status == 404
    assert "no-such-thing" in error["message"]
    assert "fine-tuning" in error["known"]


async def test_queues_with_counts_and_quota_use(api):
    queues = await api("queues")
    assert [q["name"] for q in queues] == QUEUES
    inference = next(q for q in queues if q["name"] == "inference")
    assert inference["class"] == "inference"
    assert inference["reserved"] == {"t4": 1, "ascend-310p": 2, "a100-80g": 1}
    assert inference["pending"] == 0 and inference["running"] == 0
    a100 = next(q for q in inference["quota"] if q["flavor"] == "a100-80g")
    assert a100["nominal"]["device_milli"] == 8000
    assert a100["used"] == {"cpu_milli": 0, "memory_mib": 0, "device_milli": 0}


async def test_my_tenant_is_the_default_tenant(api):
    me = await api("tenants/me")
    assert me["tenant"] == "default"
    assert me["role"] == "platform-admin"  # the server's owner, in the single-user default
    assert {q["flavor"] for q in me["quota"]} >= {"a100-80g", "ascend-910b", "cpu-standard"}


async def test_nodes_are_the_local_machine_plus_emulated_ones(api):
    nodes = {n["name"]: n for n in await api("nodes")}
    local = nodes["local"]
    assert local["emulated"] is False and local["source"] == "local"
    assert local["cpu_milli"] >= 1000 and local["memory_mib"] > 0
    assert nodes["gpu-a100-0"]["emulated"] is True
    assert nodes["gpu-a100-0"]["flavor"] == "a100-80g"
    assert nodes["gpu-a100-0"]["accelerator"]["count"] == 2
    assert nodes["npu-910b-0"]["flavor"] == "ascend-910b"
    assert nodes["npu-910b-0"]["family"] == "ascend"
    assert nodes["gpu-t4-0"]["flavor"] == "t4"
    # This machine's use is measured; an emulated node's cannot be.
    used = local["utilisation"]
    assert 0 <= used["cpu_pct"] <= 100 and 0 < used["memory_used_mib"] <= local["memory_mib"]
    assert nodes["gpu-a100-0"]["utilisation"] is None


async def test_nodes_filters(api):
    emulated = await api("nodes", emulated="true")
    assert emulated and all(n["emulated"] for n in emulated)
    ascend = await api("nodes", family="ascend")
    assert [n["name"] for n in ascend] == ["npu-910b-0"]


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        pytest.param("nodes", {"emulated": "maybe"}, "emulated", id="non-boolean emulated"),
        pytest.param("nodes", {"family": "quantum"}, "family", id="unknown accelerator family"),
        pytest.param("nodes", {"colour": "red"}, "colour", id="unknown parameter"),
        pytest.param("templates", {"kind": "daemon"}, "kind", id="unknown workload kind"),
        pytest.param("templates", {"task_type": "mining"}, "task_type", id="unknown task type"),
    ],
)
async def test_invalid_query_parameters_are_400_naming_the_field(api_error, path, params, field):
    status, error = await api_error(path, **params)
    assert status == 400
    assert error["field"] == field
    assert field in error["message"]


async def test_openapi_describes_every_endpoint(api):
    document = await api("openapi.json")
    assert document["openapi"].startswith("3.")
    assert document["info"]["version"] == __version__
    served = {pattern.split("hetero/api/v1", 1)[1] for pattern, _handler in default_handlers}
    documented = {re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path) for path in document["paths"]}
    assert served == documented


async def test_requests_without_a_token_are_refused(jp_fetch):
    from tornado.httpclient import HTTPClientError

    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("hetero", "api", "v1", "nodes", headers={"Authorization": ""})
    assert info.value.code == 403
