"""AMD Instinct and Radeon GPUs: the ``amdsmi`` Python bindings where they import, else ``rocm-smi --json``.

What is read, and from which command (``rocm-smi``):

- ``--showproductname --showmeminfo vram --showdriverversion --showbus --showvbios --json``: model
  (``Card Series`` in ROCm 6, ``Card series`` in ROCm 5, ``Device Name`` or ``Card SKU`` where those are
  missing), VRAM total, driver (``system.Driver version``), PCI bus, VBIOS.
- ``--showtopo --json``: NUMA node per card and the link type between every pair of cards: cards joined
  by ``XGMI`` share a ``link_domain`` (an Infinity Fabric hive). Where that answer holds no JSON (rocm-smi
  answers some ``--show`` flags with ``WARNING: No JSON data to report``, ROCm/legacy-rocm-build#4374),
  ``--showtopo`` alone: its tables, which ``parse_topology_tables`` reads (as users paste them, and as
  Hygon's fork prints them).
- ``--showuse --showmemuse --showmeminfo vram --json``: ``GPU use (%)`` and VRAM in use (bytes, or the
  percentage ROCm 5 calls ``GPU memory use (%)`` and ROCm 6 ``GPU Memory Allocated (VRAM%)``).
- The ROCm release from ``$ROCM_PATH/.info/version`` (``/opt/rocm`` by default).

Keys are matched without regard to case: ROCm 5 and 6 spell several of them differently.

Through ``amdsmi``: the same facts from ``amdsmi_get_gpu_asic_info``, ``..._vram_info`` (MB), ``..._driver_info``,
``..._vbios_info``, ``..._device_bdf``, ``amdsmi_topo_get_numa_node_number`` and ``amdsmi_topo_get_link_type``;
use from ``amdsmi_get_gpu_activity`` and ``amdsmi_get_gpu_memory_usage`` (VRAM, bytes).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import DeviceFacts, DeviceUsage, Runner, Which, failure, library_answer
from .links import link_domains, numa_node_of, pci_bus_id

__all__ = ["discover", "parse_rocm_smi", "parse_topology", "parse_topology_tables", "parse_usage", "rocm_version",
           "sample"]

TOOL = "rocm-smi"
DISCOVER_ARGS = ["--showproductname", "--showmeminfo", "vram", "--showdriverversion", "--showbus", "--showvbios",
                 "--json"]
TOPO_ARGS = ["--showtopo", "--json"]
TOPO_TABLE_ARGS = ["--showtopo"]
USAGE_ARGS = ["--showuse", "--showmemuse", "--showmeminfo", "vram", "--json"]
_MIB = 1024 * 1024
_MISSING = ("", "n/a", "na", "unknown", "none")
_LINK = re.compile(r"\(topology\) link type between drm devices (\d+) and (\d+)")
# A card in the tables: GPU0, GPU[0] or GPU 0 (rocm-smi's releases), HCU[0] or DCU[0] (Hygon's fork).
_CARD = r"(?:GPU|HCU|DCU) ?\[?(\d+)\]?"
_CARD_CELL = re.compile(rf"{_CARD}")
_NUMA_LINE = re.compile(rf"{_CARD}\s*:\s*(?:\(Topology\)\s*)?Numa Node:\s*(-?\d+)", re.IGNORECASE)


def parse_rocm_smi(text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """(driver, cards) from ``rocm-smi ... --json``: each card's facts, keys lower-cased, with its ``index``."""
    data = _json(text)
    system = _lower(data.get("system") or {})
    cards = []
    for key, card in data.items():
        if key.lower().startswith("card") and key[4:].isdigit() and isinstance(card, dict):
            cards.append({**_lower(card), "index": int(key[4:])})
    return _value(system, "driver version"), sorted(cards, key=lambda card: card["index"])


def parse_topology(text: str) -> tuple[list[tuple[int, int]], dict[int, int]]:
    """(pairs of cards joined by XGMI, NUMA node per card) from ``rocm-smi --showtopo --json``."""
    data = _json(text)
    pairs = []
    for key, value in _lower(data.get("system") or {}).items():
        link = _LINK.fullmatch(key)
        if link and str(value).upper() == "XGMI":
            pairs.append((int(link.group(1)), int(link.group(2))))
    numa = {}
    for key, card in data.items():
        if key.lower().startswith("card") and isinstance(card, dict):
            node = _int(_value(_lower(card), "(topology) numa node"))
            if node is not None and node >= 0:
                numa[int(key[4:])] = node
    return pairs, numa


def parse_topology_tables(text: str) -> tuple[list[tuple[int, int]], dict[int, int]]:
    """(pairs of cards joined by XGMI, NUMA node per card) from the tables ``--showtopo`` prints without
    ``--json``: the ``Link Type between two GPUs`` matrix (``… between HCUs`` in Hygon's fork, its title on a
    line of its own) and the ``Numa Node`` lines. Other matrices (weight, hops) and banners are passed over."""
    section, columns, pairs, numa = "", [], [], {}
    for line in text.splitlines():
        cells = line.split()
        if not cells:
            continue
        numa_line = _NUMA_LINE.match(line.strip())
        if numa_line:
            if int(numa_line.group(2)) >= 0:
                numa[int(numa_line.group(1))] = int(numa_line.group(2))
        elif not _CARD_CELL.fullmatch(cells[0]):  # a banner, a title, or a warning: a new section or none
            title = line.strip().strip("=").strip()
            if title:
                section, columns = title.lower(), []
        elif section.startswith("link type"):
            indexes = [_CARD_CELL.fullmatch(cell) for cell in cells]
            if all(indexes):
                columns = [int(index.group(1)) for index in indexes]
            else:
                row = int(indexes[0].group(1))
                pairs += [(row, column) for column, kind in zip(columns, cells[1:])
                          if kind.upper() == "XGMI" and row < column]
    return pairs, numa


def parse_usage(text: str) -> list[DeviceUsage]:
    """Each card's use now from ``rocm-smi --showuse --showmemuse --showmeminfo vram --json``."""
    _driver, cards = parse_rocm_smi(text)
    found = []
    for card in cards:
        used = _int(_value(card, "vram total used memory (b)"))
        total = _int(_value(card, "vram total memory (b)"))
        percent = _float(_value(card, "gpu memory allocated (vram%)", "gpu memory use (%)"))
        if used is None and percent is not None and total:
            used = round(total * percent / 100)
        found.append(DeviceUsage(card["index"], _float(_value(card, "gpu use (%)")),
                                 round(used / _MIB, 1) if used is not None else None))
    return found


def rocm_version(root: str | None = None) -> str | None:
    """``6.1`` from ``$ROCM_PATH/.info/version`` (``6.1.2-119``); None without a ROCm install."""
    try:
        text = (Path(root or os.environ.get("ROCM_PATH") or "/opt/rocm") / ".info" / "version").read_text("utf-8")
    except OSError:
        return None
    found = re.match(r"\s*(\d+)\.(\d+)", text)
    return f"{found.group(1)}.{found.group(2)}" if found else None


def discover(run: Runner, which: Which) -> tuple[list[DeviceFacts], list[str]]:
    """This machine's AMD GPUs: through ``amdsmi`` where it imports and answers, else ``rocm-smi``."""
    devices, notes = _discover_amdsmi()
    if devices:
        return devices, notes
    if which(TOOL) is None:
        return [], notes
    try:
        driver, cards = parse_rocm_smi(run([TOOL, *DISCOVER_ARGS]))
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return [], [*notes, f"{TOOL}: query failed ({failure(exc)})"]
    if not cards:
        return [], [*notes, f"{TOOL}: found no devices"]
    try:
        pairs, numa = _topology(run)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        pairs, numa = [], {}
        notes.append(f"{TOOL}: no topology ({failure(exc)})")
    domains = link_domains(pairs, "xgmi")
    runtime = rocm_version()
    devices = []
    for card in cards:
        index, total = card["index"], _int(_value(card, "vram total memory (b)"))
        bus = pci_bus_id(_value(card, "pci bus"))
        devices.append(DeviceFacts(
            index=index, vendor="amd",
            model=_value(card, "card series", "device name", "card sku") or "unknown",
            memory_mib=total // _MIB if total else 0, driver_version=driver,
            runtime=f"rocm {runtime}" if runtime else None, firmware_version=_value(card, "vbios version"),
            interconnect="xgmi" if index in domains else "pcie", link_domain=domains.get(index),
            numa_node=numa.get(index, numa_node_of(bus)), pci_bus=bus,
            health=None if total else f"{TOOL} reports no VRAM for card{index}",
        ))
    notes += [f"{TOOL}: {d.health}" for d in devices if d.health]
    return devices, notes


def sample(indexes: Sequence[int], run: Runner, which: Which) -> list[DeviceUsage]:
    """These GPUs' use now, from one ``rocm-smi`` call (or ``amdsmi``); [] when neither answers."""
    found = _sample_amdsmi(indexes)
    if found is not None:
        return found
    if which(TOOL) is None:
        return []
    try:
        usage = parse_usage(run([TOOL, *USAGE_ARGS]))
    except (OSError, subprocess.SubprocessError, ValueError):
        return []
    wanted = set(indexes)
    return [use for use in usage if use.index in wanted]


def _topology(run: Runner) -> tuple[list[tuple[int, int]], dict[int, int]]:
    """The hives and NUMA nodes from ``--showtopo --json``, else from the tables ``--showtopo`` prints."""
    try:
        return parse_topology(run([TOOL, *TOPO_ARGS]))
    except ValueError:
        return parse_topology_tables(run([TOOL, *TOPO_TABLE_ARGS]))


# -- the amdsmi bindings (ROCm 6+): what rocm-smi says, without a subprocess -------------------------------
# Each query may fail on its own (AMDSMI_STATUS_NOT_SUPPORTED on a part or driver that lacks it): that fact is
# left unknown, not the device lost. Only a library that cannot start, or lists no GPU, falls back to rocm-smi.

def _discover_amdsmi() -> tuple[list[DeviceFacts], list[str]]:
    amdsmi = _amdsmi()
    if amdsmi is None:
        return [], []
    try:
        amdsmi.amdsmi_init()
        try:
            handles = amdsmi.amdsmi_get_processor_handles()
            pairs, unanswered = _xgmi_pairs(amdsmi, handles)
            domains, runtime = link_domains(pairs, "xgmi"), rocm_version()
            devices = []
            for index, handle in enumerate(handles):
                vram = library_answer(amdsmi.amdsmi_get_gpu_vram_info, handle) or {}
                memory_mib = int(vram.get("vram_size") or 0)  # MB, as amd-smi static prints it
                bus = pci_bus_id(library_answer(amdsmi.amdsmi_get_gpu_device_bdf, handle))
                devices.append(DeviceFacts(
                    index=index, vendor="amd",
                    model=_field(amdsmi.amdsmi_get_gpu_asic_info, handle, "market_name") or "unknown",
                    memory_mib=memory_mib,
                    driver_version=_field(amdsmi.amdsmi_get_gpu_driver_info, handle, "driver_version"),
                    runtime=f"rocm {runtime}" if runtime else None,
                    firmware_version=_field(amdsmi.amdsmi_get_gpu_vbios_info, handle, "version"),
                    interconnect="xgmi" if index in domains else "pcie", link_domain=domains.get(index),
                    numa_node=library_answer(amdsmi.amdsmi_topo_get_numa_node_number, handle), pci_bus=bus,
                    health=None if memory_mib else f"amdsmi reports no VRAM for GPU {index}",
                ))
        finally:
            amdsmi.amdsmi_shut_down()
    except Exception as exc:  # noqa: BLE001 - a library that loads but cannot reach the driver: try the tool
        return [], [f"amdsmi: query failed ({_one_line(exc)}); asking {TOOL}"]
    notes = [f"amdsmi: {d.health}" for d in devices if d.health]
    if unanswered:
        notes.append(f"amdsmi: no link type for {unanswered} GPU pair(s); those count as PCIe")
    return devices, notes


def _xgmi_pairs(amdsmi: Any, handles: Sequence[Any]) -> tuple[list[tuple[int, int]], int]:
    """The GPU pairs joined by XGMI, and how many pairs the library would not say."""
    xgmi = getattr(getattr(amdsmi, "AmdSmiIoLinkType", None), "XGMI", None)
    pairs, unanswered = [], 0
    for i in range(len(handles)):
        for j in range(i + 1, len(handles)):
            link = library_answer(amdsmi.amdsmi_topo_get_link_type, handles[i], handles[j])
            if link is None:
                unanswered += 1
            elif xgmi is not None and link.get("type") == xgmi:
                pairs.append((i, j))
    return pairs, unanswered


def _sample_amdsmi(indexes: Sequence[int]) -> list[DeviceUsage] | None:
    amdsmi = _amdsmi()
    if amdsmi is None:
        return None
    try:
        amdsmi.amdsmi_init()
        try:
            handles = amdsmi.amdsmi_get_processor_handles()
            vram = getattr(getattr(amdsmi, "AmdSmiMemoryType", None), "VRAM", None)
            found = []
            for index in indexes:
                if index >= len(handles):
                    continue
                used = (library_answer(amdsmi.amdsmi_get_gpu_memory_usage, handles[index], vram)
                        if vram is not None else None)
                found.append(DeviceUsage(
                    index, _float(_field(amdsmi.amdsmi_get_gpu_activity, handles[index], "gfx_activity")),
                    used / _MIB if isinstance(used, int | float) else None))
            return found
        finally:
            amdsmi.amdsmi_shut_down()
    except Exception:  # noqa: BLE001 - fall back to rocm-smi
        return None


def _field(query: Any, handle: Any, key: str) -> str | None:
    """One key of a query's dict, with the library's "" and "N/A" (0xFFFF) as None."""
    answer = library_answer(query, handle)
    return _value(answer, key) if isinstance(answer, dict) else None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _amdsmi():
    try:
        import amdsmi  # noqa: PLC0415 - optional: ships with ROCm, not on PyPI for every release
    except Exception:  # noqa: BLE001 - ImportError, or an OSError when libamd_smi.so is missing
        return None
    return amdsmi


# -- rocm-smi's JSON --------------------------------------------------------------------------------------

def _json(text: str) -> dict[str, Any]:
    """The JSON object in a rocm-smi answer, past any warning lines printed before it."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON in the answer")
    data, _end = json.JSONDecoder().raw_decode(text[start:])
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    return data


def _lower(card: dict[str, Any]) -> dict[str, Any]:
    return {str(key).strip().lower(): value for key, value in card.items()}


def _value(card: dict[str, Any], *keys: str) -> str | None:
    """The first of ``keys`` the card has a real value for ("N/A" is none)."""
    for key in keys:
        value = card.get(key)
        if value is not None and str(value).strip().lower() not in _MISSING:
            return str(value).strip()
    return None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _int(text: str | None) -> int | None:
    number = _float(text)
    return int(number) if number is not None else None
