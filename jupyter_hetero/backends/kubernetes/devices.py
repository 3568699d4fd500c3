"""The placed devices as the extended resources a device plugin hands out, and what pods must not pin.

>>> t4 = Accelerator(vendor="nvidia", model="Tesla T4", count=4, memory_mib=15360, sharing="milli")
>>> device_resources(t4, [(500, 7680)])
{'nvidia.com/gpu': '1', 'nvidia.com/gpucores': '50', 'nvidia.com/gpumem': '7680'}
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ...capability import Accelerator, AcceleratorFamily

__all__ = ["DEVICE_PINNING", "device_resources"]

# Variables that pin devices in a local process. In a pod the device plugin has already given the
# container exactly its devices; an inherited value (often empty, for another family) would hide them.
DEVICE_PINNING = frozenset(
    {
        "CUDA_VISIBLE_DEVICES",
        "NVIDIA_VISIBLE_DEVICES",
        "ASCEND_RT_VISIBLE_DEVICES",
        "ASCEND_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "MLU_VISIBLE_DEVICES",
        "ZE_AFFINITY_MASK",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
    }
)

# Extended resources by family, for accelerators whose record does not name one.
_FAMILY_RESOURCE = {
    AcceleratorFamily.NVIDIA: "nvidia.com/gpu",
    AcceleratorFamily.AMD: "amd.com/gpu",
    AcceleratorFamily.CAMBRICON: "cambricon.com/mlu",
    AcceleratorFamily.HYGON: "hygon.com/dcu",
    AcceleratorFamily.INTEL: "gpu.intel.com/i915",
}
_MIG_PROFILE = re.compile(r"\bMIG[ -]?(\d+g\.\d+gb)\b", re.IGNORECASE)
_HAMI = "nvidia.com/gpu"


def _resource_of(accelerator: Accelerator) -> str:
    # Part of the capability record once nodes come from Kubernetes; derived from the family and
    # model for records that predate the field (local discovery, emulated nodes).
    named = getattr(accelerator, "resource", None)
    if named:
        return named
    family = accelerator.family
    if family is AcceleratorFamily.NVIDIA and (mig := _MIG_PROFILE.search(accelerator.model)):
        return f"nvidia.com/mig-{mig.group(1).lower()}"
    if family is AcceleratorFamily.ASCEND:
        return "huawei.com/Ascend310P" if "310p" in accelerator.model.lower() else "huawei.com/Ascend910"
    if family not in _FAMILY_RESOURCE:
        raise ValueError(f"no extended resource is known for {accelerator.vendor} {accelerator.model}")
    return _FAMILY_RESOURCE[family]


def device_resources(accelerator: Accelerator | None, devices: Sequence[tuple[int, int]]) -> dict[str, str]:
    """Extended resources for the placed ``devices``, each ``(milli, memory_mib)``.

    >>> a100 = Accelerator(vendor="nvidia", model="A100", count=8, memory_mib=40960)
    >>> device_resources(a100, [(1000, 0), (1000, 0)])
    {'nvidia.com/gpu': '2'}
    """
    if not devices:
        return {}
    if accelerator is None:
        raise ValueError(f"{len(devices)} devices were placed on a node without accelerators")
    resource = _resource_of(accelerator)
    if all(milli >= 1000 for milli, _memory in devices):
        return {resource: str(len(devices))}
    if accelerator.sharing != "milli" or resource != _HAMI:
        raise ValueError(
            f"{resource} cannot be requested in fractions: only HAMi-shared NVIDIA GPUs "
            "(nvidia.com/gpucores, nvidia.com/gpumem) take a part of a device"
        )
    # HAMi gives every device of a container the same share, so ask the largest one placed.
    percent = max(math.ceil(min(milli, 1000) / 10) for milli, _memory in devices)
    memory = max(memory for _milli, memory in devices)
    amounts = {_HAMI: str(len(devices)), "nvidia.com/gpucores": str(max(percent, 1))}
    if memory:
        amounts["nvidia.com/gpumem"] = str(memory)
    return amounts
