"""Intel Data Center GPUs (Max 1550/1100, Flex 170) through ``xpu-smi``.

``xpu-smi discovery --json`` lists the devices; a device's details (memory, driver, firmware) come from
``xpu-smi discovery -d N --json`` where the list leaves them out, as xpu-smi 1.x does. ``xpu-smi topology -m``
says which cards share Xe Link, ``xpu-smi -v`` the Level Zero version, ``xpu-smi stats -d N --json`` the usage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from statistics import fmean
from typing import Any, TypeVar

from . import DeviceFacts, DeviceUsage, Runner, Which
from ._tool import query

__all__ = ["discover", "parse_device_list", "parse_level_zero", "parse_stats", "parse_topology", "sample"]

TOOL = "xpu-smi"
_MIB = 1024 * 1024
_UTILIZATION = "XPUM_STATS_GPU_UTILIZATION"
_MEMORY_USED = "XPUM_STATS_MEMORY_USED"  # MiB

T = TypeVar("T")


def discover(run: Runner, which: Which) -> tuple[list[DeviceFacts], list[str]]:
    """Intel GPUs on this machine; ``([], [])`` where xpu-smi is not installed."""
    path = which(TOOL)
    if path is None:
        return [], []
    records, note = query(run, TOOL, [path, "discovery", "--json"], parse_device_list)
    if records is None:
        return [], [note]
    notes: list[str] = []

    def ask(argv: list[str], parse: Callable[[str], T]) -> T | None:
        answer, note = query(run, TOOL, [path, *argv], parse)
        notes.extend([note] if note else [])
        return answer

    for record in records:
        if "memory_physical_size_byte" not in record:
            record.update(ask(["discovery", "-d", str(record["device_id"]), "--json"], _parse_detail) or {})
    # Topology and version only add to what the list says; without them a device is still a device.
    domains = ask(["topology", "-m"], parse_topology) or {}
    runtime = ask(["-v"], parse_level_zero)
    return [_facts(record, runtime, domains.get(record["device_id"])) for record in records], notes


def sample(indexes: list[int], run: Runner, which: Which) -> list[DeviceUsage]:
    """Utilisation and memory in use of the given devices; those that do not answer are left out."""
    path = which(TOOL)
    if path is None:
        return []
    answers = (query(run, TOOL, [path, "stats", "-d", str(index), "--json"], parse_stats)[0] for index in indexes)
    return [usage for usage in answers if usage is not None]


def parse_device_list(text: str) -> list[dict[str, Any]]:
    """The physical GPUs of ``xpu-smi discovery --json``; SR-IOV virtual functions are not schedulable devices."""
    data = _json(text)
    return [
        {**record, "device_id": int(record["device_id"])}
        for record in data["device_list"]
        if str(record.get("device_function_type", "physical")).lower() != "virtual"
    ]


def parse_topology(text: str) -> dict[int, str]:
    """Each card linked to another by Xe Link (``XL<lanes>``, or ``XL*`` through the other tile) and its link domain.

    Rows and columns name tiles (``GPU 1/0``); cards linked directly or through others share one domain.
    """
    lines = [line for line in text.splitlines() if "|" in line]
    if not lines:
        raise ValueError("no topology matrix")
    columns = [_card(cell) for cell in lines[0].split("|")]
    domains: dict[int, set[int]] = {}
    for line in lines[1:]:
        cells = line.split("|")
        row = _card(cells[0])
        for column, cell in zip(columns[1:], cells[1:]):
            if row is not None and column is not None and row != column and cell.strip().startswith("XL"):
                merged = domains.get(row, {row}) | domains.get(column, {column})
                domains.update(dict.fromkeys(merged, merged))
    return {card: f"xelink-{min(domain)}" for card, domain in domains.items()}


def parse_level_zero(text: str) -> str | None:
    """``level-zero 1.6.2`` from ``xpu-smi -v`` (``Level Zero Version: 1.6.2``; 2.x prints ``Level Zero: 1.32.0``)."""
    found = re.search(r"Level Zero(?: Version)?:\s*([0-9][\w.]*)", text)
    return f"level-zero {found.group(1)}" if found else None


def parse_stats(text: str) -> DeviceUsage:
    """One device's usage from ``xpu-smi stats -d N --json``; a card of two tiles may report them per tile only."""
    data = _json(text)
    device = {m["metrics_type"]: float(m["value"]) for m in data.get("device_level", [])}
    tiles = [{m["metrics_type"]: float(m["value"]) for m in tile.get("data_list", [])} for tile in data.get("tile_level", [])]
    return DeviceUsage(
        index=int(data["device_id"]),
        util_pct=_metric(_UTILIZATION, device, tiles, fmean),  # the device's share of time busy: the tiles' mean
        memory_used_mib=_metric(_MEMORY_USED, device, tiles, sum),
    )


def _metric(name: str, device: dict[str, float], tiles: list[dict[str, float]],
            combine: Callable[[list[float]], float]) -> float | None:
    if name in device:
        return device[name]
    per_tile = [tile[name] for tile in tiles if name in tile]
    return combine(per_tile) if per_tile else None


def _parse_detail(text: str) -> dict[str, Any]:
    data = _json(text)
    data.pop("device_id", None)  # the list's id is the one to keep
    return data


def _facts(record: dict[str, Any], runtime: str | None, link_domain: str | None) -> DeviceFacts:
    return DeviceFacts(
        index=record["device_id"],
        vendor="intel",
        model=str(record.get("device_name") or "unknown").removeprefix("Intel(R) ").strip(),
        memory_mib=int(record.get("memory_physical_size_byte") or 0) // _MIB,
        driver_version=_known(record.get("driver_version")),
        runtime=runtime,
        firmware_version=_known(record.get("gfx_firmware_version")),
        interconnect="xelink" if link_domain else "pcie", link_domain=link_domain,
        pci_bus=_known(record.get("pci_bdf_address")),
        health=_health(record),
    )


def _health(record: dict[str, Any]) -> str | None:
    # xpu-smi 1.x reports a card Level Zero cannot bring up as "GPU in bad state" firmware; 2.x has device_state.
    for key, healthy in (("device_state", "normal"), ("gfx_firmware_status", "normal")):
        value = _known(record.get(key))
        if value is not None and value.lower() != healthy:
            return value
    return None


def _card(cell: str) -> int | None:
    found = re.match(r"\s*GPU\s+(\d+)", cell)
    return int(found.group(1)) if found else None


def _known(value: Any) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text if text and text.lower() not in ("unknown", "n/a") else None


def _json(text: str) -> dict[str, Any]:
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    if "error" in data:
        raise ValueError(f"xpu-smi says: {data['error']}")
    return data
