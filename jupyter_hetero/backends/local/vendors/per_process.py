"""What each process uses of the devices, as the vendors' tools say: the figures a workload owns, not its devices'.

    uses, note = process_usage("nvidia", run, which)   # [ProcessUse(pid=48213, index=1, memory_mib=30412.0, ...)]
    mine = [use for use in uses if use.pid in workload_pids]

The tools name host pids, which the server sees (a sandbox's own pid namespace numbers them differently inside,
not here). Per tool, one ask for every process of every device:

- NVIDIA: ``nvidia-smi --query-compute-apps=gpu_bus_id,pid,used_memory --format=csv,noheader,nounits`` (memory, MiB)
  and ``nvidia-smi pmon -c 1 -s u`` (SM utilisation per process and device, %), columns read by the header's names, which drivers add to (``jpg``, ``ofa``, ``fb``, ``ccpm``).
- AMD: ``amd-smi process --json`` (``vram_mem`` per process and GPU, bytes). Its ``usage.gfx`` is engine time in ns,
  a counter, not a share: utilisation is read only where the tool gives a percentage.
- Ascend: ``npu-smi info``'s process table (``Process memory(MB)`` per NPU and chip); npu-smi has no per-process
  utilisation.
- Intel: ``xpu-smi ps`` (``MEM``, kB, per process and device); no per-process utilisation either.

Parsers are pure functions of the tool's text, tested against recorded outputs (tests/data/vendors/processes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from . import Runner, Which
from ._tool import query

__all__ = ["ProcessUse", "SOURCE_OF", "parse_amd_smi_process", "parse_compute_apps", "parse_npu_smi_processes",
           "parse_pmon", "parse_xpu_smi_ps", "process_usage"]

_MIB = 1024 * 1024

# Which tool a family's per-process figures come from: a sample's ``source``.
SOURCE_OF = {"nvidia": "nvidia-smi", "amd": "amd-smi", "ascend": "npu-smi", "intel": "xpu-smi"}


@dataclass(frozen=True, slots=True)
class ProcessUse:
    """One process's use of one device (``index`` None where the tool names the device otherwise)."""

    pid: int
    index: int | None = None
    memory_mib: float | None = None
    util_pct: float | None = None


def _number(text: str) -> float | None:
    text = text.strip()
    return None if text in ("", "-", "N/A", "[N/A]", "[Not Supported]", "NA") else float(text)


def parse_compute_apps(text: str) -> list[ProcessUse]:
    """``--query-compute-apps=gpu_bus_id,pid,used_memory --format=csv,noheader,nounits``: one row per process and
    GPU; memory in MiB, ``[N/A]`` where the driver cannot say (MIG, some vGPUs)."""
    uses = []
    for line in text.splitlines():
        if not line.strip():
            continue
        _bus, pid, memory = (part.strip() for part in line.split(","))
        uses.append(ProcessUse(int(pid), memory_mib=_number(memory)))
    return uses


def parse_pmon(text: str) -> list[ProcessUse]:
    """``nvidia-smi pmon -c 1``: SM % (and ``fb`` MiB where printed) per process and GPU; ``-`` rows are idle GPUs."""
    columns: list[str] | None = None
    uses = []
    for line in text.splitlines():
        if line.startswith("#"):
            if columns is None:
                columns = line.lstrip("#").split()
            continue
        if columns is None or not line.strip():
            continue
        cells = dict(zip(columns, line.split(None, len(columns) - 1)))
        if cells.get("pid", "-") == "-":
            continue
        fb = cells.get("fb")
        uses.append(ProcessUse(int(cells["pid"]), int(cells["gpu"]), _number(fb) if fb is not None else None,
                               _number(cells.get("sm", "-"))))
    return uses


def parse_amd_smi_process(text: str) -> list[ProcessUse]:
    """``amd-smi process --json``: per GPU its processes' VRAM (bytes); a percentage ``gfx`` only where one is given."""
    data = json.loads(text[text.index("["):] if "[" in text else text)
    uses = []
    for gpu in data:
        for entry in gpu.get("process_list") or []:
            info = entry.get("process_info", entry)
            if not isinstance(info, dict) or "pid" not in info:
                continue  # "No running processes detected"
            vram = ((info.get("memory_usage") or {}).get("vram_mem") or {})
            gfx = ((info.get("usage") or {}).get("gfx") or {})
            uses.append(ProcessUse(int(info["pid"]), int(gpu["gpu"]),
                                   _bytes_mib(vram.get("value"), vram.get("unit", "B")),
                                   float(gfx["value"]) if gfx.get("unit") == "%" else None))
    return uses


def _bytes_mib(value, unit: str) -> float | None:
    if value in (None, "N/A"):
        return None
    scale = {"B": 1, "KB": 1024, "MB": _MIB, "GB": 1024 * _MIB}.get(str(unit).upper(), 1)
    return round(float(value) * scale / _MIB, 1)


_NPU_PROCESS_ROW = re.compile(r"^\|\s*(\d+)\s+(\d+)\s*\|\s*(\d+)\s*\|[^|]*\|\s*(\d+)\s*\|\s*$")


def parse_npu_smi_processes(text: str) -> list[ProcessUse]:
    """``npu-smi info``'s process table: NPU, chip, process id, name, memory (MB). The device index is the NPU's
    (on two-chip cards a chip's logical id is not printed there)."""
    uses = []
    in_table = False
    for line in text.splitlines():
        if "Process id" in line and "Process memory" in line:
            in_table = True
            continue
        if in_table and (row := _NPU_PROCESS_ROW.match(line)):
            uses.append(ProcessUse(int(row.group(3)), int(row.group(1)), float(row.group(4))))
    return uses


def parse_xpu_smi_ps(text: str) -> list[ProcessUse]:
    """``xpu-smi ps``: PID, Command, DeviceID, SHR and MEM (kB) columns, by the header's names."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].split()
    uses = []
    for line in lines[1:]:
        cells = line.split()
        if len(cells) != len(header):
            continue  # a command name with blanks: its numbers cannot be placed with certainty
        row = dict(zip(header, cells))
        memory = _number(row.get("MEM", "-"))
        uses.append(ProcessUse(int(row["PID"]), int(row["DeviceID"]),
                               round(memory / 1024, 1) if memory is not None else None))
    return uses


def _nvidia(run: Runner, tool: str) -> tuple[list[ProcessUse], str | None]:
    apps, note = query(run, "nvidia-smi", [tool, "--query-compute-apps=gpu_bus_id,pid,used_memory",
                                            "--format=csv,noheader,nounits"], parse_compute_apps)
    if apps is None:
        return [], note
    # pmon's SM share is per process and GPU; a failing pmon (older drivers, some vGPUs) leaves memory only.
    rates, _note = query(run, "nvidia-smi", [tool, "pmon", "-c", "1", "-s", "u"], parse_pmon)
    util: dict[int, float] = {}
    for use in rates or []:
        if use.util_pct is not None:
            util[use.pid] = util.get(use.pid, 0.0) + use.util_pct
    memory: dict[int, float | None] = {}
    for use in apps:
        if use.memory_mib is None:
            memory.setdefault(use.pid, None)
        else:
            memory[use.pid] = (memory.get(use.pid) or 0.0) + use.memory_mib
    return [ProcessUse(pid, None, used, util.get(pid)) for pid, used in memory.items()], None


_ASKS: dict[str, tuple[str, list[str], Callable[[str], list[ProcessUse]]]] = {
    "amd": ("amd-smi", ["process", "--json"], parse_amd_smi_process),
    "ascend": ("npu-smi", ["info"], parse_npu_smi_processes),
    "intel": ("xpu-smi", ["ps"], parse_xpu_smi_ps),
}


def process_usage(family: str, run: Runner, which: Which) -> tuple[list[ProcessUse], str | None]:
    """Every process's use of this family's devices, in one ask of its tool; ([], why) when it cannot be had."""
    tool_name = SOURCE_OF.get(family)
    if tool_name is None:
        return [], None
    tool = which(tool_name)
    if tool is None:
        return [], f"{tool_name} is not installed: the devices' use per process is not measured"
    if family == "nvidia":
        return _nvidia(run, tool)
    _name, argv, parse = _ASKS[family]
    uses, note = query(run, tool_name, [tool, *argv], parse)
    return (uses or []), note
