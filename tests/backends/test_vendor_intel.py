"""Intel GPUs through xpu-smi: its recorded outputs (tests/data/vendors/intel, SOURCES.md says whence) read back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from jupyter_hetero.backends.local.vendors import DeviceUsage, intel
from ..fakes import installed, replay

DATA = Path(__file__).parent.parent / "data" / "vendors" / "intel"


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


# A Max 1100 node of two cards; its topology and version from the xpu-smi guide (a Max 1550 pair).
MAX_1100 = {
    ("discovery", "--json"): recorded("discovery-max1100.json"),
    ("discovery", "-d", "0", "--json"): recorded("discovery-d0-max1100.json"),
    # Only card 0's details were recorded; card 1 is the same model on the same driver.
    ("discovery", "-d", "1", "--json"): recorded("discovery-d0-max1100.json"),
    ("topology", "-m"): recorded("topology-m-max.txt"),
    ("-v",): recorded("version.txt"),
}


def test_a_max_1100_node_is_discovered_with_its_details_xe_link_and_level_zero():
    devices, notes = intel.discover(replay(MAX_1100), installed)
    assert notes == []
    assert [(d.index, d.vendor, d.model) for d in devices] == [(0, "intel", "Data Center GPU Max 1100"),
                                                              (1, "intel", "Data Center GPU Max 1100")]
    first = devices[0]
    assert first.memory_mib == 51522830336 // 2**20
    assert first.driver_version == "I915_23.10.72_PSB_231129.76"
    assert first.firmware_version is None  # xpu-smi said "unknown"
    assert first.runtime == "level-zero 1.6.2"
    assert first.pci_bus == "0000:29:00.0" and devices[1].pci_bus == "0000:9a:00.0"
    assert {(d.link_domain, d.interconnect) for d in devices} == {("xelink-0", "xelink")}
    assert first.health is None and first.numa_node is None


def test_virtual_functions_are_not_devices():
    listing = json.loads(recorded("discovery-max1100.json"))
    listing["device_list"].append({**listing["device_list"][1], "device_id": 2, "device_function_type": "virtual"})
    assert [r["device_id"] for r in intel.parse_device_list(json.dumps(listing))] == [0, 1]


@pytest.mark.parametrize(
    ("matrix", "domains"),
    [
        pytest.param(recorded("topology-m-max.txt"), {0: "xelink-0", 1: "xelink-0"}, id="two cards on Xe Link"),
        pytest.param(recorded("topology-m-max.txt").replace("XL*", "SYS").replace("XL16", "SYS"), {},
                     id="PCIe only: no link domain"),
        pytest.param("         GPU 0|GPU 1|CPU Affinity\nGPU 0 |S    |NODE |0-23\nGPU 1 |NODE |S    |0-23\n", {},
                     id="single-tile cards in one NUMA node"),
    ],
)
def test_xe_link_topology_gives_link_domains(matrix, domains):
    assert intel.parse_topology(matrix) == domains


@pytest.mark.parametrize(
    ("text", "runtime"),
    [
        pytest.param(recorded("version.txt"), "level-zero 1.6.2", id="xpu-smi 1.x -v"),
        pytest.param("|  Intel XPU-SMI v2.0    Driver: 96E1802BAF7F7118043A89B    Level Zero: 1.32.0  |",
                     "level-zero 1.32.0", id="xpu-smi 2.x header"),
        pytest.param("CLI:\n    Version: 1.2.3\n", None, id="no Level Zero line"),
    ],
)
def test_level_zero_version(text, runtime):
    assert intel.parse_level_zero(text) == runtime


@pytest.mark.parametrize(
    ("name", "usage"),
    [
        pytest.param("stats-d0-arc-b580-tfcc.json", DeviceUsage(0, 0.0, 229.1875),
                     id="recorded: device level, engine_util beside it, integers and floats mixed"),
        pytest.param("stats-d1-max1550-tiles.json", DeviceUsage(1, 70.0, 61440.5), id="two tiles: mean busy, summed memory"),
    ],
)
def test_stats_are_read(name, usage):
    assert intel.parse_stats(recorded(name)) == usage


def test_sample_leaves_out_a_device_that_does_not_answer():
    run = replay({
        ("stats", "-d", "0", "--json"): recorded("stats-d0-arc-b580-tfcc.json"),
        ("stats", "-d", "1", "--json"): subprocess.CalledProcessError(1, ["xpu-smi"], "", "Device not found"),
    })
    assert intel.sample([0, 1], run, installed) == [DeviceUsage(0, 0.0, 229.1875)]


def test_a_card_in_bad_state_is_discovered_with_its_health():
    detail = json.loads(recorded("discovery-d0-max1100.json")) | {"gfx_firmware_status": "GPU in bad state"}
    devices, _ = intel.discover(replay(MAX_1100 | {("discovery", "-d", "1", "--json"): json.dumps(detail)}), installed)
    assert [d.health for d in devices] == [None, "GPU in bad state"]


def test_a_device_without_details_is_kept_with_a_note():
    failing = subprocess.CalledProcessError(1, ["xpu-smi"], "", "Device not found")
    devices, notes = intel.discover(replay(MAX_1100 | {("discovery", "-d", "1", "--json"): failing}), installed)
    assert [d.memory_mib for d in devices] == [51522830336 // 2**20, 0]
    assert notes == ["xpu-smi: 'discovery -d 1 --json' failed (Device not found)"]


def test_level_zero_failing_to_start_is_a_note():
    devices, notes = intel.discover(replay({("discovery", "--json"): recorded("discovery-error.json")}), installed)
    assert devices == []
    assert notes == ["xpu-smi: could not read the output of 'discovery --json' "
                     "(ValueError: xpu-smi says: Level Zero Initialization Error)"]


def test_missing_topology_and_version_only_add_notes():
    failing = subprocess.CalledProcessError(2, ["xpu-smi"], "", "")
    devices, notes = intel.discover(replay(MAX_1100 | {("topology", "-m"): "", ("-v",): failing}), installed)
    assert len(devices) == 2 and {d.link_domain for d in devices} == {None}
    assert notes == ["xpu-smi: could not read the output of 'topology -m' (ValueError: no topology matrix)",
                     "xpu-smi: '-v' failed (exit status 2)"]
