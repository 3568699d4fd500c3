"""Live use of this machine's devices, through the vendor module of their family.

    sample_devices("ascend", [0, 1])  # -> {"device_util_pct": 87.5, "device_memory_used_mib": 30211.0}, or {} unmeasured

The keys keep their ``gpu_`` names for every family: the API, the usage records and the panel read them
so. Callers run this off the event loop: a vendor's tool is a subprocess, bounded by its timeout.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Sequence

from .discovery import vendor_module
from .vendors import DeviceUsage, run_tool
from .vendors.per_process import SOURCE_OF, ProcessUse, process_usage

__all__ = ["QUIET_AFTER_TIMEOUT_S", "SOURCE_OF", "sample_devices", "sample_each", "sample_processes", "summarise"]

# After a tool timed out it is left alone this long: a hung driver would otherwise cost every sampling
# pass (every few seconds, per running workload) the whole timeout.
QUIET_AFTER_TIMEOUT_S = 60.0


class _QuietAfterTimeout:
    """``run_tool``, refusing at once a tool that timed out within the last ``quiet_s`` seconds."""

    def __init__(self, quiet_s: float = QUIET_AFTER_TIMEOUT_S, run=run_tool) -> None:
        self.quiet_s = quiet_s
        self._run = run
        self._hung_until: dict[str, float] = {}
        self._lock = threading.Lock()

    def __call__(self, argv: list[str]) -> str:
        with self._lock:
            until = self._hung_until.get(argv[0], 0.0)
        if time.monotonic() < until:
            raise subprocess.TimeoutExpired(argv, 0)
        try:
            return self._run(argv)
        except subprocess.TimeoutExpired:
            with self._lock:
                self._hung_until[argv[0]] = time.monotonic() + self.quiet_s
            raise


_run = _QuietAfterTimeout()


def sample_devices(family: str, indexes: Sequence[int], *, run=None, which=shutil.which) -> dict[str, float]:
    """Mean utilisation and summed memory in use of these devices of ``family``; {} when not measurable."""
    return summarise(sample_each(family, indexes, run=run, which=which).values())


def sample_each(family: str, indexes: Sequence[int], *, run=None, which=shutil.which) -> dict[int, DeviceUsage]:
    """Each of these devices' use, in one ask of its vendor's tool: what a pass over many replicas shares."""
    vendor = vendor_module(family)
    if vendor is None or not indexes:
        return {}
    return {use.index: use for use in vendor.sample(sorted(set(indexes)), run or _run, which)}


def summarise(usage) -> dict[str, float]:
    """``device_util_pct`` (mean) and ``device_memory_used_mib`` (sum) of some devices' use, each where measured."""
    usage = list(usage)
    utils = [use.util_pct for use in usage if use.util_pct is not None]
    memory = [use.memory_used_mib for use in usage if use.memory_used_mib is not None]
    return {
        **({"device_util_pct": round(sum(utils) / len(utils), 1)} if utils else {}),
        **({"device_memory_used_mib": round(sum(memory), 1)} if memory else {}),
    }


def sample_processes(family: str, *, run=None, which=shutil.which) -> tuple[list[ProcessUse], str | None]:
    """Every process's use of ``family``'s devices, in one ask of its vendor's tool (see vendors/per_process.py); a
    tool that timed out is left alone for a while, as for :func:`sample_devices`."""
    return process_usage(family, run or _run, which)
