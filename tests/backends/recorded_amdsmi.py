"""A stand-in for AMD's ``amdsmi`` Python bindings that answers from recorded outputs, for machines without ROCm.

The bindings are a ctypes library, so they cannot be replayed at the wire the way a tool's text is; this module
offers the functions ``vendors.amd`` calls, with the return shapes of ``py-interface/amdsmi_interface.py``
(ROCm/amdsmi, amd_smi_lib for ROCm 6.3.0), and takes every value from a recording:

- ``amd-smi static`` prints what ``amdsmi_get_gpu_asic_info``, ``..._device_bdf``, ``..._driver_info``,
  ``..._vbios_info``, ``..._vram_info`` (``SIZE`` in MB) and ``amdsmi_topo_get_numa_node_number`` return; the
  CLI prints an empty VBIOS string as ``N/A``, so ``N/A`` is given back as ``""``;
- ``amd-smi topology --json`` gives ``amdsmi_topo_get_link_type``'s ``type`` per pair;
- the bindings' own integration run prints ``amdsmi_get_gpu_activity`` and ``amdsmi_get_gpu_memory_usage`` of
  processor 0, so only processor 0 answers them.

What a recording does not hold is answered as the library answers a query the driver cannot serve: an
``AmdSmiLibraryException`` with ``AMDSMI_STATUS_NOT_SUPPORTED``.
"""

from __future__ import annotations

import json
import re
import types
from enum import IntEnum

NOT_SUPPORTED, INIT_ERROR = (2, "AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported"), (
    18, "AMDSMI_STATUS_INIT_ERROR - Initialization error")


class AmdSmiLibraryException(Exception):
    def __init__(self, status: tuple[int, str]):
        self.err_code, self.err_info = status
        super().__init__(f"Error code:\n\t{self.err_code} | {self.err_info}")  # as the bindings word it


class AmdSmiIoLinkType(IntEnum):
    UNDEFINED = 0
    PCIEXPRESS = 1
    XGMI = 2


class AmdSmiMemoryType(IntEnum):
    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


def static_of(text: str) -> list[dict[str, dict[str, str]]]:
    """Each ``GPU: n`` block of ``amd-smi static``'s text as {section: {key: value}} (first level only)."""
    gpus: list[dict[str, dict[str, str]]] = []
    section = None
    for line in text.splitlines():
        if line.startswith("GPU: "):
            gpus.append({})
        elif gpus and re.match(r"^ {4}\S", line):
            name, _, value = line.strip().partition(":")
            section = gpus[-1].setdefault(name, {"": value.strip()})
        elif gpus and section is not None and re.match(r"^ {8}\S", line):
            name, _, value = line.strip().partition(":")
            section[name] = value.strip()
        elif not line.strip() or not line.startswith(" "):
            section = None
    return gpus


def links_of(text: str) -> dict[tuple[int, int], str]:
    """``amd-smi topology --json``'s link type per (gpu, peer), from a copy that may elide entries with ``...``
    and keep the trailing commas of a hand-cut example."""
    body = text[text.index("["):]
    body = re.sub(r"^\s*\.\.\.\s*$", "", body, flags=re.MULTILINE)
    body = re.sub(r",(\s*[}\]])", r"\1", body)
    return {(gpu["gpu"], link["gpu"]): link["link_type"] for gpu in json.loads(body) for link in gpu["links"]}


def run_of(text: str) -> dict[str, str]:
    """The integration run's printed values of processor 0: ``engine_usage['gfx_activity']`` -> ``"9 %"``,
    ``memory_usage for VRAM`` -> ``"17104896"``."""
    found = re.findall(r"^ {2}(\w+(?:\['\w+'\])?(?: for \w+)?) is: (.*)$", text, flags=re.MULTILINE)
    return {name: value.strip() for name, value in reversed(found)}  # the first print of a name wins


def machine(*, static: str = "", links: str = "", run: str = "", init_fails: bool = False) -> types.ModuleType:
    """An ``amdsmi`` module for one recorded machine."""
    gpus, pairs, printed = static_of(static), links_of(links) if links else {}, run_of(run)
    handles = list(range(len(gpus) or (1 if printed else 0)))

    def field(handle: int, section: str, key: str) -> str:
        value = gpus[handle].get(section, {}).get(key) if handle < len(gpus) else None
        if value is None:
            raise AmdSmiLibraryException(NOT_SUPPORTED)
        return "" if value == "N/A" else value

    def printed_value(handle: int, name: str) -> str:
        if handle != 0 or name not in printed:  # the run printed processor 0 alone
            raise AmdSmiLibraryException(NOT_SUPPORTED)
        return printed[name]

    def init() -> None:
        if init_fails:
            raise AmdSmiLibraryException(INIT_ERROR)

    def link_type(source: int, peer: int) -> dict[str, int]:
        kind = pairs.get((source, peer)) or pairs.get((peer, source))
        if kind is None:
            raise AmdSmiLibraryException(NOT_SUPPORTED)
        return {"hops": 1, "type": AmdSmiIoLinkType.XGMI if kind == "XGMI" else AmdSmiIoLinkType.PCIEXPRESS}

    def activity(handle: int) -> dict[str, object]:
        value = printed_value(handle, "engine_usage['gfx_activity']").removesuffix(" %")
        return {"gfx_activity": "N/A" if value == "N/A" else int(value)}

    def memory_usage(handle: int, kind: AmdSmiMemoryType) -> int:
        return int(printed_value(handle, f"memory_usage for {kind.name}"))

    module = types.ModuleType("amdsmi")
    module.__dict__.update(
        AmdSmiLibraryException=AmdSmiLibraryException, AmdSmiIoLinkType=AmdSmiIoLinkType,
        AmdSmiMemoryType=AmdSmiMemoryType, amdsmi_init=init, amdsmi_shut_down=lambda: None,
        amdsmi_get_processor_handles=lambda: list(handles),
        amdsmi_get_gpu_asic_info=lambda h: {"market_name": field(h, "ASIC", "MARKET_NAME")},
        amdsmi_get_gpu_device_bdf=lambda h: field(h, "BUS", "BDF"),
        amdsmi_get_gpu_driver_info=lambda h: {"driver_name": field(h, "DRIVER", "NAME"),
                                              "driver_version": field(h, "DRIVER", "VERSION")},
        amdsmi_get_gpu_vbios_info=lambda h: {"version": field(h, "VBIOS", "VERSION")},
        amdsmi_get_gpu_vram_info=lambda h: {"vram_size": int(field(h, "VRAM", "SIZE").removesuffix(" MB"))},
        amdsmi_topo_get_numa_node_number=lambda h: int(field(h, "NUMA", "NODE")),
        amdsmi_topo_get_link_type=link_type, amdsmi_get_gpu_activity=activity,
        amdsmi_get_gpu_memory_usage=memory_usage,
    )
    return module
