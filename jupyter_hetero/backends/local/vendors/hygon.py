"""Hygon DCUs (Z100, K100) through ``hy-smi``, Hygon's fork of ``rocm-smi``.

``hy-smi --showproductname --showmeminfo vram --showbus --json`` says what the cards are,
``hy-smi --showdriverversion`` which driver runs them (in plain text: recent releases print it so even when
asked for JSON), and ``hy-smi --showuse --showmemuse --showmeminfo vram --json`` what they are doing; without
``--json`` (or from an hy-smi too old for it) the usage comes as the summary table, which is read too.
``hy-smi --showtopo`` prints rocm-smi's topology tables (cards ``HCU[0]``, titles on lines of their own): the
NUMA node of each card and the pairs ``XGMI`` joins, read by the AMD module's parser. Releases
name the same things differently (``DCU use (%)`` or, in hyhal's, ``HCU use (%)``; VRAM in bytes or MiB) and
add to them (``PCI Bus`` followed by the card's serial and OAM slot). hy-smi may print errors and warnings
around its JSON; those before it become notes. ``--showpower`` is never asked for: with it, hy-smi writes
JSON without the commas between its power fields.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from . import DeviceFacts, DeviceUsage, Runner, Which
from ._tool import query
from .amd import parse_topology_tables
from .links import link_domains, numa_node_of, pci_address_in

__all__ = ["discover", "parse_devices", "parse_driver", "parse_usage", "sample"]

TOOL = "hy-smi"
_MIB = 1024 * 1024
_DISCOVER = ["--showproductname", "--showmeminfo", "vram", "--showbus", "--json"]
_DRIVER = ["--showdriverversion"]
_TOPOLOGY = ["--showtopo"]
_SAMPLE = ["--showuse", "--showmemuse", "--showmeminfo", "vram", "--json"]
_TABLE_ROW = re.compile(r"^\s*(\d+)\s+.*?(\d+(?:\.\d+)?)%\s+(\d+(?:\.\d+)?)%")


def discover(run: Runner, which: Which) -> tuple[list[DeviceFacts], list[str]]:
    """Hygon DCUs on this machine; ``([], [])`` where hy-smi is not installed."""
    path = which(TOOL)
    if path is None:
        return [], []
    found, note = query(run, TOOL, [path, *_DISCOVER], parse_devices)
    if found is None:
        return [], [note]
    devices, notes = found
    if not any(device.driver_version for device in devices):
        driver, note = query(run, TOOL, [path, *_DRIVER], parse_driver)
        devices = [replace(device, driver_version=driver) for device in devices]
        notes += [note] if note else []
    topology, note = query(run, TOOL, [path, *_TOPOLOGY], parse_topology_tables)
    pairs, numa = topology or ([], {})
    domains = link_domains(pairs, "xgmi")
    devices = [replace(device, interconnect="xgmi" if device.index in domains else device.interconnect,
                       link_domain=domains.get(device.index), numa_node=_numa_node(device, numa))
               for device in devices]
    return devices, notes + ([note] if note else [])


def sample(indexes: list[int], run: Runner, which: Which) -> list[DeviceUsage]:
    """Utilisation and memory in use of the given DCUs; none where hy-smi does not answer."""
    path = which(TOOL)
    if path is None:
        return []
    usage, _ = query(run, TOOL, [path, *_SAMPLE], parse_usage)
    return [u for u in usage or [] if u.index in indexes]


def parse_devices(text: str) -> tuple[list[DeviceFacts], list[str]]:
    """The cards of the discovery query, and hy-smi's warnings (a driver mismatch, say) as notes."""
    cards, warnings = _json(text)
    driver = _field(cards.get("system", {}), "Driver version")
    devices = [
        DeviceFacts(
            index=index,
            vendor="hygon",
            model=_field(card, "Card Series") or _field(card, "Card SKU") or "unknown",
            memory_mib=int(_memory_mib(card, "Total") or 0),
            driver_version=driver,
            pci_bus=pci_address_in(_field(card, "PCI Bus")),  # recent: "0000:09:00.0 --> SN: … --> OAM ID: 1"
            numa_node=_int(_field(card, "(Topology) Numa Node")),
        )
        for index, card in _cards(cards)
    ]
    return devices, [f"{TOOL}: {warning}" for warning in warnings]


def parse_driver(text: str) -> str:
    """The driver of ``hy-smi --showdriverversion``: ``Driver Version: 6.3.31-V1.5.0a``, or the same in JSON."""
    found = re.search(r"Driver version\"?\s*:\s*\"?([^\"\s]+)", text, re.IGNORECASE)
    if found is None:
        raise ValueError("no driver version in the output")
    return found.group(1)


def parse_usage(text: str) -> list[DeviceUsage]:
    """Each card's DCU use and memory in use, from the JSON of the sampling query or from hy-smi's table.

    The table gives memory only as a share of a total it does not print, so memory is None there.
    """
    if "{" not in text:
        return [DeviceUsage(int(row[1]), float(row[3])) for row in map(_TABLE_ROW.match, text.splitlines()) if row]
    cards, _ = _json(text)
    return [
        DeviceUsage(index, _float(_field(card, "DCU use (%)") or _field(card, "HCU use (%)")), _memory_mib(card, "Total Used"))
        for index, card in _cards(cards)
    ]


def _numa_node(device: DeviceFacts, tables: dict[int, int]) -> int | None:
    """The card's NUMA node: hy-smi's tables, else its JSON, else what sysfs says of its bus."""
    node = tables.get(device.index, device.numa_node)
    return node if node is not None else numa_node_of(device.pci_bus)


def _json(text: str) -> tuple[dict[str, Any], list[str]]:
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON in the output")
    data = json.loads(text[start : text.rfind("}") + 1])
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    return data, [line.strip() for line in text[:start].splitlines() if line.strip()]


def _cards(data: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    cards = ((int(key.removeprefix("card")), card) for key, card in data.items() if re.fullmatch(r"card\d+", key))
    return sorted(cards, key=lambda item: item[0])


def _field(card: dict[str, Any], name: str) -> str | None:
    # Releases differ in case ("VRAM Total Memory (B)", "vram Total Memory (B)") and in the unit named in the key.
    value = next((v for k, v in card.items() if k.lower() == name.lower()), None)
    text = str(value).strip() if value is not None else ""
    return text if text and text.upper() != "N/A" else None


def _memory_mib(card: dict[str, Any], which: str) -> float | None:
    """VRAM in MiB, from ``vram Total Memory (B)`` (rocm-smi, older DTK) or ``(MiB)`` (hyhal of DTK 24.04)."""
    in_bytes = _field(card, f"vram {which} Memory (B)")
    if in_bytes is not None:
        return int(in_bytes) / _MIB
    in_mib = _field(card, f"vram {which} Memory (MiB)")
    return float(in_mib) if in_mib is not None else None


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None  # rocm-smi says -1 for "no NUMA node"


def _float(value: str | None) -> float | None:
    return float(value) if value is not None else None

