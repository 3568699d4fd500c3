"""Matching on every capability a node declares and a template can ask for: frameworks and inference engines
with version ranges, what a runtime variant requires on the node, driver, runtime and firmware minimums, RDMA
and bandwidth, the interconnect and one fast-link domain for a replica's devices. Each mismatch waits with a
ranked, static blocker worded in English and Simplified Chinese."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from jupyter_hetero.capability import NodeCapability
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, Template, load_catalog
from jupyter_hetero.engine import Blocker, Engine, render
from jupyter_hetero.engine.blockers import STATIC_KINDS, STATIC_ORDER, static_blockers
from jupyter_hetero.engine.matching import Mismatch, mismatch
from jupyter_hetero.engine_inputs import NodeView, constraints_for, node_state
from jupyter_hetero.packages import unmet
from jupyter_hetero.units import compare_versions

from ..builders import job, node, snapshot, tenant

TEAM = tenant("vision").quota("a100-80g", devices=16).quota("ascend-910b", devices=16)


def _cycle(nodes, workload):
    return Engine().cycle(snapshot(nodes=nodes, pending=[workload], tenants=[TEAM]))


def a100(name: str = "a1"):
    return node(name).gpus(8).frameworks("torch==2.4.1", "transformers 4.44.0").engines("vllm 0.6.3")


def npu(name: str = "n1"):
    return node(name, "ascend-910b").gpus(8, 64, family="ascend", model="910B3", driver="24.1.rc2", runtime="8.0")


# (node, workload, English, Chinese): each node lacks one thing the workload asks for.
MISMATCHES = [
    pytest.param(a100(), job(1).gpus(1).needs(frameworks=("torch>=2.5",)),
                 "frameworks: template needs torch>=2.5, nodes of flavor a100-80g provide torch==2.4.1",
                 "框架：模板需要 torch>=2.5，规格 a100-80g 的节点提供 torch==2.4.1", id="framework below its range"),
    pytest.param(node("a1").gpus(1).frameworks("torch"), job(1).gpus(1).needs(frameworks=("torch>=2.3",)),
                 "frameworks: template needs torch>=2.3, nodes of flavor a100-80g provide torch (no version)",
                 "框架：模板需要 torch>=2.3，规格 a100-80g 的节点提供 torch (no version)",
                 id="a bare name meets no range"),
    pytest.param(a100(), job(1).gpus(1).needs(frameworks=("jax",)),
                 "frameworks: template needs jax, nodes of flavor a100-80g provide torch==2.4.1,transformers 4.44.0",
                 "框架：模板需要 jax，规格 a100-80g 的节点提供 torch==2.4.1,transformers 4.44.0", id="missing framework"),
    pytest.param(a100(), job(1).gpus(1).needs(inference_engines=("vllm>=0.7",)),
                 "inference engines: template needs vllm>=0.7, nodes of flavor a100-80g provide vllm 0.6.3",
                 "推理引擎：模板需要 vllm>=0.7，规格 a100-80g 的节点提供 vllm 0.6.3", id="inference engine too old"),
    pytest.param(a100(), job(1).gpus(1).needs(inference_engines=("sglang",)),
                 "inference engines: template needs sglang, nodes of flavor a100-80g provide vllm 0.6.3",
                 "推理引擎：模板需要 sglang，规格 a100-80g 的节点提供 vllm 0.6.3", id="missing inference engine"),
    pytest.param(npu().frameworks("torch 2.1.0", "torch_npu 2.1.0.post3"),
                 job(1).gpus(1).flavors("ascend-910b").needs(family="ascend", min_runtime="8.0",
                                                             requires=("torch-npu>=2.3",)),
                 "runtime: the template's runtime variant for flavor ascend-910b needs torch-npu>=2.3 on the node; "
                 "its nodes provide torch_npu 2.1.0.post3",
                 "运行时：模板适配规格 ascend-910b 的运行时变体需要节点提供 torch-npu>=2.3；这些节点提供 torch_npu 2.1.0.post3",
                 id="the variant requires a newer torch_npu"),
    pytest.param(npu().frameworks("torch_npu 2.4.0").engines("mindie 1.0.RC3"),
                 job(1).gpus(1).flavors("ascend-910b").needs(family="ascend", requires=("mindie>=1.0",)),
                 "runtime: the template's runtime variant for flavor ascend-910b needs mindie>=1.0 on the node; "
                 "its nodes provide mindie 1.0.RC3",
                 "运行时：模板适配规格 ascend-910b 的运行时变体需要节点提供 mindie>=1.0；这些节点提供 mindie 1.0.RC3",
                 id="a release candidate is below its release"),
    pytest.param(npu().frameworks("torch_npu 2.4.0").gpus(8, 64, family="ascend", model="910B3", runtime="7.0.0"),
                 job(1).gpus(1).flavors("ascend-910b").needs(family="ascend", min_runtime="cann 8.0",
                                                             requires=("torch_npu",)),
                 "runtime: template needs runtime >= cann 8.0, nodes of flavor ascend-910b have 7.0.0",
                 "运行时：模板需要运行时版本 >= cann 8.0，规格 ascend-910b 的节点为 7.0.0",
                 id="torch_npu on CANN below 8"),
    pytest.param(npu().firmware("7.1.0.5.220"), job(1).gpus(1).flavors("ascend-910b").needs(family="ascend",
                                                                                             min_firmware="7.3"),
                 "firmware: template needs firmware >= 7.3, nodes of flavor ascend-910b have 7.1.0.5.220",
                 "固件：模板需要固件版本 >= 7.3，规格 ascend-910b 的节点为 7.1.0.5.220", id="old firmware"),
    pytest.param(npu(), job(1).gpus(1).flavors("ascend-910b").needs(family="ascend", min_firmware="7.3"),
                 "firmware: template needs firmware >= 7.3, nodes of flavor ascend-910b have unknown",
                 "固件：模板需要固件版本 >= 7.3，规格 ascend-910b 的节点为 unknown", id="firmware not reported"),
    pytest.param(a100().network(rdma=False, gbps=100), job(1).gpus(1).needs(rdma=True),
                 "network: template needs RDMA, nodes of flavor a100-80g have none",
                 "网络：模板需要 RDMA，规格 a100-80g 的节点不支持 RDMA", id="no RDMA"),
    pytest.param(a100().network(rdma=True, gbps=25), job(1).gpus(1).needs(rdma=True, min_bandwidth_gbps=100),
                 "network: template needs 100 Gb/s or more, nodes of flavor a100-80g have 25 Gb/s",
                 "网络：模板需要至少 100 Gb/s 带宽，规格 a100-80g 的节点为 25 Gb/s", id="too little bandwidth"),
    pytest.param(a100().link_domain(4), job(1).gpus(8).needs(interconnect=("nvlink",)),
                 "interconnect: a replica needs 8 devices on one fast link (one NVLink, HCCS, xGMI or Xe Link domain); "
                 "the largest domain on nodes of flavor a100-80g has 4",
                 "互联：每个副本需要 8 张卡位于同一高速互联域（同一 NVLink、HCCS、xGMI 或 Xe Link 域）；规格 a100-80g 的节点上最大的互联域只有 4 张",
                 id="two NVLink islands of four for eight devices"),
    pytest.param(node("a1").gpus(4, interconnect="pcie"), job(1).gpus(4).needs(interconnect=("nvlink", "hccs")),
                 "interconnect: template needs nvlink|hccs, nodes of flavor a100-80g have pcie",
                 "互联：模板需要 nvlink|hccs，规格 a100-80g 的节点为 pcie", id="PCIe only"),
]


@pytest.mark.parametrize(("builder", "workload", "english", "chinese"), MISMATCHES)
def test_each_capability_that_does_not_match_waits_with_its_reason_in_both_languages(builder, workload, english,
                                                                                       chinese):
    decisions = _cycle([builder], workload.build())
    assert not decisions.admissions
    pending = decisions.pending[1]
    assert pending.inadmissible
    [blocker] = [b for b in pending.blockers if b.kind != "no-nodes"] or pending.blockers
    assert render(blocker, "en") == english
    assert render(blocker, "zh") == chinese


# (node, workload): the same capabilities, met.
MATCHES = [
    pytest.param(a100(), job(1).gpus(1).needs(frameworks=("torch>=2.3,<2.5", "transformers")), id="framework range"),
    pytest.param(node("a1").gpus(1).frameworks("pytorch 2.4.0"), job(1).gpus(1).needs(frameworks=("torch>=2.3",)),
                 id="pytorch is torch"),
    pytest.param(node("a1").gpus(1).frameworks("torch"), job(1).gpus(1).needs(frameworks=("torch",)),
                 id="a bare name meets a bare requirement"),
    pytest.param(a100(), job(1).gpus(1).needs(inference_engines=("vllm>=0.6",)), id="inference engine"),
    pytest.param(npu().frameworks("torch_npu 2.4.0").engines("mindie 1.0.0"),
                 job(1).gpus(1).flavors("ascend-910b").needs(family="ascend", min_runtime="8.0",
                                                             requires=("torch-npu>=2.1", "mindie>=1.0")),
                 id="torch_npu and MindIE on CANN 8"),
    pytest.param(npu().firmware("7.3.0.1.231"), job(1).gpus(1).flavors("ascend-910b").needs(family="ascend",
                                                                                             min_firmware="7.3"),
                 id="firmware"),
    pytest.param(a100().network(rdma=True, gbps=200), job(1).gpus(1).needs(rdma=True, min_bandwidth_gbps=100),
                 id="RDMA at 200 Gb/s"),
    pytest.param(a100().link_domain(4), job(1).gpus(4).needs(interconnect=("nvlink",)), id="four in one island of four"),
    pytest.param(a100().link_domain(4), job(1).gpus(8).needs(interconnect=("nvlink", "pcie")),
                 id="a template that accepts PCIe needs no single domain"),
    pytest.param(a100(), job(1).gpus(8).needs(interconnect=("nvlink",)),
                 id="no per-device links: the node's interconnect links all its devices"),
]


@pytest.mark.parametrize(("builder", "workload"), MATCHES)
def test_each_capability_that_matches_admits(builder, workload):
    assert [a.workload for a in _cycle([builder], workload.build()).admissions] == [1]


@pytest.mark.parametrize(
    ("version", "minimum", "order"),
    [
        pytest.param("12.4", "cuda 12.1", 1, id="CUDA: a product word on either side"),
        pytest.param("V12.4.131", "12.4", 1, id="CUDA: nvcc's build number"),
        pytest.param("8.0.RC2", "8.0", -1, id="CANN: a release candidate is below its release"),
        pytest.param("8.0.RC2.alpha003", "8.0.RC2", -1, id="CANN: an alpha of a release candidate"),
        pytest.param("8.0.0", "cann 8.0", 0, id="CANN: trailing zeros"),
        pytest.param("6.1.40093-bd86f1708", "6.1", 1, id="ROCm: a build and a commit"),
        pytest.param("rocm-6.0.2", "6.1", -1, id="ROCm: a package name"),
        pytest.param("1.3.29735", "1.3.26918", 1, id="level-zero driver"),
        pytest.param("level-zero 1.17.6", "1.9", 1, id="level-zero: numbers, not text"),
    ],
)
def test_vendor_runtime_versions_compare_as_numbers(version, minimum, order):
    assert compare_versions(version, minimum) == order


def test_static_blockers_rank_the_closest_to_lifted_first_and_below_every_blocker_of_time():
    decisions = _cycle([node("a1").gpus(8).frameworks("torch 2.1"), node("c1", "cpu-standard")],
                       job(1).gpus(1).flavors("cpu-standard", "a100-80g", "t4").needs(frameworks=("torch>=2.3",)).build())
    assert [b.kind for b in decisions.pending[1].blockers] == ["frameworks", "no-accelerator", "no-nodes"]
    closeness = [b.closeness for b in static_blockers("f", {kind: (Mismatch(kind, "x", "y"), 1) for kind in STATIC_ORDER
                                                            if kind != "no-nodes"})]
    assert closeness == sorted(closeness, reverse=True) and 0 < min(closeness) and max(closeness) < 0.05
    assert static_blockers("f", {})[0].closeness == 0
    for kind in STATIC_ORDER:  # every static kind has its sentence, not the fallback that prints the facts
        assert "{'" not in render(Blocker(kind, "f", {"need": "x", "have": "y", "nodes": 1}), "zh")


def test_the_snapshot_carries_every_capability_of_node_and_template():
    capability = NodeCapability.model_validate({
        "name": "dgx", "cpu": 128, "memory": "1Ti", "network": {"rdma": True, "bandwidth_gbps": 400},
        "frameworks": ["torch==2.4.1"],
        "accelerator": {"vendor": "nvidia", "model": "H100", "count": 8, "memory_mib": "80Gi", "runtime": "cuda 12.4",
                        "firmware_version": "96.00.74.00.01", "inference_engines": ["vllm 0.6.3", "sglang 0.3.0"],
                        "interconnect": "nvlink",
                        "devices": [{"index": i, "link_domain": "nvl-a" if i < 6 else "nvl-b"} for i in range(8)]},
    })
    state = node_state(NodeView(capability=capability, flavor="h100-80g", state="ready", first_seen=0, last_seen=0))
    assert (state.rdma, state.bandwidth_gbps, state.firmware, state.largest_link_domain) == (True, 400, "96.00.74.00.01", 6)
    assert state.inference_engines == {"vllm 0.6.3", "sglang 0.3.0"} and state.frameworks == {"torch==2.4.1"}
    unknown = capability.model_copy(update={"accelerator": capability.accelerator.model_copy(update={"devices": []})})
    assert node_state(NodeView(capability=unknown, flavor="h100-80g", state="ready", first_seen=0,
                               last_seen=0)).largest_link_domain is None

    template = Template.model_validate({**load_catalog(DEFAULT_CATALOG_PATH).template("hpc").model_dump(),
                                        "inference_engines": ["vllm>=0.6"], "frameworks": ["torch>=2.3"],
                                        "network": {"rdma": True, "min_bandwidth_gbps": 100}})
    constraints = constraints_for(template, ("nvidia",))
    assert (constraints.inference_engines, constraints.frameworks) == (("vllm>=0.6",), ("torch>=2.3",))
    assert (constraints.rdma, constraints.min_bandwidth_gbps, constraints.fast_link) == (True, 100, True)
    assert constraints == constraints_for(template, ("nvidia",)) and hash(constraints) == hash(constraints_for(template, ("nvidia",)))



def test_a_device_its_tool_calls_unhealthy_is_never_placed_on_and_one_only_warned_of_is():
    """As npu-smi said of a 910A server: NPU 1 in Warning (a general alarm) stays usable, NPU 2 in Critical does not."""
    capability = NodeCapability.model_validate({
        "name": "atlas", "cpu": 192, "memory": "768Gi",
        "accelerator": {"vendor": "ascend", "model": "910A", "count": 4, "memory_mib": 32768,
                        "devices": [{"index": i, "health": health} for i, health in
                                    enumerate([None, "Warning", "Critical", None])]},
    })
    state = node_state(NodeView(capability=capability, flavor="ascend-910b", state="ready", first_seen=0,
                                last_seen=0))
    assert [(d.free_milli, d.free_mem) for d in state.devices] == [(1000, 32768), (1000, 32768), (0, 0), (1000, 32768)]
    three, four = job(1).gpus(3).flavors("ascend-910b"), job(2).gpus(4).flavors("ascend-910b")
    decisions = Engine().cycle(snapshot(nodes=[state], pending=[four, three], tenants=[TEAM]))
    [admission] = decisions.admissions
    assert admission.workload == 1
    assert sorted(index for index, _milli, _mem in admission.placement.slots[0].devices) == [0, 1, 3]

# -- properties ----------------------------------------------------------------------------------

_releases = st.lists(st.integers(0, 12), min_size=1, max_size=4).map(lambda parts: ".".join(map(str, parts)))
_versions = st.tuples(_releases, st.sampled_from(["", "rc1", "a2", ".post1", ".dev3"])).map("".join)
_specifiers = st.lists(st.tuples(st.sampled_from(["==", "!=", ">=", "<=", ">", "<", "~="]), _releases),
                       min_size=1, max_size=3).map(lambda parts: ",".join(op + v for op, v in parts
                                                                          if op != "~=" or "." in v) or ">=0")


@given(version=_versions, specifier=_specifiers, spelling=st.sampled_from(["torch=={}", "torch {}", "pytorch {}"]))
def test_version_ranges_agree_with_packaging(version, specifier, spelling):
    expected = SpecifierSet(specifier).contains(Version(version), prereleases=True)
    assert (unmet((f"torch{specifier}",), frozenset({spelling.format(version)})) is None) == expected


_names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


@given(extra=st.lists(st.tuples(_names, _releases), max_size=6), engines=st.lists(_names, max_size=4))
def test_a_node_that_matches_still_matches_with_unrelated_frameworks_and_engines(extra, engines):
    constraints = job(1).gpus(1).needs(frameworks=("torch>=2.3",), inference_engines=("vllm>=0.6",)).build()
    built = a100().build()
    assert mismatch(built, constraints.request, constraints.constraints) is None
    unrelated = [(name, v) for name, v in extra if name not in ("torch", "pytorch", "vllm")]
    built.frameworks = built.frameworks | {f"{name} {v}" for name, v in unrelated}
    built.inference_engines = built.inference_engines | {n for n in engines if n != "vllm"}
    assert mismatch(built, constraints.request, constraints.constraints) is None


@given(largest=st.integers(1, 8), devices=st.integers(2, 8))
def test_a_replica_that_needs_a_fast_link_matches_only_a_domain_that_holds_all_its_devices(largest, devices):
    workload = job(1).gpus(devices).needs(interconnect=("nvlink", "xgmi")).build()
    found = mismatch(a100().link_domain(largest).build(), workload.request, workload.constraints)
    assert (found is None) == (largest >= devices)
    assert found is None or found.kind == "link-domain" and found.kind in STATIC_KINDS
