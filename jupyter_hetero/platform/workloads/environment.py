"""The environment of one replica: the template variant's env, device pinning and the HETERO_* set.

>>> env = device_environment("nvidia", [(1, 1000, 0), (3, 1000, 0)])
>>> env["CUDA_VISIBLE_DEVICES"], env["ASCEND_RT_VISIBLE_DEVICES"]
('1,3', '')
>>> array_environment({"array": {"id": 12, "index": 3, "size": 10, "limit": 2, "indices": "0-9"}})["HETERO_ARRAY_INDEX"]
'3'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["VISIBILITY", "array_environment", "device_environment"]

# Variables that make devices visible to a process, per accelerator family. Every one of them is
# always set (empty when not this replica's family) so a job never sees devices it was not given.
VISIBILITY: dict[str, tuple[str, ...]] = {
    "nvidia": ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"),
    "ascend": ("ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES"),
    "amd": ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"),
    "hygon": ("HIP_VISIBLE_DEVICES",),
    "cambricon": ("MLU_VISIBLE_DEVICES",),
    "intel": ("ZE_AFFINITY_MASK",),
}


def device_environment(family: str, devices: Sequence[tuple[int, int, int]]) -> dict[str, str]:
    """Visibility variables for ``devices`` (index, milli, memory MiB) of one replica."""
    env = {name: "" for names in VISIBILITY.values() for name in names}
    indexes = ",".join(str(index) for index, _milli, _mem in devices)
    for name in VISIBILITY.get(family, ()):
        env[name] = indexes
    fraction = [(index, milli, mem) for index, milli, mem in devices if milli < 1000]
    if fraction:
        index, milli, mem = fraction[0]
        env["HETERO_DEVICE_MILLI"] = str(milli)
        if family == "nvidia":
            # CUDA MPS enforces a share of the SMs and a memory cap when an MPS daemon runs.
            env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(max(1, milli // 10))
            if mem:
                env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = f"0={mem}M"
        if mem:
            env["HETERO_DEVICE_MEMORY_MIB"] = str(mem)
    return env



def array_environment(spec: Mapping[str, Any]) -> dict[str, str]:
    """An array task's place in its array (Slurm's SLURM_ARRAY_TASK_ID, SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_COUNT):
    ``HETERO_ARRAY_INDEX``, ``HETERO_ARRAY_ID`` and ``HETERO_ARRAY_SIZE``; nothing for other work."""
    array = spec.get("array")
    if not isinstance(array, Mapping):
        return {}
    return {"HETERO_ARRAY_INDEX": str(array["index"]), "HETERO_ARRAY_ID": str(array["id"]),
            "HETERO_ARRAY_SIZE": str(array["size"])}
