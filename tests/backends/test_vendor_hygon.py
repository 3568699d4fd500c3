"""Hygon DCUs through hy-smi: its outputs (tests/data/vendors/hygon, SOURCES.md says whence) read back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from jupyter_hetero.backends.local.vendors import DeviceUsage, hygon
from jupyter_hetero.backends.local.vendors.amd import parse_topology_tables

from ..fakes import installed, replay

DATA = Path(__file__).parent.parent / "data" / "vendors" / "hygon"
DISCOVER = ("--showproductname", "--showmeminfo", "vram", "--showbus", "--json")
DRIVER = ("--showdriverversion",)
TOPOLOGY = ("--showtopo",)
SAMPLE = ("--showuse", "--showmemuse", "--showmeminfo", "vram", "--json")
K100_AI = "hy-smi-json-k100ai-gpustack-2032-first2cards.json"
K100_AI_TOPOLOGY = "hy-smi-showtopo-hcu-k100ai-crlf-dcu-in-action.txt"
NO_TOPOLOGY = subprocess.CalledProcessError(2, ["hy-smi"], "", "hy-smi: error: unrecognized arguments: --showtopo")


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_a_k100_node_is_discovered_with_the_driver_hy_smi_prints_as_text():
    run = replay({DISCOVER: recorded(K100_AI), DRIVER: recorded("hy-smi-showdriverversion-bw-6.3.31.txt"),
                  TOPOLOGY: recorded(K100_AI_TOPOLOGY)})
    devices, notes = hygon.discover(run, installed)
    assert notes == []
    assert [d.index for d in devices] == [0, 1]
    assert {(d.vendor, d.model, d.memory_mib, d.driver_version, d.interconnect, d.link_domain, d.numa_node)
            for d in devices} == {("hygon", "K100_AI", 65520, "6.3.31-V1.5.0a", "pcie", None, 0)}


def test_recorded_topology_tables_of_eight_k100_ai_on_pcie():
    """hyhal's tables (an 8 × K100_AI machine, CRLF line ends): titles on lines of their own, cards as HCU[i],
    ``None`` on the diagonal, every pair PCIE, every card on NUMA node 0."""
    assert parse_topology_tables(recorded(K100_AI_TOPOLOGY)) == ([], dict.fromkeys(range(8), 0))


def test_cards_hy_smi_joins_by_xgmi_share_a_link_domain():
    # The recorded tables with HCU[0]-HCU[3] turned into one XGMI hive: no public hy-smi output shows DCU links.
    table = recorded(K100_AI_TOPOLOGY).splitlines()
    start = table.index("Link Type between HCUs") + 2
    for row in range(8):
        cells = table[start + row].split()
        table[start + row] = "    ".join([cells[0], *("XGMI" if row < 4 and column < 4 and row != column else cell
                                                      for column, cell in enumerate(cells[1:]))])
    assert parse_topology_tables("\n".join(table))[0] == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    run = replay({DISCOVER: recorded(K100_AI), DRIVER: recorded("hy-smi-showdriverversion-bw-6.3.31.txt"),
                  TOPOLOGY: "\n".join(table)})
    devices, _ = hygon.discover(run, installed)
    assert [(d.interconnect, d.link_domain) for d in devices] == [("xgmi", "xgmi-0"), ("xgmi", "xgmi-0")]


def test_errors_around_the_json_are_notes_and_an_unread_driver_is_one_too():
    # A Z100L's answer, as its user pasted it: hy-smi's error before the JSON, its warning after.
    failing = subprocess.CalledProcessError(2, ["hy-smi"], "", "hy-smi: error: unrecognized arguments")
    run = replay({DISCOVER: recorded("hy-smi-json-z100l-dtk24.04.3-gpustack-1508.txt"), DRIVER: failing,
                  TOPOLOGY: NO_TOPOLOGY})
    [device], notes = hygon.discover(run, installed)
    assert (device.model, device.memory_mib, device.driver_version, device.interconnect) == (
        "Z100L", 32752, None, "pcie")
    assert notes == ["hy-smi: Error: Failed to show unique id: File read or write error.",
                     "hy-smi: '--showdriverversion' failed (hy-smi: error: unrecognized arguments)",
                     "hy-smi: '--showtopo' failed (hy-smi: error: unrecognized arguments: --showtopo)"]


def test_the_bus_is_read_out_of_the_serial_and_slot_recent_releases_append():
    cards = json.loads(recorded("hy-smi-showproductname-bw-2of8.json"))
    for key, card in json.loads(recorded("hy-smi-showbus-bw-2of8.json")).items():
        cards[key] = {**cards[key], **card}
    devices, notes = hygon.parse_devices(json.dumps(cards))
    assert [(d.model, d.pci_bus) for d in devices] == [("BW", "0000:09:00.0"), ("BW", "0000:36:00.0")]
    assert notes == []


def test_the_json_hy_smi_writes_with_power_fields_is_a_note_not_a_crash():
    # With --showpower, hy-smi leaves out the commas between its power fields (the reason the module never asks it).
    devices, notes = hygon.discover(replay({DISCOVER: recorded("hy-smi-json-with-power-bw-llm-monitor.txt")}), installed)
    assert devices == []
    assert len(notes) == 1 and notes[0].startswith("hy-smi: could not read the output of '--showproductname")


@pytest.mark.parametrize(
    ("name", "usage"),
    [
        pytest.param(K100_AI, [DeviceUsage(0, 0.0, 2.0), DeviceUsage(1, 0.0, 2.0)], id="hyhal JSON: HCU use, VRAM in MiB"),
        pytest.param("hy-smi-json-z100l-dtk24.04.3-gpustack-1508.txt", [DeviceUsage(0, 0.0, 2.0)],
                     id="DTK 24.04.3 JSON: DCU use, VRAM in MiB, an error and a warning around it"),
        pytest.param("hy-smi-usage-dcu-k100ai.json",
                     [DeviceUsage(0, 74.0, 57000.0), DeviceUsage(1, 29.0, 55700.0), DeviceUsage(3, 0.0, 0.0)],
                     id="JSON: DCU use, VRAM in bytes (reconstructed)"),
        pytest.param("hy-smi-usage-hyhal-k100ai.json", [DeviceUsage(0, 0.0, 1166.0)], id="hyhal JSON of another reader"),
        pytest.param("hy-smi-table-k100ai.txt", [DeviceUsage(0, 0.0), DeviceUsage(1, 0.0), DeviceUsage(3, 0.0)],
                     id="summary table: DCU% only"),
        pytest.param("hy-smi-table-k100ai-busy-wang-junjian.txt",
                     [DeviceUsage(0, 74.0), DeviceUsage(1, 29.0), DeviceUsage(3, 28.0)], id="summary table of busy cards"),
        pytest.param("hy-smi-table-hcu-k100ai-crlf-dcu-in-action.txt",
                     [DeviceUsage(0, 0.0), DeviceUsage(1, 0.0), DeviceUsage(3, 0.0)], id="hyhal table: HCU%, CRLF"),
        pytest.param("hy-smi-table-legacy.txt", [DeviceUsage(0, 84.0), DeviceUsage(1, 0.0)], id="older table with clocks"),
    ],
)
def test_usage_is_read_for_the_cards_asked_about(name, usage):
    assert hygon.sample([0, 1, 3], replay({SAMPLE: recorded(name)}), installed) == usage


def test_a_driver_mismatch_warning_before_the_json_is_a_note():
    warning = "WARNING: the driver (6.2.26) is older than DTK 24.04.1 needs (6.3.13 or newer)\n"
    run = replay({DISCOVER: warning + recorded(K100_AI), DRIVER: recorded("hy-smi-showdriverversion-bw-6.3.31.txt"),
                  TOPOLOGY: recorded(K100_AI_TOPOLOGY)})
    devices, notes = hygon.discover(run, installed)
    assert len(devices) == 2
    assert notes == ["hy-smi: " + warning.strip()]


def test_missing_and_odd_fields_leave_gaps_not_errors():
    cards = json.loads(recorded(K100_AI))
    cards["card1"] = {"Card SKU": "Z100L", "VRAM Total Memory (B)": "N/A", "PCI Bus": "N/A", "(Topology) Numa Node": "1"}
    cards["system"] = {"Driver version": "6.3.13-V1.12.0a"}  # rocm-smi's place for it, where a release puts it there
    devices, _ = hygon.parse_devices(json.dumps(cards))
    odd = devices[1]
    assert (odd.model, odd.memory_mib, odd.driver_version, odd.pci_bus, odd.numa_node) == (
        "Z100L", 0, "6.3.13-V1.12.0a", None, 1)
    # No driver question: the JSON named it. The tables' NUMA node stands over the JSON's.
    devices, notes = hygon.discover(replay({DISCOVER: json.dumps(cards), TOPOLOGY: recorded(K100_AI_TOPOLOGY)}),
                                    installed)
    assert notes == [] and devices[1].numa_node == 0


def test_a_failing_hy_smi_is_a_note():
    failing = subprocess.CalledProcessError(1, ["hy-smi"], "", "Error: Driver not initialized (amdgpu not found in modules)")
    assert hygon.discover(replay({DISCOVER: failing}), installed) == (
        [], ["hy-smi: '--showproductname --showmeminfo vram --showbus --json' failed "
             "(Error: Driver not initialized (amdgpu not found in modules))"])
    assert hygon.parse_driver('{"system": {"Driver version": "6.3.13-V1.12.0a"}}') == "6.3.13-V1.12.0a"
