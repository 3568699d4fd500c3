"""Nodes as the API sends them, read as capability records: realistic label sets, bad ones, pods' requests."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jupyter_hetero.backends.kubernetes.nodes import (
    NodeReading,
    Requests,
    pod_requests,
    read_node,
)
from jupyter_hetero.capability import AcceleratorFamily, Held, family_of
from jupyter_hetero.catalog.loader import load_catalog

NODES = Path(__file__).parents[2] / "data" / "kubernetes" / "nodes"
CATALOG = Path(__file__).parents[3] / "jupyter_hetero" / "catalog" / "default_catalog.yaml"


def node(name: str) -> dict:
    return yaml.safe_load((NODES / f"{name}.yaml").read_text())


def gpu(vendor, model, count, memory, resource, *, driver=None, runtime=None, interconnect="pcie", sharing="whole"):
    return {"vendor": vendor, "model": model, "count": count, "memory_mib": memory, "driver_version": driver,
            "runtime": runtime, "interconnect": interconnect, "sharing": sharing, "frameworks": [],
            "inference_engines": [], "resource": resource, "firmware_version": None, "devices": []}


def no_runtime(name, vendor):
    return (f"node {name}: no label gives its {vendor} runtime version, so templates that need a minimum runtime "
            f"will not match it; set hetero.jupyter.org/accelerator.runtime (e.g. 'cann 8.0', 'rocm 6.1')")


# file -> (cpu_milli, memory_mib, arch, rdma, accelerator, schedulable, findings); memory is allocatable Ki // 1024.
EXPECTED = {
    "dgx-a100": (254500, 2051780, "x86_64", True,
                 gpu("nvidia", "A100-SXM4-80GB", 8, 81920, "nvidia.com/gpu", driver="535.161.08",
                     runtime="cuda 12.2", interconnect="nvlink"), True, []),
    "h100": (222000, 2049520, "x86_64", True,
             gpu("nvidia", "H100-80GB-HBM3", 8, 81559, "nvidia.com/gpu", driver="550.54.15", runtime="cuda 12.4",
                 interconnect="nvlink"), True, []),
    "t4-old-gfd": (31800, 191857, "x86_64", False,
                   gpu("nvidia", "Tesla T4", 1, 15109, "nvidia.com/gpu", driver="450.80.02", runtime="cuda 11.0"),
                   True, []),
    "mig-mixed-a100": (255000, 1021454, "x86_64", False,
                       gpu("nvidia", "A100-SXM4-40GB MIG 1g.5gb", 28, 4864, "nvidia.com/mig-1g.5gb",
                           driver="535.129.03", runtime="cuda 12.2", interconnect="none"), True,
                       [("node a100-mig-mixed-02 offers several kinds of NVIDIA device; scheduling uses "
                        "nvidia.com/mig-1g.5gb=28 and ignores nvidia.com/mig-3g.20gb=4, nvidia.com/gpu=2")]),
    "mig-single-a100": (255000, 2053728, "x86_64", False,
                        gpu("nvidia", "A100-SXM4-80GB MIG 1g.10gb", 56, 9728, "nvidia.com/gpu", driver="550.90.07",
                            runtime="cuda 12.4", interconnect="none"), True, []),
    "hami-shared": (63000, 505237, "x86_64", False,
                    gpu("nvidia", "A10", 4, 23028, "nvidia.com/gpu", driver="535.104.05", runtime="cuda 12.2",
                        sharing="milli"), True, []),
    "amd-mi300x": (255000, 2053550, "x86_64", True,
                   gpu("amd", "AMD Instinct MI300X", 8, 196608, "amd.com/gpu", driver="6.8.5", interconnect="xgmi"),
                   True, [no_runtime("mi300x-02", "amd")]),
    "intel-max": (222000, 1021422, "x86_64", True,
                  gpu("intel", "Max 1550", 8, 131072, "gpu.intel.com/i915"), True, [no_runtime("pvc-max-01", "intel")]),
    "ascend-910b": (190000, 1537840, "aarch64", True,
                    gpu("ascend", "910B3", 8, 65536, "huawei.com/Ascend910", interconnect="hccs"), True,
                    [no_runtime("atlas-800t-a2-09", "ascend")]),
    "ascend-310p": (95000, 375244, "x86_64", False,
                    gpu("ascend", "310P3", 8, 24576, "huawei.com/Ascend310P"), True,
                    [no_runtime("atlas-300i-duo-04", "ascend")]),
    "cambricon-mlu": (127000, 505237, "x86_64", False,
                      gpu("cambricon", "MLU370-X8", 8, 0, "cambricon.com/mlu"), True,
                      [("node mlu370-01 offers cambricon.com/mlu but no label gives device memory; "
                       "set hetero.jupyter.org/accelerator.memory"), no_runtime("mlu370-01", "cambricon")]),
    "hygon-dcu": (127000, 505237, "x86_64", False,
                  gpu("hygon", "unknown", 8, 0, "hygon.com/dcu"), True,
                  [("node dcu-z100-02 offers hygon.com/dcu but no label names the model; "
                   "set hetero.jupyter.org/accelerator.model"),
                   ("node dcu-z100-02 offers hygon.com/dcu but no label gives device memory; "
                   "set hetero.jupyter.org/accelerator.memory"), no_runtime("dcu-z100-02", "hygon")]),
    "cpu-only": (63500, 514553, "x86_64", False, None, True, []),
    "cordoned": (31000, 127743, "x86_64", False, None, False,
                 ["node cpu-worker-22 is cordoned (spec.unschedulable)",
                  ("node cpu-worker-22 has taint node.kubernetes.io/unschedulable=:NoSchedule, "
                  "which our pods do not tolerate")]),
    "notready": (255000, 2053728, "x86_64", False,
                 gpu("nvidia", "A100-SXM4-80GB", 8, 81920, "nvidia.com/gpu", driver="535.161.08", runtime="cuda 12.2",
                     interconnect="nvlink"), False,
                 ["node a100-lost-04 is not Ready (NodeStatusUnknown: Kubelet stopped posting node status.)",
                  "node a100-lost-04 has taint node.kubernetes.io/unreachable=:NoSchedule, which our pods do not tolerate",
                  "node a100-lost-04 has taint node.kubernetes.io/unreachable=:NoExecute, which our pods do not tolerate"]),
    "tainted-l4": (23830, 89614, "x86_64", False,
                   gpu("nvidia", "L4", 2, 23034, "nvidia.com/gpu", driver="550.90.07", runtime="cuda 12.4"), False,
                   ["node l4-pool-3 has taint nvidia.com/gpu=present:NoSchedule, which our pods do not tolerate"]),
}

# What a platform team expects the shipped catalog to make of each node (None: no flavor takes it yet).
FLAVORS = {
    "dgx-a100": "a100-80g", "h100": "h100-80g", "t4-old-gfd": "t4", "mig-mixed-a100": "a100-40g",
    "mig-single-a100": "a100-40g", "hami-shared": "l40s", "amd-mi300x": "amd-mi300", "intel-max": None,
    "ascend-910b": "ascend-910b", "ascend-310p": "ascend-310p", "cambricon-mlu": None, "hygon-dcu": None,
    "cpu-only": "cpu-standard", "cordoned": "cpu-standard", "notready": "a100-80g", "tainted-l4": "l40s",
}


def test_every_data_file_is_checked_and_names_its_source():
    files = {path.stem for path in NODES.glob("*.yaml")}
    assert files == EXPECTED.keys() == FLAVORS.keys()
    for path in NODES.glob("*.yaml"):
        assert path.read_text().startswith("# source: "), path.name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_realistic_node_reads_as_its_whole_capability(name):
    raw = node(name)
    cpu, memory, arch, rdma, accelerator, schedulable, findings = EXPECTED[name]
    reading = read_node(raw)
    assert reading.capability is not None
    assert reading.capability.model_dump() == {
        "name": raw["metadata"]["name"], "cpu_milli": cpu, "memory_mib": memory, "arch": arch,
        "labels": raw["metadata"]["labels"], "accelerator": accelerator,
        "network": {"rdma": rdma, "bandwidth_gbps": 10}, "frameworks": [], "emulated": False,
        "source": "kubernetes", "notes": findings,
    }
    assert (reading.name, reading.schedulable, list(reading.findings)) == (raw["metadata"]["name"], schedulable, findings)
    assert reading.taints == tuple(raw["spec"].get("taints", ()))


@pytest.mark.parametrize("name", sorted(FLAVORS))
def test_the_shipped_catalog_maps_each_realistic_node_to_its_flavor(name):
    catalog = load_catalog(CATALOG)
    capability = read_node(node(name)).capability
    flavor = catalog.flavor_of(capability)
    assert (flavor.name if flavor else None) == FLAVORS[name]


@pytest.mark.parametrize(("vendor", "family"), [
    ("nvidia", AcceleratorFamily.NVIDIA), ("amd", AcceleratorFamily.AMD), ("intel", AcceleratorFamily.INTEL),
    ("ascend", AcceleratorFamily.ASCEND), ("cambricon", AcceleratorFamily.CAMBRICON), ("hygon", AcceleratorFamily.HYGON),
])
def test_vendor_names_give_their_family(vendor, family):
    names = {n: EXPECTED[n][4]["vendor"] for n in EXPECTED if EXPECTED[n][4]}
    assert vendor in names.values()
    assert family_of(vendor) is family


def test_pods_we_did_not_place_are_held_beside_what_the_node_offers():
    # The capability stays the node's (a placement's devices never vanish because another pod came); what
    # other pods hold is reported beside it, for the engine to count as taken.
    foreign = Requests(cpu_milli=4000, memory_mib=16384, extended={"nvidia.com/gpu": 3})
    reading = read_node(node("dgx-a100"), foreign=foreign)
    assert (reading.capability.cpu_milli, reading.capability.accelerator.count) == (254500, 8)
    assert reading.held == Held(cpu_milli=4000, memory_mib=16384, device_milli=3000)
    # MIG: only the slices of the profile in use count; HAMi: a GPU whose cores are all held is taken.
    mig = read_node(node("mig-mixed-a100"), foreign=Requests(extended={"nvidia.com/mig-1g.5gb": 8, "nvidia.com/gpu": 2}))
    assert mig.held.devices == 8
    hami = read_node(node("hami-shared"), foreign=Requests(extended={"nvidia.com/gpu": 5, "nvidia.com/gpucores": 250}))
    assert hami.held.devices == 2


def test_a_node_whose_devices_other_pods_hold_stays_with_a_finding():
    reading = read_node(node("t4-old-gfd"), foreign=Requests(extended={"nvidia.com/gpu": 1}))
    assert reading.capability.accelerator.count == 1 and reading.held.devices == 1
    assert "node t4-infer-03: pods we did not place hold all 1 nvidia.com/gpu devices" in reading.findings


def test_more_foreign_requests_than_allocatable_hold_everything_and_a_finding():
    reading = read_node(node("cpu-only"), foreign=Requests(cpu_milli=70000, memory_mib=10))
    assert reading.held.cpu_milli == reading.capability.cpu_milli
    assert "node cpu-worker-21: pods we did not place ask for more than it has allocatable" in reading.findings


def test_tolerated_taints_keep_a_node_schedulable():
    tainted = node("tainted-l4")
    assert read_node(tainted, tolerated=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]).schedulable
    assert read_node(tainted, tolerated=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}]).schedulable
    assert read_node(tainted, tolerated=[{"operator": "Exists"}]).schedulable
    assert not read_node(tainted, tolerated=[{"key": "nvidia.com/gpu", "value": "absent"}]).schedulable
    assert not read_node(tainted, tolerated=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]).schedulable
    # A PreferNoSchedule taint never keeps our pods away.
    soft = copy.deepcopy(tainted)
    soft["spec"]["taints"][0]["effect"] = "PreferNoSchedule"
    assert read_node(soft).schedulable


def edited(name: str, *, labels: dict | None = None, drop: tuple[str, ...] = (), allocatable: dict | None = None,
           annotations: dict | None = None) -> dict:
    raw = node(name)
    for key in drop:
        raw["metadata"]["labels"].pop(key, None)
    raw["metadata"]["labels"].update(labels or {})
    raw["metadata"].setdefault("annotations", {}).update(annotations or {})
    raw["status"]["allocatable"].update(allocatable or {})
    return raw


@pytest.mark.parametrize(("raw", "finding", "model"), [
    pytest.param(edited("dgx-a100", drop=("nvidia.com/gpu.product",)),
                 "node dgx-a100-01 offers nvidia.com/gpu but has no nvidia.com/gpu.product label", "unknown",
                 id="nvidia.com/gpu allocatable without a product label"),
    pytest.param(edited("dgx-a100", allocatable={"nvidia.com/gpu": "7"}),
                 "node dgx-a100-01 label nvidia.com/gpu.count=8 but nvidia.com/gpu=7 is allocatable; using 7",
                 "A100-SXM4-80GB", id="label count against allocatable"),
    pytest.param(edited("dgx-a100", allocatable={"amd.com/gpu": "2"}),
                 "node dgx-a100-01 offers devices of more than one vendor; scheduling uses nvidia and ignores amd.com/gpu=2",
                 "A100-SXM4-80GB", id="two vendors' devices on one node"),
    pytest.param(edited("dgx-a100", labels={"nvidia.com/gpu.memory": "80GB"}),
                 "node dgx-a100-01 label nvidia.com/gpu.memory='80GB' is not a whole number",
                 "A100-SXM4-80GB", id="memory label not a number"),
    pytest.param(edited("amd-mi300x", labels={"amd.com/gpu.vram": "lots"}),
                 "node mi300x-02 label amd.com/gpu.vram='lots' is not a size such as '192G'",
                 "AMD Instinct MI300X", id="AMD vram not a size"),
    pytest.param(edited("mig-mixed-a100", drop=("nvidia.com/mig-1g.5gb.memory",)),
                 "node a100-mig-mixed-02 has no nvidia.com/mig-1g.5gb.memory label; device memory taken from the profile name",
                 "A100-SXM4-40GB MIG 1g.5gb", id="MIG profile without a memory label"),
    pytest.param(edited("ascend-910b", drop=("node.kubernetes.io/npu.chip.name",)),
                 "node atlas-800t-a2-09 has no node.kubernetes.io/npu.chip.name label; model '910' from huawei.com/Ascend910",
                 "910", id="Ascend without a chip name"),
    pytest.param(edited("intel-max", drop=("gpu.intel.com/product",)),
                 "node pvc-max-01 has no gpu.intel.com/product label; model 'device 0bd5' from its PCI device id",
                 "device 0bd5", id="Intel GPU without a product label"),
    pytest.param(edited("dgx-a100", allocatable={"nvidia.com/gpu": "two"}),
                 "node dgx-a100-01 resource nvidia.com/gpu: quantity 'two' is not a Kubernetes quantity such as "
                 "'500m', '16Gi' or '1e3'", None, id="a device resource that is not a quantity"),
])
def test_unlabelled_and_contradictory_nodes_are_findings(raw, finding, model):
    reading = read_node(raw)
    assert finding in reading.findings
    assert finding in reading.capability.notes
    accelerator = reading.capability.accelerator
    assert (accelerator.model if accelerator else None) == model


def test_devices_the_labels_show_but_no_plugin_offers_are_a_finding():
    raw = edited("dgx-a100")
    del raw["status"]["allocatable"]["nvidia.com/gpu"]
    reading = read_node(raw)
    assert reading.capability.accelerator is None
    assert ("node dgx-a100-01 has nvidia devices in its labels but offers none of nvidia.com/gpu; "
            "is the device plugin running?") in reading.findings


def test_site_labels_fill_what_a_vendor_does_not_publish():
    raw = edited("ascend-910b", labels={"hetero.jupyter.org/accelerator.runtime": "cann 8.0",
                                        "hetero.jupyter.org/accelerator.driver": "24.1.rc2",
                                        "hetero.jupyter.org/accelerator.memory": "64Gi"})
    accelerator = read_node(raw).capability.accelerator
    assert (accelerator.runtime, accelerator.driver_version, accelerator.memory_mib) == ("cann 8.0", "24.1.rc2", 65536)
    assert read_node(raw).findings == ()


def test_a_hami_node_without_gpu_feature_discovery_reads_its_register_annotation():
    raw = edited("hami-shared", drop=tuple(k for k in node("hami-shared")["metadata"]["labels"] if k.startswith("nvidia.com/")))
    accelerator = read_node(raw).capability.accelerator
    assert (accelerator.model, accelerator.count, accelerator.memory_mib, accelerator.sharing) == ("A10", 4, 23028, "milli")



def test_a_gpu_hami_registers_as_unhealthy_is_not_counted():
    register = node("hami-shared")["metadata"]["annotations"]["hami.io/node-nvidia-register"]
    fourth = register.rstrip(":").split(":")[3]
    raw = edited("hami-shared", annotations={"hami.io/node-nvidia-register": register.replace(
        fourth, fourth.removesuffix(",true") + ",false")})
    reading = read_node(raw)
    assert reading.capability.accelerator.count == 3
    assert "node a10-shared-11: HAMi registers 1 of its GPUs as unhealthy; scheduling counts 3" in reading.findings

def test_hami_resources_in_allocatable_mark_a_shared_gpu_node():
    raw = edited("t4-old-gfd", allocatable={"nvidia.com/gpu": "10", "nvidia.com/gpumem": "15109",
                                            "nvidia.com/gpucores": "100"})
    accelerator = read_node(raw).capability.accelerator
    assert (accelerator.count, accelerator.sharing, accelerator.resource) == (1, "milli", "nvidia.com/gpu")


def test_time_sliced_gpus_count_physical_devices_with_a_finding():
    raw = edited("dgx-a100", labels={"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing",
                                     "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-SHARED"},
                 allocatable={"nvidia.com/gpu": "32"})
    reading = read_node(raw)
    assert (reading.capability.accelerator.count, reading.capability.accelerator.model) == (8, "A100-SXM4-80GB")
    assert any("4 replicas (time-slicing)" in f for f in reading.findings)


@pytest.mark.parametrize(("raw", "finding"), [
    pytest.param({"metadata": {"name": "n"}, "status": {"allocatable": {"memory": "1Gi"}}},
                 "node n reports no allocatable cpu; it cannot be used", id="no cpu"),
    pytest.param({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "x", "memory": "1Gi"}}},
                 "node n allocatable: quantity 'x' is not a Kubernetes quantity such as '500m', '16Gi' or '1e3'; "
                 "it cannot be used", id="cpu not a quantity"),
    pytest.param({"status": {"allocatable": {"cpu": "1", "memory": "1Gi"}}},
                 "a node without metadata.name cannot be used", id="no name"),
])
def test_an_unusable_node_has_no_capability_and_says_why(raw, finding):
    reading = read_node(raw)
    assert reading.capability is None and not reading.schedulable
    assert finding in reading.findings


def test_capacity_stands_in_for_a_missing_allocatable():
    raw = node("cpu-only")
    del raw["status"]["allocatable"]
    reading = read_node(raw)
    assert reading.capability.cpu_milli == 64000
    assert "node cpu-worker-21 reports no status.allocatable; using status.capacity" in reading.findings


def container(requests=None, limits=None, **extra) -> dict:
    return {"name": "c", "resources": {"requests": requests or {}, "limits": limits or {}}, **extra}


def test_pod_requests_follow_the_schedulers_rule():
    pod = {"spec": {
        "containers": [container({"cpu": "500m", "memory": "1Gi"}), container({"cpu": "1"}, {"nvidia.com/gpu": "2"})],
        "initContainers": [
            container({"cpu": "4", "memory": "512Mi"}),                       # alone: 4 CPU beats 1.5
            container({"memory": "256Mi"}, restartPolicy="Always"),          # a sidecar: added throughout
            container({"memory": "2Gi"}),                                    # with the sidecar: 2304Mi
        ],
        "overhead": {"cpu": "100m", "memory": "64Mi"},
    }}
    assert pod_requests(pod) == Requests(cpu_milli=4100, memory_mib=2304 + 64, extended={"nvidia.com/gpu": 2})


def test_limits_stand_in_for_missing_requests_and_finished_pods_ask_nothing():
    pod = {"spec": {"containers": [container(limits={"cpu": "2", "memory": "1000Ki", "amd.com/gpu": "1"})]}}
    assert pod_requests(pod) == Requests(cpu_milli=2000, memory_mib=1, extended={"amd.com/gpu": 1})
    pod["status"] = {"phase": "Succeeded"}
    assert pod_requests(pod) == Requests()
    assert pod_requests({}) == Requests()


def test_requests_add_up():
    total = Requests(1000, 10, {"nvidia.com/gpu": 1}) + Requests(500, 5, {"nvidia.com/gpu": 2, "amd.com/gpu": 1})
    assert total == Requests(1500, 15, {"nvidia.com/gpu": 3, "amd.com/gpu": 1})


_KEYS = st.sampled_from([
    "nvidia.com/gpu.product", "nvidia.com/gpu.memory", "nvidia.com/gpu.count", "nvidia.com/gpu.replicas",
    "nvidia.com/gpu.sharing-strategy", "nvidia.com/mig.strategy", "nvidia.com/mig-1g.5gb.memory",
    "nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.runtime.major", "amd.com/gpu.product-name",
    "amd.com/gpu.vram", "gpu.intel.com/memory.max", "gpu.intel.com/device.count", "gpu.intel.com/device-id.0380-0bd5.present",
    "gpu.intel.com/product", "accelerator", "node.kubernetes.io/npu.chip.name", "accelerator-type", "gpu",
    "feature.node.kubernetes.io/pci-0302_10de.present", "feature.node.kubernetes.io/rdma.available",
    "kubernetes.io/arch", "hetero.jupyter.org/accelerator.memory", "cambricon.com/mlu.model",
]) | st.text(max_size=12)
_RESOURCES = st.sampled_from([
    "cpu", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-", "nvidia.com/gpumem",
    "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe", "huawei.com/Ascend910", "huawei.com/Ascend310P",
    "cambricon.com/mlu", "hygon.com/dcu",
]) | st.text(max_size=12)
_VALUES = st.one_of(st.sampled_from(["0", "1", "8", "500m", "16Gi", "1e3", "-1", "1.5", "192G", "true", "", "1e999", "\u00b2"]),
                    st.text(max_size=8), st.integers(-10, 10**6), st.none(), st.booleans(), st.floats(allow_nan=True))
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(labels=st.dictionaries(_KEYS, _VALUES, max_size=8), allocatable=st.dictionaries(_RESOURCES, _VALUES, max_size=6),
       annotations=st.dictionaries(st.sampled_from(["hami.io/node-nvidia-register", "x"]), _VALUES, max_size=2),
       spec=st.dictionaries(st.sampled_from(["taints", "unschedulable"]), _JSON, max_size=2), conditions=_JSON, foreign=st.dictionaries(_RESOURCES, st.integers(0, 100), max_size=3))
@example(labels={"nvidia.com/gpu.count": "\u00b2"}, allocatable={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
         annotations={}, spec={}, conditions=[], foreign={})  # a digit to str.isdigit, not to int()
def test_read_node_never_raises_on_a_strange_node(labels, allocatable, annotations, spec, conditions, foreign):
    raw = {"metadata": {"name": "n", "labels": labels, "annotations": annotations}, "spec": spec,
           "status": {"allocatable": allocatable, "conditions": conditions}}
    reading = read_node(raw, foreign=Requests(extended=foreign))
    assert isinstance(reading, NodeReading)
    assert all(isinstance(finding, str) for finding in reading.findings)
    # Strange values are findings of their own, not the last-resort "could not be read".
    assert not any("could not be read" in finding for finding in reading.findings), reading.findings
    if reading.capability is not None and reading.capability.accelerator is not None:
        assert reading.capability.accelerator.count >= 1


@given(_JSON)
def test_read_node_never_raises_on_any_json(raw):
    assert isinstance(read_node(raw), NodeReading)


@given(_JSON, st.dictionaries(st.sampled_from(["containers", "initContainers", "overhead"]), _JSON, max_size=3))
def test_pod_requests_never_raise_on_a_strange_pod(raw, spec):
    for pod in (raw, {"spec": spec}, {"spec": {"containers": [{"resources": {"requests": spec}}]}}):
        assert isinstance(pod_requests(pod), Requests)
