"""`jupyter hetero k8s render`: the objects the backend would create, printed from the backend's own factory."""

from __future__ import annotations

import subprocess
import sys

import kubernetes_validate
import pytest
import yaml

from jupyter_hetero.cli.k8s import render
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog

KUBERNETES = "1.35"


def hetero(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jupyter_hetero.cli", *args], capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_jobs_pod_is_placed_on_a_synthetic_node_of_the_templates_first_flavor():
    result = hetero("k8s", "render", "--template", "fine-tuning")
    assert result.returncode == 0, result.stderr
    [pod] = list(yaml.safe_load_all(result.stdout))
    assert pod["kind"] == "Pod" and pod["metadata"]["namespace"] == "hetero"
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["synthetic-a100-80g"]
    assert "nodeName" not in pod["spec"]
    container = pod["spec"]["containers"][0]
    assert container["image"] == "nvcr.io/nvidia/pytorch:24.10-py3"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert container["command"][:3] == ["python", "-m", "jupyter_hetero.kernel.runner"]


def test_a_flavor_and_a_kernel_can_be_asked_for():
    result = hetero("k8s", "render", "--template", "fine-tuning", "--flavor", "ascend-910b", "--kernel",
                    "--namespace", "hetero-vision")
    assert result.returncode == 0, result.stderr
    secret, pod = yaml.safe_load_all(result.stdout)
    assert (secret["kind"], pod["kind"]) == ("Secret", "Pod")
    assert {secret["metadata"]["namespace"], pod["metadata"]["namespace"]} == {"hetero-vision"}
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    assert "huawei.com/Ascend910" in limits, limits
    assert any(volume.get("secret", {}).get("secretName") == secret["metadata"]["name"] for volume in pod["spec"]["volumes"])


def test_every_template_renders_objects_kubernetes_accepts():
    catalog = load_catalog(DEFAULT_CATALOG_PATH)
    rendered = 0
    for template in catalog.templates:
        for flavor in template.flavors:
            for kernel in (False, True) if template.interactive else (False,):
                family = catalog.flavor(flavor).family.value
                asks = template.request.devices or template.request.device_milli
                refusal = ("has none" if asks and family == "cpu" else
                           "pods can have a share only of HAMi-shared NVIDIA GPUs"
                           if template.request.device_milli and family != "nvidia" else None)
                if refusal:  # placements the engine never makes on such nodes either
                    with pytest.raises(ValueError, match=refusal):
                        render(catalog, template.name, flavor_name=flavor, kernel=kernel)
                    continue
                for obj in render(catalog, template.name, flavor_name=flavor, kernel=kernel):
                    kubernetes_validate.validate(obj, KUBERNETES, strict=True)
                    rendered += 1
    assert rendered > 30


def test_a_share_of_a_gpu_renders_as_hamis_resources():
    [pod] = render(load_catalog(DEFAULT_CATALOG_PATH), "batch-inference")
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    assert {name for name in limits if name.startswith("nvidia.com/")} == {
        "nvidia.com/gpu", "nvidia.com/gpucores", "nvidia.com/gpumem"}, limits


@pytest.mark.parametrize(("args", "message"), [
    (["--template", "no-such"], "unknown template 'no-such'; known: data-preprocessing"),
    (["--template", "training", "--flavor", "t4"], "flavor 't4' is not eligible for template 'training'"),
    (["--template", "training", "--kernel"], "template 'training' does not run kernels"),
])
def test_a_wrong_name_is_a_clear_error(args, message):
    result = hetero("k8s", "render", *args)
    assert result.returncode == 1 and message in result.stderr, result.stderr
