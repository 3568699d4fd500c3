"""Hygon DCUs through hy-smi: its outputs (tests/data/vendors/hygon, SOURCES.md says whence) read back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from jupyter_hetero.backends.local.vendors import DeviceUsage, hygon

from ..fakes import installed, replay

DATA = Path(__file__).parent.parent / "data" / "vendors" / "hygon"
DISCOVER = ("--showproductname", "--showmeminfo", "vram", "--showdriverversion", "--json")
SAMPLE = ("--showuse", "--showmemuse", "--showmeminfo", "vram", "--json")


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_a_k100_node_is_discovered():
    devices, notes = hygon.discover(replay({DISCOVER: recorded("hy-smi-devices-k100ai.json")}), installed)
    assert notes == []
    assert [d.index for d in devices] == [0, 1, 2, 3]
    assert {(d.vendor, d.model, d.memory_mib, d.driver_version) for d in devices} == {
        ("hygon", "K100_AI", 65520, "6.3.13-V1.12.0a")}


@pytest.mark.parametrize(
    ("name", "usage"),
    [
        pytest.param("hy-smi-usage-dcu-k100ai.json",
                     [DeviceUsage(0, 74.0, 57000.0), DeviceUsage(1, 29.0, 55700.0), DeviceUsage(3, 0.0, 0.0)],
                     id="JSON: DCU use, VRAM in bytes"),
        pytest.param("hy-smi-usage-hyhal-k100ai.json", [DeviceUsage(0, 0.0, 1166.0)], id="hyhal JSON: HCU use, VRAM in MiB"),
        pytest.param("hy-smi-table-k100ai.txt", [DeviceUsage(0, 0.0), DeviceUsage(1, 0.0), DeviceUsage(3, 0.0)],
                     id="summary table: DCU% only"),
        pytest.param("hy-smi-table-legacy.txt", [DeviceUsage(0, 84.0), DeviceUsage(1, 0.0)], id="older table with clocks"),
    ],
)
def test_usage_is_read_for_the_cards_asked_about(name, usage):
    assert hygon.sample([0, 1, 3], replay({SAMPLE: recorded(name)}), installed) == usage


def test_a_driver_mismatch_warning_before_the_json_is_a_note():
    warning = "WARNING: the driver (6.2.26) is older than DTK 24.04.1 needs (6.3.13 or newer)\n"
    devices, notes = hygon.discover(replay({DISCOVER: warning + recorded("hy-smi-devices-k100ai.json")}), installed)
    assert len(devices) == 4
    assert notes == ["hy-smi: " + warning.strip()]


def test_missing_and_odd_fields_leave_gaps_not_errors():
    cards = json.loads(recorded("hy-smi-devices-k100ai.json"))
    cards["card1"] = {"Card SKU": "Z100L", "VRAM Total Memory (B)": "N/A", "PCI Bus": "0000:3b:00.0",
                      "(Topology) Numa Node": "1"}
    del cards["system"]
    devices, _ = hygon.parse_devices(json.dumps(cards))
    odd = devices[1]
    assert (odd.model, odd.memory_mib, odd.driver_version, odd.pci_bus, odd.numa_node) == (
        "Z100L", 0, None, "0000:3b:00.0", 1)


def test_a_failing_hy_smi_is_a_note():
    failing = subprocess.CalledProcessError(1, ["hy-smi"], "", "Error: Driver not initialized (amdgpu not found in modules)")
    assert hygon.discover(replay({DISCOVER: failing}), installed) == (
        [], ["hy-smi: '--showproductname --showmeminfo vram --showdriverversion --json' failed "
             "(Error: Driver not initialized (amdgpu not found in modules))"])
