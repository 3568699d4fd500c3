"""The catalog: the shipped default, flavor mapping, and validation that lists every error."""

from __future__ import annotations

import copy

import pytest
import yaml
from pydantic import ValidationError

from jupyter_hetero.capability import Accelerator, NodeCapability
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, CatalogError, LabelRequirement, load_catalog, parse_catalog

TEMPLATES = [
    "data-preprocessing", "training", "fine-tuning", "online-inference", "batch-inference",
    "embedding", "vision", "hpc", "interactive",
]


@pytest.fixture(scope="module")
def default_catalog():
    return load_catalog(DEFAULT_CATALOG_PATH)


@pytest.fixture
def raw():
    return yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))


def test_default_catalog_has_the_named_templates_and_queues(default_catalog):
    assert [t.name for t in default_catalog.templates] == TEMPLATES
    assert {q.name for q in default_catalog.queues} == {"experiment", "training", "inference", "urgent", "batch"}
    assert {q.queue_class.value for q in default_catalog.queues} == {"experiment", "training", "inference", "urgent", "batch"}
    assert default_catalog.queue("inference").reserved
    assert default_catalog.default_tenant == "default"


def test_every_template_is_complete_and_bilingual(default_catalog):
    for template in default_catalog.templates:
        assert template.display.en and template.display.zh != template.display.en or template.display.zh
        assert template.description.zh and template.description.en
        assert template.flavors and template.variants and template.metrics and template.parameters
        assert default_catalog.queue(template.queue) is not None
        for flavor in template.flavors:
            assert template.variant_for(default_catalog.flavor(flavor).family) is not None, (template.name, flavor)


def test_default_flavors_cover_cpu_nvidia_ascend_amd(default_catalog):
    families = {f.family.value for f in default_catalog.flavors}
    assert families == {"cpu", "nvidia", "ascend", "amd"}
    names = {f.name for f in default_catalog.flavors}
    assert {"a100-80g", "h100-80g", "t4", "ascend-910b", "ascend-310p", "amd-mi300", "cpu-standard"} <= names


def _gpu_node(model: str, memory: str, vendor: str = "nvidia", **labels) -> NodeCapability:
    return NodeCapability(
        name="n", cpu_milli=8000, memory_mib=65536, labels=labels,
        accelerator=Accelerator(vendor=vendor, model=model, count=1, memory_mib=memory),
    )


@pytest.mark.parametrize(
    ("node", "flavor"),
    [
        pytest.param(_gpu_node("A100-SXM4-80GB", "80Gi"), "a100-80g", id="A100 80G"),
        pytest.param(_gpu_node("A100-PCIE-40GB", "40Gi"), "a100-40g", id="A100 40G"),
        pytest.param(_gpu_node("H200", "141Gi"), "h100-80g", id="H200 joins the Hopper flavor"),
        pytest.param(_gpu_node("Tesla T4", "16Gi"), "t4", id="T4"),
        pytest.param(_gpu_node("GeForce RTX 4090", "24Gi"), "nvidia-gpu", id="unlisted NVIDIA falls back"),
        pytest.param(_gpu_node("910B3", "64Gi", vendor="ascend"), "ascend-910b", id="Ascend 910B"),
        pytest.param(_gpu_node("310P3", "24Gi", vendor="huawei"), "ascend-310p", id="huawei vendor means ascend"),
        pytest.param(_gpu_node("AMD Instinct MI300X", "192Gi", vendor="amd"), "amd-mi300", id="MI300X"),
        pytest.param(NodeCapability(name="c", cpu_milli=4000, memory_mib=8192), "cpu-standard", id="CPU only"),
    ],
)
def test_nodes_map_to_the_first_matching_flavor(default_catalog, node, flavor):
    assert default_catalog.flavor_of(node).name == flavor


@pytest.mark.parametrize(
    ("requirement", "labels", "matches"),
    [
        (LabelRequirement(key="zone", operator="In", values=["a", "b"]), {"zone": "a"}, True),
        (LabelRequirement(key="zone", operator="In", values=["a"]), {"zone": "c"}, False),
        (LabelRequirement(key="zone", operator="NotIn", values=["a"]), {"zone": "c"}, True),
        (LabelRequirement(key="zone", operator="NotIn", values=["a"]), {}, True),
        (LabelRequirement(key="rdma", operator="Exists"), {"rdma": ""}, True),
        (LabelRequirement(key="rdma", operator="DoesNotExist"), {"rdma": ""}, False),
        (LabelRequirement(key="gen", operator="Gt", values=["7"]), {"gen": "8"}, True),
        (LabelRequirement(key="gen", operator="Gt", values=["7"]), {"gen": "x"}, False),
        (LabelRequirement(key="gen", operator="Lt", values=["7"]), {}, False),
    ],
)
def test_label_requirements(requirement, labels, matches):
    assert requirement.matches(labels) is matches


@pytest.mark.parametrize(
    ("operator", "values", "message"),
    [
        pytest.param("In", [], "operator In needs at least one value", id="In without values"),
        pytest.param("NotIn", [], "operator NotIn needs at least one value", id="NotIn without values"),
        pytest.param("Exists", ["yes"], "operator Exists takes no values", id="Exists with a value"),
        pytest.param("DoesNotExist", ["no"], "operator DoesNotExist takes no values", id="DoesNotExist with a value"),
        pytest.param("Gt", ["7", "8"], "operator Gt needs exactly one value", id="Gt with two values"),
        pytest.param("Lt", [], "operator Lt needs exactly one value", id="Lt without a value"),
        pytest.param("Gt", ["seven"], "operator Gt needs a number, not 'seven'", id="Gt with a word"),
    ],
)
def test_label_requirement_values_must_fit_the_operator(operator, values, message):
    with pytest.raises(ValidationError) as info:
        LabelRequirement(key="gen", operator=operator, values=values)
    assert [error["msg"] for error in info.value.errors()] == [f"Value error, {message}"]


def _issues(data) -> list[str]:
    with pytest.raises(CatalogError) as info:
        parse_catalog(yaml.safe_dump(data, allow_unicode=True), source="bad.yaml")
    return [str(issue) for issue in info.value.issues]


def test_every_error_is_listed_with_its_yaml_path(raw):
    bad = copy.deepcopy(raw)
    bad["templates"][2]["request"]["memory"] = "lots"          # fine-tuning
    bad["templates"][1]["flavors"].append("tpu-v5")            # training
    bad["queues"][0]["priority"] = "high"                      # urgent
    bad["tenants"][0]["quotas"]["quantum"] = {"nominal": {"devices": 1}}
    bad["templates"][0]["colour"] = "blue"                     # data-preprocessing
    issues = _issues(bad)
    assert any(i.startswith("templates[2](fine-tuning).request.memory") and "lots" in i for i in issues)
    assert any(i.startswith("templates[1](training).flavors[6]") and "tpu-v5" in i for i in issues)
    assert any(i.startswith("queues[0](urgent).priority") for i in issues)
    assert any(i.startswith("tenants[0](default).quotas.quantum") for i in issues)
    assert any(i.startswith("templates[0](data-preprocessing).colour") for i in issues)
    assert len(issues) == 5


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda d: d["queues"].append(copy.deepcopy(d["queues"][0])), "queues: name 'urgent' is used 2 times",
                     id="duplicate queue"),
        pytest.param(lambda d: d["templates"][0].update(queue="nowhere"), "templates[0](data-preprocessing).queue: unknown queue 'nowhere'",
                     id="template names unknown queue"),
        pytest.param(lambda d: d["queues"][1]["preemption"]["may_preempt"].append("vip"),
                     "queues[1](inference).preemption.may_preempt[2]: unknown queue 'vip'", id="preempts unknown queue"),
        pytest.param(lambda d: d["templates"][0]["flavors"].append("t4"),
                     "templates[0](data-preprocessing).flavors[1]: flavor 't4' is nvidia but the template has no nvidia variant",
                     id="flavor without a runtime variant"),
        pytest.param(lambda d: d["templates"][1]["parameters"][0].update(default=99),
                     "templates[1](training).parameters[0].default: 99 is outside [1, 8]", id="default outside bounds"),
        pytest.param(lambda d: d.update(default_tenant="ghosts"), "default_tenant: unknown tenant 'ghosts'", id="unknown default tenant"),
        pytest.param(lambda d: d["templates"][2]["request"].update(device_milli=500),
                     "templates[2](fine-tuning).request: Value error, ask for whole devices or a device fraction",
                     id="whole and fractional devices at once"),
        pytest.param(lambda d: d["templates"][3].update(inference_engines=["vllm 0.6"]),
                     "templates[3](online-inference).inference_engines[0]: Value error, 'vllm 0.6' is not a requirement "
                     "such as 'torch' or 'torch>=2.3'", id="a version without an operator"),
        pytest.param(lambda d: d["templates"][1].update(frameworks=["torch[cuda]>=2.3"]),
                     "templates[1](training).frameworks[0]: Value error, 'torch[cuda]>=2.3': a requirement here is a "
                     "name and a version range", id="a requirement with extras"),
        pytest.param(lambda d: d["templates"][1]["variants"][1].update(requires=["torch_npu>=>2"]),
                     "templates[1](training).variants[1].requires[0]: Value error, 'torch_npu>=>2' is not a requirement",
                     id="a variant's requirement that does not parse"),
        pytest.param(lambda d: d["templates"][7].update(network={"rdma": True, "min_bandwidth_gbps": -1}),
                     "templates[7](hpc).network.min_bandwidth_gbps", id="negative bandwidth"),
    ],
)
def test_reference_and_rule_errors(raw, mutate, expected):
    mutate(raw)
    assert any(issue.startswith(expected) for issue in _issues(raw)), _issues(raw)


def test_yaml_syntax_errors_have_a_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("flavors: [\n  - name: x\n", encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    assert "line" in info.value.issues[0].path


def test_unreadable_file_is_a_catalog_error(tmp_path):
    with pytest.raises(CatalogError, match="cannot read file"):
        load_catalog(tmp_path / "missing.yaml")
