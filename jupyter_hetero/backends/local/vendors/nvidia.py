"""NVIDIA GPUs through NVML (the ``nvidia-ml-py`` package), when the library and the driver load.

Per device: model, memory, driver and CUDA versions, VBIOS, PCI bus, NUMA node, and NVLink peers: GPUs
joined by NVLink, directly or through an NVSwitch, share a ``link_domain``. NVML is a library, not a tool:
``run`` and ``which`` are not used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from . import DeviceFacts, DeviceUsage, Runner, Which, library_answer
from .links import link_domains, numa_node_of, pci_bus_id

__all__ = ["discover", "nvlink_pairs", "sample"]

_MIB = 1024 * 1024
# NVML's remote device types on an NVLink: another GPU, an IBM NPU bridge, an NVSwitch.
_REMOTE_GPU, _REMOTE_SWITCH = 0, 2
_SWITCH = "nvswitch"


def discover(run: Runner, which: Which) -> tuple[list[DeviceFacts], list[str]]:
    """This machine's NVIDIA GPUs; ``([], [note])`` when NVML is not there or fails. A GPU NVML cannot reach
    (fallen off the bus: "GPU is lost", "Unknown Error") is still listed, with that error as its health."""
    nvml, note = _nvml()
    if nvml is None:
        return [], [note] if note else []
    try:
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        cuda = nvml.nvmlSystemGetCudaDriverVersion_v2()
        count = nvml.nvmlDeviceGetCount()
    except Exception as exc:  # noqa: BLE001 - a half-working driver is still a fact to show, not a crash
        return [], [f"nvml: query failed ({exc})"]
    runtime = f"cuda {cuda // 1000}.{(cuda % 1000) // 10}"
    gpus = [_read(nvml, index) for index in range(count)]
    buses = [gpu.bus if isinstance(gpu, _Gpu) else None for gpu in gpus]
    domains = link_domains(nvlink_pairs(buses, [_nvlinks(nvml, gpu.handle) if isinstance(gpu, _Gpu) else []
                                                for gpu in gpus]), "nvlink")
    return [
        DeviceFacts(
            index=index, vendor="nvidia", model=gpu.model, memory_mib=gpu.memory_mib, driver_version=driver,
            runtime=runtime, firmware_version=library_answer(nvml.nvmlDeviceGetVbiosVersion, gpu.handle),
            interconnect="nvlink" if index in domains else "pcie", link_domain=domains.get(index),
            numa_node=_numa(nvml, gpu.handle, gpu.bus), pci_bus=gpu.bus, health=_mig(nvml, gpu.handle),
        ) if isinstance(gpu, _Gpu) else DeviceFacts(  # listed, so that the node shows it and nothing is placed on it
            index=index, vendor="nvidia", model="unknown", memory_mib=0, driver_version=driver, runtime=runtime,
            health=f"unreachable: {gpu}",
        )
        for index, gpu in enumerate(gpus)
    ], []


class _Gpu(NamedTuple):
    handle: Any
    model: str
    memory_mib: int
    bus: str | None


def _read(nvml, index: int) -> _Gpu | Exception:
    """GPU ``index``'s handle, name, memory and bus; the error where NVML cannot answer them."""
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        return _Gpu(handle, _text(nvml.nvmlDeviceGetName(handle)).removeprefix("NVIDIA ").strip(),
                    nvml.nvmlDeviceGetMemoryInfo(handle).total // _MIB,
                    pci_bus_id(_text(nvml.nvmlDeviceGetPciInfo(handle).busId)))
    except Exception as exc:  # noqa: BLE001 - NVMLError_GpuIsLost, NVMLError_Unknown and the like
        return exc


def nvlink_pairs(buses: Sequence[str | None], links: Sequence[list[tuple[int, str | None]]]) -> list[tuple[int, int]]:
    """Pairs of GPU indexes joined by NVLink, from each GPU's active links as (remote type, remote bus):
    a link to another GPU pairs the two; GPUs linked to NVSwitches all reach each other."""
    index_of = {bus: index for index, bus in enumerate(buses) if bus}
    pairs, switched = [], []
    for index, active in enumerate(links):
        for remote_type, remote_bus in active:
            if remote_type == _REMOTE_SWITCH:
                switched.append(index)
            elif remote_type == _REMOTE_GPU and remote_bus in index_of:
                pairs.append((index, index_of[remote_bus]))
    pairs.extend((switched[0], other) for other in switched[1:])
    return pairs


def sample(indexes: Sequence[int], run: Runner, which: Which) -> list[DeviceUsage]:
    """Utilisation and memory in use of these GPUs now, each reading where NVML gives it; [] without NVML, and a
    device that vanished is left out."""
    nvml, _note = _nvml()
    if nvml is None:
        return []
    found = []
    for index in indexes:
        handle = library_answer(nvml.nvmlDeviceGetHandleByIndex, index)
        if handle is None:  # a device that vanished
            continue
        # Each reading alone: a GPU in MIG mode has no whole-GPU utilisation, yet its memory in use is known.
        rates = library_answer(nvml.nvmlDeviceGetUtilizationRates, handle)
        memory = library_answer(nvml.nvmlDeviceGetMemoryInfo, handle)
        found.append(DeviceUsage(index, float(rates.gpu) if rates is not None else None,
                                 round(memory.used / _MIB, 1) if memory is not None else None))
    return found


_state: dict[str, Any] = {}


def _nvml() -> tuple[Any, str | None]:
    """The initialised ``pynvml`` module, once per process; (None, why) when it cannot be had."""
    if "nvml" not in _state:
        try:
            import pynvml  # noqa: PLC0415 - optional dependency

            pynvml.nvmlInit()
            _state.update(nvml=pynvml, note=None)
        except ImportError:
            _state.update(nvml=None, note="nvml: nvidia-ml-py is not installed")
        except Exception as exc:  # noqa: BLE001 - NVMLError subclasses vary by driver: no NVIDIA GPU here
            _state.update(nvml=None, note=f"nvml: not available ({exc})")
    return _state["nvml"], _state["note"]


def _nvlinks(nvml, handle) -> list[tuple[int, str | None]]:
    """This GPU's active NVLinks as (remote device type, remote PCI bus)."""
    active = []
    for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            if not nvml.nvmlDeviceGetNvLinkState(handle, link):
                continue
        except Exception:  # noqa: BLE001 - NotSupported past the GPU's last link, or no NVLink at all
            break
        remote_type = library_answer(nvml.nvmlDeviceGetNvLinkRemoteDeviceType, handle, link)
        remote = library_answer(nvml.nvmlDeviceGetNvLinkRemotePciInfo_v2, handle, link)
        active.append((_REMOTE_GPU if remote_type is None else int(remote_type),
                       pci_bus_id(_text(remote.busId)) if remote is not None else None))
    return active


def _mig(nvml, handle) -> str | None:
    """Why a GPU split into MIG instances is not placed on: a job given it by index does not get the whole GPU,
    and its instances are not offered as devices of their own."""
    mode = library_answer(getattr(nvml, "nvmlDeviceGetMigMode", None), handle)
    return "MIG mode: split into instances, not given whole" if mode and mode[0] == 1 else None


def _numa(nvml, handle, bus: str | None) -> int | None:
    """The NUMA node whose memory is closest to the GPU (``nvidia-smi topo -m``'s "NUMA Affinity"), else sysfs's.
    Not ``nvmlDeviceGetNumaNodeId``: that is the GPU's own memory as a NUMA node, on platforms where it is one."""
    nodes = library_answer(getattr(nvml, "nvmlDeviceGetMemoryAffinity", None), handle, 1,
                      getattr(nvml, "NVML_AFFINITY_SCOPE_NODE", 0))
    mask = int(nodes[0]) if nodes is not None else 0
    return mask.bit_length() - 1 if mask and mask & (mask - 1) == 0 else numa_node_of(bus)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
