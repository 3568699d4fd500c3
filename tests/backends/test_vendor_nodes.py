"""A real `jupyter server` on a machine whose vendor tool is a recorded-output replayer on PATH, or whose vendor
library (NVML, amdsmi) is a stand-in answering from recorded outputs on PYTHONPATH: discovery and sampling run
as they do on the real machine, and the node shows its devices, versions, interconnect and live use in the API
the node cards and the status bar read."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH
from jupyter_hetero.platform.workloads.environment import VISIBILITY

from ..fakes import recorded_library, recorded_tool
from ..harness import ServerLayout, start_hetero_server, until

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent.parent / "data" / "vendors"
ASCEND, AMD, INTEL, CAMBRICON, HYGON, NVIDIA = (
    DATA / name for name in ("ascend", "amd", "intel", "cambricon", "hygon", "nvidia"))
NO_EMULATED_NODES = "nodes: []\n"


def _ascend_machine(bin_dir: Path) -> dict[str, str]:
    # One real 8x 910B3 server as ms-swift's NPU guide recorded it: its `npu-smi info` and `-t topo` (one HCCS
    # mesh). No board of it was published, so the boards are not read (a note per NPU; no firmware shown); the
    # CANN install record is Huawei's MindCluster guide's.
    recorded_tool(bin_dir, "npu-smi", {
        "info": ASCEND / "info-910b3-8npu-24.1.rc1-ms-swift.txt",
        "info -t topo": ASCEND / "topo-910b3-8npu-24.1.rc1-ms-swift.txt",
    })
    return {"ASCEND_TOOLKIT_HOME": str(ASCEND / "toolkit-8.5.0-doc")}


def _amd_machine(bin_dir: Path) -> dict[str, str]:
    # Two MI300X in one XGMI hive through rocm-smi's JSON: reconstructed files (SOURCES.md says from what), as no
    # recorded rocm-smi JSON of an XGMI hive was found; the amdsmi node below shows XGMI from recordings.
    recorded_tool(bin_dir, "rocm-smi", {
        "--showproductname --showmeminfo vram --showdriverversion --showbus --showvbios --json":
            AMD / "discover-rocm6-mi300x.json",
        "--showtopo --json": AMD / "topo-rocm6-mi300x.json",
        "--showuse --showmemuse --showmeminfo vram --json": AMD / "usage-rocm6.json",
    })
    return {"ROCM_PATH": str(AMD / "rocm")}


def _amd_mi100_machine(bin_dir: Path) -> dict[str, str]:
    # A real server of four MI100 on PCIe (telegraf's recorded rocm-smi answer, ROCm 6.0.2): one answer holds
    # products, VRAM, driver, topology and use, so it answers every query. No ROCm release file: no runtime.
    answer = AMD / "rocm-smi-all-rocm6.0.2-mi100x4-telegraf.json"
    recorded_tool(bin_dir, "rocm-smi", {
        "--showproductname --showmeminfo vram --showdriverversion --showbus --showvbios --json": answer,
        "--showtopo --json": answer, "--showuse --showmemuse --showmeminfo vram --json": answer,
    })
    return {"ROCM_PATH": str(bin_dir / "no-rocm")}


def _amdsmi_machine(bin_dir: Path) -> dict[str, str]:
    # AMD's bindings, no rocm-smi on PATH, answering from AMD's own recordings: four MI300A as `amd-smi static`
    # printed them, the one XGMI pair its topology example shows, and use as the bindings' integration run
    # printed it of its one GPU (a NAVI21), which only device 0 answers. No ROCm release file: no runtime.
    site = bin_dir.parent / "site"
    recorded_library(site, "amdsmi", "tests.backends.recorded_amdsmi", {
        "static": AMD / "amd-smi-static-mi300a-x4-amdsmi-readme.txt",
        "links": AMD / "amd-smi-topology-json-xgmi-excerpt-amdsmi-changelog.txt",
        "run": AMD / "amdsmi-python-integration-run-navi21-amdsmi-readme.txt"})
    return {"ROCM_PATH": str(bin_dir / "no-rocm"), "PYTHONPATH": _python_path(site)}


def _nvidia_machine(bin_dir: Path) -> dict[str, str]:
    # NVML answering from a blog's recorded `nvidia-smi -a` and `topo -m` of eight A100 on NVSwitches.
    site = bin_dir.parent / "site"
    recorded_library(site, "pynvml", "tests.backends.recorded_nvml", {
        "query": NVIDIA / "nvidia-smi-a-a100-sxm4-40gb-x8-535.129.03-xuesongtap-blog.txt",
        "topology": NVIDIA / "topo-m-a100-sxm4-40gb-x8-nv12-xuesongtap-blog.txt"})
    return {"PYTHONPATH": _python_path(site)}


def _python_path(site: Path) -> str:
    return os.pathsep.join(filter(None, (str(site), os.environ.get("PYTHONPATH"))))


def _intel_machine(bin_dir: Path) -> dict[str, str]:
    # Two Max 1100 cards on one Xe Link (a recorded node's discovery, the xpu-smi guide's topology). No stats of
    # that node were published: card 0 answers with the recorded stats of an idle Arc B580 (device 0 too), and
    # card 1 not at all (a two-tile answer is only reconstructed), so its use is unknown.
    recorded_tool(bin_dir, "xpu-smi", {
        "discovery --json": INTEL / "discovery-max1100.json",
        "discovery -d 0 --json": INTEL / "discovery-d0-max1100.json",
        "discovery -d 1 --json": INTEL / "discovery-d0-max1100.json",
        "topology -m": INTEL / "topology-m-max.txt", "-v": INTEL / "version.txt",
        "stats -d 0 --json": INTEL / "stats-d0-arc-b580-tfcc.json",
    })
    return {}


def _cambricon_machine(bin_dir: Path) -> dict[str, str]:
    # A real summary table of two idle MLU370-X4 (PaddlePaddle's install guide). No `cnmon info` of that machine
    # was published, so `info` has no record and the cards' health stays unread (a note on the node says so).
    recorded_tool(bin_dir, "cnmon", {"": CAMBRICON / "cnmon-v5.10.10-mlu370-x4x2-paddle-docs.txt"})
    return {"NEUWARE_HOME": str(CAMBRICON / "neuware")}


def _hygon_machine(bin_dir: Path) -> dict[str, str]:
    # Two K100_AI as a user pasted hy-smi's JSON of them (gpustack issue 2032), answering what they are and what
    # they are doing; the driver line is a BW node's (no K100_AI one was published), the topology tables another
    # eight-K100_AI machine's (every pair PCIe, every card on NUMA node 0).
    cards = HYGON / "hy-smi-json-k100ai-gpustack-2032-first2cards.json"
    recorded_tool(bin_dir, "hy-smi", {
        "--showproductname --showmeminfo vram --showbus --json": cards,
        "--showdriverversion": HYGON / "hy-smi-showdriverversion-bw-6.3.31.txt",
        "--showtopo": HYGON / "hy-smi-showtopo-hcu-k100ai-crlf-dcu-in-action.txt",
        "--showuse --showmemuse --showmeminfo vram --json": cards,
    })
    return {}


@pytest.mark.parametrize(
    ("machine", "expected", "use"),
    [
        pytest.param(_ascend_machine, {"vendor": "ascend", "model": "910B3", "count": 8, "memory_mib": 65536,
                                       "driver_version": "24.1.rc1.b030", "runtime": "cann 8.5.0",
                                       "firmware_version": None, "interconnect": "hccs"},
                     {"device_util_pct": 0.0, "device_memory_used_mib": 26517.0}, id="8x 910B3 in one HCCS mesh"),
        pytest.param(_amd_machine, {"vendor": "amd", "model": "AMD Instinct MI300X", "count": 2,
                                    "memory_mib": 196592, "driver_version": "6.7.0", "runtime": "rocm 6.1",
                                    "firmware_version": "113-M3000100-102", "interconnect": "xgmi"},
                     {"device_util_pct": 43.5, "device_memory_used_mib": 80887.7}, id="MI300X xGMI hive"),
        pytest.param(_amd_mi100_machine, {"vendor": "amd", "model": "Arcturus GL-XL [Instinct MI100]", "count": 4,
                                          "memory_mib": 32752, "driver_version": "6.3.6", "runtime": None,
                                          "firmware_version": "113-D3431401-101", "interconnect": "pcie"},
                     {"device_util_pct": 0.0}, id="MI100 x4 on PCIe (recorded)"),
        pytest.param(_amdsmi_machine, {"vendor": "amd", "model": "MI300A", "count": 4, "memory_mib": 64289,
                                       "driver_version": "6.9.0-rc5+", "runtime": None, "firmware_version": None,
                                       "interconnect": "xgmi"},
                     {"device_util_pct": 9.0, "device_memory_used_mib": 16.3}, id="MI300A x4 through amdsmi"),
        pytest.param(_nvidia_machine, {"vendor": "nvidia", "model": "A100-SXM4-40GB", "count": 8,
                                       "memory_mib": 40960, "driver_version": "535.129.03", "runtime": "cuda 12.2",
                                       "firmware_version": "92.00.36.00.04", "interconnect": "nvlink"},
                     {"device_util_pct": 0.0, "device_memory_used_mib": 32.0}, id="8x A100 on NVSwitches through NVML"),
        pytest.param(_intel_machine, {"vendor": "intel", "model": "Data Center GPU Max 1100", "count": 2,
                                      "memory_mib": 49136, "driver_version": "I915_23.10.72_PSB_231129.76",
                                      "runtime": "level-zero 1.6.2", "firmware_version": None,
                                      "interconnect": "xelink"},
                     {"device_util_pct": 0.0, "device_memory_used_mib": 229.2}, id="Max 1100 pair on Xe Link"),
        # No link domains: cnmon's table says nothing of MLU-Link, and the one hy-smi topology published is all PCIe.
        pytest.param(_cambricon_machine, {"vendor": "cambricon", "model": "MLU370-X4", "count": 2,
                                          "memory_mib": 23308, "driver_version": "5.10.10",
                                          "runtime": "neuware 3.9.0", "firmware_version": "1.1.6",
                                          "interconnect": "pcie"},
                     {"device_util_pct": 0.0, "device_memory_used_mib": 0.0}, id="MLU370-X4 pair"),
        pytest.param(_hygon_machine, {"vendor": "hygon", "model": "K100_AI", "count": 2, "memory_mib": 65520,
                                      "driver_version": "6.3.31-V1.5.0a", "runtime": None,
                                      "firmware_version": None, "interconnect": "pcie"},
                     {"device_util_pct": 0.0, "device_memory_used_mib": 4.0}, id="K100_AI pair"),
    ],
)
def test_a_vendor_node_shows_its_devices_versions_interconnect_and_use(tmp_path, machine, expected, use):
    bin_dir = tmp_path / "bin"
    env = machine(bin_dir)
    env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NO_EMULATED_NODES, encoding="utf-8")
    layout = ServerLayout.create(tmp_path / "server")
    catalog = _catalog_for(tmp_path, expected["vendor"])
    with start_hetero_server(layout, "vendor", nodes, f"--HeteroApp.catalog_file={catalog}", env=env) as server:
        local = next(node for node in server.api("hetero/api/v1/nodes") if node["name"] == "local")
        accelerator = local["accelerator"]
        assert {key: accelerator[key] for key in expected} == expected
        assert local["family"] == expected["vendor"] and local["emulated"] is False
        linked = expected["interconnect"] != "pcie"
        assert {device["link_domain"] for device in accelerator["devices"]} == domains.get(
            machine, {f"{expected['interconnect']}-0"} if linked else {None})
        assert [device["index"] for device in accelerator["devices"]] == list(range(expected["count"]))
        if expected["vendor"] != "hygon":  # the published hy-smi answer was to a query without --showbus
            assert all(device["pci_bus"] for device in accelerator["devices"]), accelerator["devices"]
        else:  # from hy-smi's topology tables
            assert {device["numa_node"] for device in accelerator["devices"]} == {0}
        used = until(lambda: (n := next(n for n in server.api("hetero/api/v1/nodes") if n["name"] == "local"))
                     ["utilisation"], "the node's utilisation")
        assert {key: used[key] for key in use} == use
        # A job on one of its devices sees that device alone, and its usage record has the device's use as the
        # vendor's tool said it.
        job = server.api(f"{API}/workloads", "POST", {
            "kind": "job", "template": "vendor-job", "parameters": {"devices": 1},
            "command": [sys.executable, "-c", SHOW_DEVICES]})
        done = until(lambda: (w := server.api(f"{API}/workloads/{job['id']}"))["state"] in FINAL and w,
                     "the job to end", timeout=60)
        assert done["state"] == "succeeded", done
        [attempt] = done["attempts"]
        assert attempt["node"] == "local" and attempt["placement"]["flavor"] == f"{expected['vendor']}-local"
        index = attempt["placement"]["slots"][0]["devices"][0]["index"]
        log = server.api(f"{API}/workloads/{job['id']}/logs")
        for name in VISIBILITY[expected["vendor"]]:
            assert f"{name}={index}" in log, log
        util = device_use.get(machine, {}).get(index, 0.0)
        assert attempt["metrics"].get("device_util_pct_mean") == (util if util is None else pytest.approx(util)), attempt


# What the recorded outputs say each busy device is doing (the utilisation of the device a job is given; None
# where nothing was recorded); every other device is idle.
device_use = {_amd_machine: {0: 87.0}, _amdsmi_machine: {0: 9.0, 1: None, 2: None, 3: None}, _intel_machine: {1: None}}
# Where a node's devices are not all in one link domain: amd-smi's example joins MI300A 0 and 1 alone.
domains = {_amdsmi_machine: {"xgmi-0", None}}
API = "hetero/api/v1"
FINAL = ("succeeded", "failed", "cancelled", "lost")
SHOW_DEVICES = ("import os, time\n"
                "for name in sorted(os.environ):\n"
                "    if name.endswith(('VISIBLE_DEVICES', 'AFFINITY_MASK')): print(f'{name}={os.environ[name]}')\n"
                "time.sleep(3)")


def _catalog_for(path: Path, vendor: str) -> Path:
    """The shipped catalog with a flavor for this vendor's devices, a job template on it and quota for it."""
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    flavor = f"{vendor}-local"
    data["flavors"].insert(0, {"name": flavor, "display": {"en": vendor, "zh": vendor}, "selector": {"family": vendor},
                            "price_per_hour": 1.0})
    data["templates"].append({
        "name": "vendor-job", "task_type": "batch-inference", "kinds": ["job"], "queue": "batch",
        "display": {"en": "Vendor job", "zh": "厂商作业"}, "description": {"en": "A job", "zh": "作业"},
        "request": {"cpu": 1, "memory": "1Gi", "devices": 1}, "flavors": [flavor],
        "variants": [{"family": vendor, "image": f"example.org/{vendor}:1"}],
        "parameters": [{"name": "devices", "type": "int", "default": 1, "min": 1, "max": 2}]})
    tenant = next(t for t in data["tenants"] if t["name"] == data["default_tenant"])
    tenant["quotas"][flavor] = {"nominal": {"devices": 8, "cpu": 64, "memory": "512Gi"}}
    target = path / "catalog.yaml"
    target.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return target
