"""Cambricon MLUs through cnmon: outputs of `cnmon info` (tests/data/vendors/cambricon, SOURCES.md says whence) read back."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jupyter_hetero.backends.local.vendors import DeviceUsage, cambricon

from ..fakes import installed, replay

DATA = Path(__file__).parent.parent / "data" / "vendors" / "cambricon"


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


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
    devices, notes = cambricon.discover(replay({("info",): recorded(name)}), installed)
    assert notes == []
    assert [d.index for d in devices] == [0, 1]
    assert {(d.vendor, d.model, d.memory_mib, d.driver_version, d.firmware_version) for d in devices} == {
        ("cambricon", model, memory_mib, driver, firmware)}
    assert [d.pci_bus for d in devices] == buses
    assert [d.health for d in devices] == [None, None]


def test_usage_is_read_for_the_cards_asked_about():
    run = replay({("info",): recorded("cnmon-info-mlu590.txt")})
    assert cambricon.sample([1], run, installed) == [DeviceUsage(1, 0, 0)]
    assert cambricon.sample([0, 1], run, installed) == [DeviceUsage(0, 92, 40960), DeviceUsage(1, 0, 0)]


def test_a_card_in_error_is_discovered_with_its_health():
    text = recorded("cnmon-info-mlu370-x8.txt")
    second = text.index("Card 1")
    text = text[:second] + text[second:].replace("Device                     : Good", "Device                     : Fault", 1)
    assert [d.health for d in cambricon.parse_cnmon_info(text)] == [None, "Fault"]


def test_missing_fields_leave_gaps_not_errors():
    text = "Card 0\n    Product Name                   : MLU370-S4\n    Firmware                       : N/A\n"
    [device] = cambricon.parse_cnmon_info(text)
    assert (device.model, device.memory_mib, device.driver_version, device.firmware_version, device.pci_bus) == (
        "MLU370-S4", 0, None, None, None)
    assert cambricon.parse_usage(text) == [DeviceUsage(0, None, None)]


def test_a_driver_that_does_not_match_is_a_note():
    mismatch = subprocess.CalledProcessError(
        1, ["cnmon", "info"], "", "cnmon: the driver version v4.20.18 does not match the cndev library v5.10.26\n")
    assert cambricon.discover(replay({("info",): mismatch}), installed) == (
        [], ["cnmon: 'info' failed (cnmon: the driver version v4.20.18 does not match the cndev library v5.10.26)"])
