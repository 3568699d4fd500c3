"""GPU utilisation and memory of given NVIDIA devices through NVML, when the driver is there.

    sample_gpus([0, 1])  # -> {"gpu_util_pct": 87.5, "gpu_memory_mib": 30211} or {} without NVML
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["sample_gpus"]

_MIB = 1024 * 1024
_state = {"ready": None}


def _ready() -> bool:
    if _state["ready"] is None:
        try:
            import pynvml  # noqa: PLC0415 - optional dependency

            pynvml.nvmlInit()
            _state["ready"] = True
        except Exception:  # noqa: BLE001 - no library or no driver: utilisation is simply not measurable
            _state["ready"] = False
    return bool(_state["ready"])


def sample_gpus(indexes: Sequence[int]) -> dict[str, float]:
    """Mean utilisation and summed used memory of these device indexes; {} when not measurable."""
    if not indexes or not _ready():
        return {}
    import pynvml  # noqa: PLC0415

    utils, used = [], 0
    try:
        for index in indexes:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            utils.append(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            used += pynvml.nvmlDeviceGetMemoryInfo(handle).used
    except Exception:  # noqa: BLE001 - a device that vanished or a driver hiccup: skip this sample
        return {}
    return {"gpu_util_pct": sum(utils) / len(utils), "gpu_memory_mib": round(used / _MIB, 1)}
