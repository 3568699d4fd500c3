"""Onboarding on the Kubernetes backend: with ``onboarding.nodes: required`` the cluster's nodes take no work until
their checklists pass, and each checklist's sample job and failing job run as pods on that node (required node
affinity), through the wire-level fake API server and its local kubelet."""

from __future__ import annotations

import pytest
import yaml

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH

from ..harness import until_async
from .fixtures import kube_api  # noqa: F401 - a fixture
from .test_backend import CPU_NODE, GPU_NODE, NAMESPACE, cluster, namespace, python_job  # noqa: F401 - fixtures


@pytest.fixture
def onboarding_required(tmp_path, hetero_config):
    """The shipped catalog with every node to be onboarded (list it before ``cluster``)."""
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    data["onboarding"] = {"nodes": "required", "min_driver": {"nvidia": "535"}, "sample_timeout_s": 60}
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    hetero_config["catalog_file"] = str(path)


async def test_the_clusters_nodes_are_onboarded_by_sample_pods_before_they_take_work(
        onboarding_required, cluster, api, wait_for, jp_serverapp):  # noqa: F811 - the imported fixtures
    seen: list[dict] = []
    cluster.api.subscribe(lambda kind, obj: seen.append(obj) if obj.get("kind") == "Pod" else None)
    jp_serverapp.web_app.settings["hetero_platform"].loop.start()  # as the server's start does

    async def admitted() -> dict | None:
        records = {r["name"]: r for r in await api("onboarding")}
        done = [records.get(name, {}).get("state") for name in (CPU_NODE, GPU_NODE)]
        return records if all(state in ("accepted", "rejected") for state in done) else None

    records = await until_async(admitted, "both nodes' checklists", timeout=120)
    for name in (CPU_NODE, GPU_NODE):
        assert records[name]["state"] == "accepted", records[name]
        steps = {step["name"]: step["evidence"] for step in records[name]["steps"]}
        assert "hetero-sample matmul (256, 256)" in steps["sample"]
        assert "exit code 3" in steps["fault"]
    # The samples were pods, each bound by required affinity to the node it checked.
    samples = [pod for pod in seen if pod["metadata"]["labels"].get("hetero.jupyter.org/tenant") == "platform"]
    placed = {pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchFields"][0]["values"][0] for pod in samples}
    assert placed == {CPU_NODE, GPU_NODE}
    gpu_samples = [pod for pod in samples if GPU_NODE in str(pod["spec"]["affinity"])]
    assert gpu_samples[0]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"

    job = await api("workloads", "POST", python_job("print('after onboarding')"))
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), timeout=60)
    assert done["state"] == "succeeded" and done["attempts"][0]["node"] == CPU_NODE
    assert {node["name"]: node["state"] for node in await api("nodes")} == {CPU_NODE: "ready", GPU_NODE: "ready"}


@pytest.fixture
def variant_frameworks(tmp_path, hetero_config):
    """The shipped catalog, the interactive template's CPU variant importing numpy and yaml from its own image (not
    the first CPU variant's, which the node samples use)."""
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    template = next(t for t in data["templates"] if t["name"] == "interactive")
    variant = next(v for v in template["variants"] if v["family"] == "cpu")
    variant.update(image="registry.example/scipy:2024-10", frameworks=["numpy", "yaml"],
                   python="/opt/envs/ignored-on-kubernetes/bin/python")
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    hetero_config["catalog_file"] = str(path)


async def test_a_variants_frameworks_are_checked_by_a_pod_in_its_image(
        variant_frameworks, cluster, api):  # noqa: F811 - the imported fixtures
    """The check is a pod of the variant's image bound to the node (its python: is the local backend's only), and
    its evidence names the image; the wire-level cluster's kubelet runs it here."""
    seen: list[dict] = []
    cluster.api.subscribe(lambda kind, obj: seen.append(obj) if obj.get("kind") == "Pod" else None)
    record = await api("onboarding/frameworks/interactive/cpu", "POST", {})
    assert record["state"] == "accepted", record["steps"]
    imports = record["steps"][2]
    assert imports["status"] == "passed" and imports["evidence"].startswith(
        "in image registry.example/scipy:2024-10: numpy "), imports
    checks = [pod for pod in seen if pod["metadata"]["labels"].get("hetero.jupyter.org/tenant") == "platform"]
    container = checks[0]["spec"]["containers"][0]
    assert container["image"] == "registry.example/scipy:2024-10"
    assert container["command"][-3:-1] == ["python", "-c"] and "hetero-versions" in container["command"][-1]
    assert CPU_NODE in str(checks[0]["spec"]["affinity"])
