"""Discover this machine: psutil for CPU and memory, then NVML, ``npu-smi`` and ``rocm-smi``.

Each accelerator source is optional. A missing library or tool is a fact recorded in the
node's ``notes``, never an error: a laptop without a GPU is a perfectly good node.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import socket
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import yaml
from pydantic import ValidationError

from ...capability import Accelerator, NodeCapability

__all__ = [
    "EmulatedNodesError",
    "discover_local_node",
    "load_emulated_nodes",
    "parse_npu_smi",
    "parse_rocm_smi",
    "probe_nvml",
]

_MIB = 1024 * 1024
Runner = Callable[[list[str]], str]


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=10, check=True).stdout


def discover_local_node(name: str | None = None, *, run: Runner = _run,
                        which: Callable[[str], str | None] = shutil.which) -> NodeCapability:
    """This machine as a node; accelerators from the first source that finds any."""
    notes: list[str] = []
    accelerator = None
    for probe in (probe_nvml, lambda: _probe_tool("npu-smi", ["npu-smi", "info"], parse_npu_smi, run, which),
                  lambda: _probe_tool("rocm-smi", ["rocm-smi", "--showproductname", "--showmeminfo", "vram",
                                                   "--showdriverversion", "--json"], parse_rocm_smi, run, which)):
        found, note = probe()
        if note:
            notes.append(note)
        if found is not None and accelerator is None:
            accelerator = found
    hostname = name or socket.gethostname() or "localhost"
    return NodeCapability(
        name=hostname,
        cpu_milli=(psutil.cpu_count(logical=True) or 1) * 1000,
        memory_mib=psutil.virtual_memory().total // _MIB,
        arch=platform.machine() or "unknown",
        labels={"kubernetes.io/hostname": hostname, "kubernetes.io/arch": _k8s_arch(platform.machine())},
        accelerator=accelerator,
        emulated=False,
        source="local",
        notes=notes,
    )


def _k8s_arch(machine: str) -> str:
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def _group(devices: list[dict[str, Any]], notes_prefix: str) -> tuple[Accelerator | None, str | None]:
    """One accelerator group from per-device facts; a mixed machine keeps its most common model."""
    if not devices:
        return None, None
    counts = Counter(d["model"] for d in devices)
    model, count = counts.most_common(1)[0]
    first = next(d for d in devices if d["model"] == model)
    note = None
    if len(counts) > 1:
        others = ", ".join(f"{n}x {m}" for m, n in counts.items() if m != model)
        note = f"{notes_prefix}: mixed models on one node; scheduling uses {count}x {model}, not {others}"
    return Accelerator(count=count, **{k: v for k, v in first.items() if k != "index"}), note


def probe_nvml() -> tuple[Accelerator | None, str | None]:
    """NVIDIA GPUs through NVML (the ``nvidia-ml-py`` package), when the library loads."""
    try:
        import pynvml  # noqa: PLC0415  (optional dependency)
    except ImportError:
        return None, "nvml: nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError subclasses vary by driver; any failure means "no NVIDIA GPU here"
        return None, f"nvml: not available ({exc})"
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
        devices = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            devices.append({
                "index": index,
                "vendor": "nvidia",
                "model": _text(pynvml.nvmlDeviceGetName(handle)).removeprefix("NVIDIA ").strip(),
                "memory_mib": pynvml.nvmlDeviceGetMemoryInfo(handle).total // _MIB,
                "driver_version": driver,
                "runtime": f"cuda {cuda // 1000}.{(cuda % 1000) // 10}",
                "interconnect": "nvlink" if _has_nvlink(pynvml, handle) else "pcie",
                "sharing": "milli",
            })
        return _group(devices, "nvml")
    except Exception as exc:  # a half-working driver is still a fact to show, not a crash
        return None, f"nvml: query failed ({exc})"
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutdown failures change nothing we report
            pass


def _has_nvlink(pynvml, handle) -> bool:
    try:
        return bool(pynvml.nvmlDeviceGetNvLinkState(handle, 0))
    except Exception:  # noqa: BLE001 - GPUs without NVLink raise NotSupported
        return False


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _probe_tool(tool: str, argv: list[str], parse: Callable[[str], list[dict[str, Any]]], run: Runner,
                which: Callable[[str], str | None]) -> tuple[Accelerator | None, str | None]:
    if which(tool) is None:
        return None, None  # the tool's absence is the normal case on most machines: nothing to report
    try:
        devices = parse(run(argv))
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as exc:
        return None, f"{tool}: query failed ({exc})"
    if not devices:
        return None, f"{tool}: found no devices"
    return _group(devices, tool)


_NPU_VERSION = re.compile(r"Version:\s*([0-9][\w.]*)")
_NPU_ROW = re.compile(r"^\|\s*(\d+)\s+(\S+)\s*\|")
_NPU_HBM = re.compile(r"(\d+)\s*/\s*(\d+)\s*\|?\s*$")


def parse_npu_smi(text: str) -> list[dict[str, Any]]:
    """Devices from ``npu-smi info``: a row ``| 0  910B3 | ...`` then a row whose last cell is ``used / total`` MB."""
    version = _NPU_VERSION.search(text)
    devices: list[dict[str, Any]] = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        row = _NPU_ROW.match(line)
        if not row:
            continue
        memory = 0
        for follow in lines[number + 1 : number + 3]:
            hbm = _NPU_HBM.search(follow.rstrip())
            if hbm:
                memory = int(hbm.group(2))
        model = row.group(2)
        devices.append({
            "index": int(row.group(1)),
            "vendor": "ascend",
            "model": model if model.lower().startswith(("9", "3")) else model.removeprefix("Ascend"),
            "memory_mib": memory,
            "driver_version": version.group(1) if version else None,
            "runtime": None,
            "interconnect": "hccs" if model.startswith("910") else "pcie",
        })
    return devices


def parse_rocm_smi(text: str) -> list[dict[str, Any]]:
    """Devices from ``rocm-smi --showproductname --showmeminfo vram --showdriverversion --json``."""
    data = json.loads(text)
    driver = (data.get("system") or {}).get("Driver version")
    devices = []
    for key, card in sorted(data.items()):
        if not key.startswith("card"):
            continue
        total = card.get("VRAM Total Memory (B)")
        devices.append({
            "index": int(key.removeprefix("card")),
            "vendor": "amd",
            "model": card.get("Card series") or card.get("Card SKU") or "unknown",
            "memory_mib": int(total) // _MIB if total else 0,
            "driver_version": driver,
            "runtime": None,
            "interconnect": "xgmi" if "MI" in (card.get("Card series") or "") else "pcie",
        })
    return devices


class EmulatedNodesError(ValueError):
    """An emulated-nodes file that cannot be used; the message names the entry and field."""


def load_emulated_nodes(source: str | Path | list[dict[str, Any]]) -> list[NodeCapability]:
    """Emulated nodes from a YAML file (a list, or ``{nodes: [...]}``) or a list of dicts.

    An entry may carry ``replicas: N`` to declare N identical nodes named ``<name>-0..N-1``.
    """
    if isinstance(source, (str, Path)):
        data = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
        where = str(source)
    else:
        data, where = source, "emulated_nodes"
    if isinstance(data, dict):
        data = data.get("nodes")
    if not isinstance(data, list):
        raise EmulatedNodesError(f"{where}: expected a list of nodes (or a mapping with 'nodes')")
    nodes: list[NodeCapability] = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise EmulatedNodesError(f"{where}: nodes[{i}] is not a mapping")
        entry = dict(entry)
        replicas = entry.pop("replicas", None)
        names = [entry.get("name")] if replicas is None else [f"{entry.get('name')}-{n}" for n in range(int(replicas))]
        for name in names:
            try:
                nodes.append(NodeCapability.model_validate({**entry, "name": name, "emulated": True, "source": "emulated"}))
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(part) for part in first["loc"])
                raise EmulatedNodesError(f"{where}: nodes[{i}].{field}: {first['msg']}") from None
    seen = Counter(node.name for node in nodes)
    duplicated = [name for name, count in seen.items() if count > 1]
    if duplicated:
        raise EmulatedNodesError(f"{where}: node names used twice: {', '.join(duplicated)}")
    return nodes
