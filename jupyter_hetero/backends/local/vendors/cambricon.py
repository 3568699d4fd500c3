"""Cambricon MLUs (MLU370, MLU590) through ``cnmon info``.

``cnmon info`` prints a block per card: ``Card N`` then indented ``Key : value`` lines, a key with no value
opening a section (``Physical Memory Usage``, ``PCI``). The same output gives what a card is and what it is
doing, so discovery and sampling read one command.
"""

from __future__ import annotations

import re

from . import DeviceFacts, DeviceUsage, Runner, Which
from ._tool import query

__all__ = ["discover", "parse_cnmon_info", "parse_usage", "sample"]

TOOL = "cnmon"
_CARD = re.compile(r"^\s*Card\s+(\d+)\s*$")
_FIELD = re.compile(r"^(\s+)([^:]+?)\s*:\s*(.*?)\s*$")
_HEALTHY = ("good", "ok", "normal")


def discover(run: Runner, which: Which) -> tuple[list[DeviceFacts], list[str]]:
    """Cambricon MLUs on this machine; ``([], [])`` where cnmon is not installed."""
    path = which(TOOL)
    if path is None:
        return [], []
    devices, note = query(run, TOOL, [path, "info"], parse_cnmon_info)
    return (devices, []) if devices is not None else ([], [note])


def sample(indexes: list[int], run: Runner, which: Which) -> list[DeviceUsage]:
    """Utilisation and memory in use of the given cards; none where cnmon does not answer."""
    path = which(TOOL)
    if path is None:
        return []
    usage, _ = query(run, TOOL, [path, "info"], parse_usage)
    return [u for u in usage or [] if u.index in indexes]


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
    """Each card's average MLU utilisation and physical memory in use, from ``cnmon info``."""
    return [
        DeviceUsage(index, _number(fields.get("Utilization/MLU Average")), _number(fields.get("Physical Memory Usage/Used")))
        for index, fields in _cards(text).items()
    ]


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
