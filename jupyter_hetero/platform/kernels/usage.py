"""What one kernel uses: its process tree's CPU and memory, and its devices' use where measurable."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psutil

from ...backends.local.telemetry import sample_devices
from ...engine_inputs import placement_from_json

__all__ = ["CPU_SAMPLE_S", "kernel_usage"]

# The interval over which a kernel's CPU use is measured for its usage.
CPU_SAMPLE_S = 0.05


async def kernel_usage(kernel_id: str, kernel, workload: dict[str, Any], *, emulated: bool,
                       family: str, in_pod: dict | None = None) -> dict[str, Any]:
    """What ``GET /kernels/{id}/usage`` answers of a kernel running here, whose ``workload`` (id, placement,
    queue, tenant, idle) holds its devices: its process tree's CPU and memory, and its devices' use, sampled
    by the vendor tool of their ``family`` ("" where none can: a node this server does not know), or for a
    kernel in a pod (``in_pod``) as the cluster's exporters measured them."""
    pid = getattr(getattr(kernel, "provisioner", None), "pid", None)
    placement = placement_from_json(workload["placement"])
    devices = [index for index, _m, _mem in placement.slots[0].devices]
    # CPU use is a rate over a short interval, and vendor tools wait on the driver: not on the event loop.
    here = family if not emulated and in_pod is None else ""
    cpu, memory, gpus = await asyncio.to_thread(_measure, pid, here, devices)
    if in_pod is not None:
        gpus = {name: in_pod[name] for name in ("device_util_pct", "device_memory_used_mib") if name in in_pod}
    return {
        "kernel_id": kernel_id, "workload_id": workload["id"], "pid": pid, "cpu_percent": round(cpu, 1),
        "memory_mib": round(memory / 1024 / 1024, 1), "node": placement.slots[0].node,
        "flavor": placement.flavor, "devices": devices, "emulated": emulated,
        "queue": workload["queue"], "tenant": workload["tenant"],
        "execution_state": getattr(kernel, "execution_state", None), "idle": bool(workload.get("idle")),
        "device_utilisation": gpus or None,
        "device_note": None if gpus else ("emulated devices are not measured" if emulated
                                          else (in_pod.get("device_note") or "no device exporter reports its pod")
                                          if in_pod is not None
                                          else "device utilisation is not measurable here (no vendor tool answered)"),
    }


def _measure(pid: int | None, family: str, devices: list[int]) -> tuple[float, float, dict[str, float]]:
    """(CPU %, resident bytes) of the kernel's process tree over CPU_SAMPLE_S, and its devices' use."""
    cpu = memory = 0.0
    try:
        if pid is None:  # psutil would measure the server itself
            raise psutil.NoSuchProcess(0)
        process = psutil.Process(pid)
        members = [process, *process.children(recursive=True)]
        for member in members:
            member.cpu_percent(interval=None)  # starts each member's measurement
        time.sleep(CPU_SAMPLE_S)  # one interval for the whole tree, in a worker thread
        for member in members:
            try:
                cpu += member.cpu_percent(interval=None)
                memory += member.memory_info().rss
            except psutil.Error:
                continue  # a child that ended meanwhile
    except (psutil.Error, TypeError, ValueError):
        pass
    return cpu, memory, sample_devices(family, devices) if family and devices else {}
