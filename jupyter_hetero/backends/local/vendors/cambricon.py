"""Cambricon MLUs (MLU370, MLU590) through ``cnmon``.

Plain ``cnmon`` prints a summary table, two rows per card (name, firmware, bus, utilisation; then memory
used and total), with the driver in its header (5.x) or in a column of the card's row (4.x). It says what a
card is and what it is doing, so discovery and sampling both read it. ``cnmon info`` prints a block per card
(``Card N`` then indented ``Key : value`` lines, a key with no value opening a section); discovery asks it
too, for each card's health, which the table does not show. The Neuware (runtime) release is the line
``Neuware Version 3.9.0`` of ``$NEUWARE_HOME/version.txt`` (``/usr/local/neuware`` by default), where
Cambricon's own version checks read it; no cnmon output prints it.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from . import DeviceFacts, DeviceUsage, Runner, Which
from ._tool import query
from .links import pci_address_in

__all__ = ["discover", "neuware_version", "parse_cnmon_info", "parse_cnmon_table", "parse_usage", "sample"]

TOOL = "cnmon"
_CARD = re.compile(r"^\s*Card\s+(\d+)\s*$")
_FIELD = re.compile(r"^(\s+)([^:]+?)\s*:\s*(.*?)\s*$")
_HEALTHY = ("good", "ok", "normal")
_ROW = re.compile(r"^\s*(\d+)\s+\S+\s+(\S+)\s+(\S+)\s*$")  # card, VF, name, firmware
_MEMORY = re.compile(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")


def discover(run: Runner, which: Which) -> tuple[list[DeviceFacts], list[str]]:
    """Cambricon MLUs on this machine; ``([], [])`` where cnmon is not installed."""
    path = which(TOOL)
    if path is None:
        return [], []
    cards, note = query(run, TOOL, [path], parse_cnmon_table)
    if cards is None:
        return [], [note]
    details, note = query(run, TOOL, [path, "info"], parse_cnmon_info)
    runtime = neuware_version()
    by_index = {detail.index: detail for detail in details or []}
    devices = [_with_details(device, by_index.get(device.index), runtime) for device, _usage in cards]
    return devices, [note] if note else []


def sample(indexes: list[int], run: Runner, which: Which) -> list[DeviceUsage]:
    """Utilisation and memory in use of the given cards; none where cnmon does not answer."""
    path = which(TOOL)
    if path is None:
        return []
    usage, _ = query(run, TOOL, [path], parse_usage)
    return [u for u in usage or [] if u.index in indexes]


def neuware_version(root: str | None = None) -> str | None:
    """``3.9.0`` from ``$NEUWARE_HOME/version.txt`` (``Neuware Version 3.9.0``); None without Neuware."""
    try:
        text = (Path(root or os.environ.get("NEUWARE_HOME") or "/usr/local/neuware") / "version.txt").read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = re.search(r"Neuware Version\s+v?(\d+(?:\.\w+)*)", text)
    return found.group(1) if found else None


def parse_cnmon_table(text: str) -> list[tuple[DeviceFacts, DeviceUsage]]:
    """Each card of cnmon's summary table: what it is, and what it is doing."""
    header = re.search(r"CNMON v\S+\s+Driver v(\S+)", text)
    cards: list[tuple[DeviceFacts, DeviceUsage]] = []
    lines = text.split("Processes:")[0].splitlines()
    for line, below in zip(lines, lines[1:]):
        cells = line.split("|")[1:-1]
        row = _ROW.match(cells[0]) if len(cells) == 3 else None
        if row is None or any(device.index == int(row.group(1)) for device, _ in cards):
            continue  # not a card's first row (a VF's rows follow their card's)
        index, middle = int(row.group(1)), cells[1]
        memory = _MEMORY.search(below)
        util = re.search(r"(\d+(?:\.\d+)?)\s*%", cells[2])
        column = re.search(r"v\d\S*", middle)  # 4.x: "On          v4.20.11"
        driver = header.group(1) if header else _version(column.group(0) if column else None)
        cards.append((
            DeviceFacts(index=index, vendor="cambricon", model=row.group(2), memory_mib=int(memory.group(2)) if memory else 0,
                        driver_version=driver, firmware_version=_version(row.group(3)),
                        pci_bus=pci_address_in(middle)),
            DeviceUsage(index, float(util.group(1)) if util else None, float(memory.group(1)) if memory else None),
        ))
    if not cards:
        raise ValueError("no card rows in cnmon's table")
    return cards


def parse_cnmon_info(text: str) -> list[DeviceFacts]:
    """Each card of ``cnmon info``: product, memory, driver, firmware, PCI address and health."""
    return [
        DeviceFacts(
            index=index,
            vendor="cambricon",
            model=fields.get("Product Name", "unknown"),
            memory_mib=_number(fields.get("Physical Memory Usage/Total")) or 0,
            driver_version=_version(fields.get("Driver")),
            firmware_version=_version(fields.get("Firmware")),
            pci_bus=_pci(fields),
            health=_health(fields),
        )
        for index, fields in _cards(text).items()
    ]


def parse_usage(text: str) -> list[DeviceUsage]:
    """Each card's utilisation and memory in use, from cnmon's summary table."""
    return [usage for _device, usage in parse_cnmon_table(text)]


def _with_details(device: DeviceFacts, details: DeviceFacts | None, runtime: str | None) -> DeviceFacts:
    """A card of the table with what ``cnmon info`` adds: its health, and its bus where the table has none."""
    device = replace(device, runtime=f"neuware {runtime}" if runtime else None)
    if details is None:
        return device
    return replace(device, health=details.health, pci_bus=device.pci_bus or details.pci_bus,
                   driver_version=device.driver_version or details.driver_version)


def _cards(text: str) -> dict[int, dict[str, str]]:
    """``{card: {"Physical Memory Usage/Total": "24576 MiB", ...}}``: a field is named by its sections' path."""
    cards: dict[int, dict[str, str]] = {}
    fields: dict[str, str] | None = None
    sections: list[tuple[int, str]] = []  # (indent, name) of the sections the next line may be in
    for line in text.splitlines():
        if card := _CARD.match(line):
            fields = cards[int(card.group(1))] = {}
            sections = []
            continue
        field = _FIELD.match(line)
        if fields is None or field is None:
            continue
        indent, key, value = len(field.group(1)), field.group(2), field.group(3)
        while sections and sections[-1][0] >= indent:
            sections.pop()
        if value:
            fields.setdefault("/".join([name for _, name in sections] + [key]), value)
        else:
            sections.append((indent, key))
    if not cards:
        raise ValueError("no 'Card N' block in the output")
    return cards


def _health(fields: dict[str, str]) -> str | None:
    state = fields.get("Health State/Device") or fields.get("Health State")
    return state if state and state.lower() not in _HEALTHY else None


def _pci(fields: dict[str, str]) -> str | None:
    try:
        domain, bus, device, function = (int(fields[f"PCI/{key}"], 16) for key in ("Domain ID", "Bus num", "Device", "Function"))
    except (KeyError, ValueError):
        return None
    return f"{domain:04x}:{bus:02x}:{device:02x}.{function:x}"


def _number(value: str | None) -> int | None:
    found = re.match(r"\s*(\d+)", value or "")
    return int(found.group(1)) if found else None


def _version(value: str | None) -> str | None:
    return value.removeprefix("v") if value and value.upper() != "N/A" else None
