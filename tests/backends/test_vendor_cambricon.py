"""Cambricon MLUs through cnmon: its summary table (recorded), `cnmon info` (reconstructed) and Neuware's
version file read back; tests/data/vendors/cambricon/SOURCES.md says whence each comes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jupyter_hetero.backends.local.vendors import DeviceUsage, cambricon

from ..fakes import installed, replay

DATA = Path(__file__).parent.parent / "data" / "vendors" / "cambricon"


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def neuware(monkeypatch):
    monkeypatch.setenv("NEUWARE_HOME", str(DATA / "neuware"))


@pytest.mark.parametrize(
    ("name", "model", "memory_mib", "driver", "buses"),
    [
        pytest.param("cnmon-v5.10.10-mlu370-x4x2-paddle-docs.txt", "MLU370-X4", 23308, "5.10.10",
                     ["0000:1b:00.0", "0000:36:00.0"], id="cnmon 5.10, driver in the header"),
        pytest.param("cnmon-v4.20.11-mlu370-x4x3-paddle-docs.txt", "MLU370-X4", 23308, "4.20.11",
                     [None, None, None], id="cnmon 4.20, driver in a column, no bus"),
        pytest.param("cnmon-v5.10.22-mlu370-x8x2-unattributed.txt", "MLU370-X8", 20638, "5.10.22",
                     ["0000:13:00.0", "0000:16:00.0"], id="cnmon 5.10.22, ECC on"),
        pytest.param("cnmon-v5.10.13-mlu370-x8x2-paddle-docs-example.txt", "MLU370-X8", 23374, "5.10.13",
                     ["0000:39:00.0", "0000:3d:00.0"], id="cnmon 5.10.13, a documented example"),
    ],
)
def test_the_summary_table_is_read(name, model, memory_mib, driver, buses):
    run = replay({(): recorded(name), ("info",): subprocess.CalledProcessError(1, ["cnmon", "info"], "", "")})
    devices, notes = cambricon.discover(run, installed)
    assert [d.index for d in devices] == list(range(len(buses)))
    assert {(d.vendor, d.model, d.memory_mib, d.driver_version, d.firmware_version, d.runtime) for d in devices} == {
        ("cambricon", model, memory_mib, driver, "1.1.6", "neuware 3.9.0")}
    assert [d.pci_bus for d in devices] == buses
    assert notes == ["cnmon: 'info' failed (exit status 1)"]  # the health could not be read, and it says so
    assert cambricon.sample([0], run, installed) == [DeviceUsage(0, 0.0, 0.0)]


def test_a_redacted_memory_total_leaves_a_gap_not_an_error():
    # A real eight-card table whose product names and memory totals its author masked with x's before publishing.
    table = cambricon.parse_cnmon_table(recorded("cnmon-v5.10.31-x8-redacted-paddlenlp.txt"))
    assert [device.index for device, _ in table] == list(range(8))
    assert {(d.model, d.memory_mib, d.driver_version, d.firmware_version) for d, _ in table} == {
        ("MLUXXX-XX", 0, "5.10.31", "1.5.0")}
    assert table[4][0].pci_bus == "0000:af:00.0"
    assert [usage for _, usage in table][:2] == [DeviceUsage(0, 0.0, None), DeviceUsage(1, 0.0, None)]


def test_a_busy_card_is_sampled_and_the_process_table_is_not_taken_for_cards():
    text = recorded("cnmon-v5.10.10-mlu370-x4x2-paddle-docs.txt")
    busy = (text.replace("| 0%                N/A |", "| 87%               N/A |", 1)
                .replace("|     0 MiB/ 23308 MiB |", "| 16384 MiB/ 23308 MiB |", 1)
                .replace("|  No running processes found                                                  |",
                         "|  0     /   4242   python train.py                          16384 MiB  |"))
    run = replay({(): busy})
    assert cambricon.sample([0, 1], run, installed) == [DeviceUsage(0, 87.0, 16384.0), DeviceUsage(1, 0.0, 0.0)]
    assert cambricon.sample([1], run, installed) == [DeviceUsage(1, 0.0, 0.0)]


@pytest.mark.parametrize(
    ("name", "model", "memory_mib", "driver", "firmware", "buses"),
    [
        pytest.param("cnmon-info-mlu370-x8.txt", "MLU370-X8", 23308, "5.10.26", "1.1.6",
                     ["0000:1a:00.0", "0000:1b:00.0"], id="MLU370-X8: two chips, two cards"),
        pytest.param("cnmon-info-mlu590.txt", "MLU590-H8", 81920, "6.2.10", "2.3.2",
                     ["0000:3d:00.0", "0000:3e:00.0"], id="MLU590-H8"),
    ],
)
def test_cnmon_info_is_read(name, model, memory_mib, driver, firmware, buses):
    devices = cambricon.parse_cnmon_info(recorded(name))
    assert [d.index for d in devices] == [0, 1]
    assert {(d.vendor, d.model, d.memory_mib, d.driver_version, d.firmware_version) for d in devices} == {
        ("cambricon", model, memory_mib, driver, firmware)}
    assert [d.pci_bus for d in devices] == buses
    assert [d.health for d in devices] == [None, None]


def test_a_card_in_error_is_discovered_with_its_health_and_info_fills_the_bus_the_old_table_lacks():
    info = recorded("cnmon-info-mlu370-x8.txt")
    second = info.index("Card 1")
    info = info[:second] + info[second:].replace("Device                     : Good", "Device                     : Fault", 1)
    run = replay({(): recorded("cnmon-v4.20.11-mlu370-x4x3-paddle-docs.txt"), ("info",): info})
    devices, notes = cambricon.discover(run, installed)
    assert notes == []
    assert [d.health for d in devices] == [None, "Fault", None]  # card 2 has no block in `info`: nothing known
    assert [d.pci_bus for d in devices] == ["0000:1a:00.0", "0000:1b:00.0", None]
    assert {d.model for d in devices} == {"MLU370-X4"}  # the table's word, not the other file's


def test_missing_fields_leave_gaps_not_errors():
    text = "Card 0\n    Product Name                   : MLU370-S4\n    Firmware                       : N/A\n"
    [device] = cambricon.parse_cnmon_info(text)
    assert (device.model, device.memory_mib, device.driver_version, device.firmware_version, device.pci_bus) == (
        "MLU370-S4", 0, None, None, None)


def test_a_driver_that_does_not_match_is_a_note():
    mismatch = subprocess.CalledProcessError(
        1, ["cnmon"], "", "cnmon: the driver version v4.20.18 does not match the cndev library v5.10.26\n")
    assert cambricon.discover(replay({(): mismatch}), installed) == (
        [], ["cnmon: 'cnmon' failed (cnmon: the driver version v4.20.18 does not match the cndev library v5.10.26)"])


def test_the_neuware_release_is_read_from_its_version_file(tmp_path):
    assert cambricon.neuware_version(str(DATA / "neuware")) == "3.9.0"
    (tmp_path / "version.txt").write_text("CNToolkit 3.9.0\n", encoding="utf-8")
    assert cambricon.neuware_version(str(tmp_path)) is None  # not the line Cambricon's checks read
    assert cambricon.neuware_version(str(tmp_path / "absent")) is None
