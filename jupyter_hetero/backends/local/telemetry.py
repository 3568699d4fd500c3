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

__all__ = ["QUIET_AFTER_TIMEOUT_S", "SOURCE_OF", "ProcessDeviceSampler", "sample_devices", "sample_each",
           "sample_processes", "summarise"]

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


class ProcessDeviceSampler:
    """Each wanted family's per-process device use, read by a daemon thread every ``interval_s``, never by the
    scheduler's tick: ``nvidia-smi pmon -c 1`` alone takes about a second to sample.

        sampler.want({"nvidia"})            # from the tick: which families' processes to read
        sampler.latest("nvidia")            # [ProcessUse, ...] of the last pass, or None (none yet, or too old)
    """

    def __init__(self, interval_s: float = 10.0, sample=None) -> None:
        self.interval_s = interval_s
        self._sample = sample or (lambda family: sample_processes(family)[0])
        self._lock = threading.Lock()
        self._wanted: set[str] = set()
        self._latest: dict[str, tuple[float, list[ProcessUse]]] = {}
        # A family wanted since the thread last read ``_wanted``; set and cleared under the lock, with that read, so
        # one want is one pass (an Event set after the thread's first pass began read the family twice at start).
        self._due = False
        self._changed = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def want(self, families: set[str]) -> None:
        with self._lock:
            self._wanted, new = set(families), families - self._wanted
            if new:
                self._due = True  # a family just wanted is read now, not at the next interval
                self._changed.notify()
            if families and self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="hetero-process-devices")
                self._thread.start()

    def latest(self, family: str) -> list[ProcessUse] | None:
        """The last pass's readings of ``family``, unless older than three intervals (a tool that stopped answering
        leaves the workload unmeasured, never measured by old figures)."""
        with self._lock:
            found = self._latest.get(family)
        if found is None or time.monotonic() - found[0] > 3 * self.interval_s:
            return None
        return found[1]

    def _run(self) -> None:
        while True:
            with self._lock:
                wanted, self._due = sorted(self._wanted), False
            for family in wanted:
                try:
                    uses = self._sample(family)
                except Exception:  # noqa: BLE001 - a bad pass must not end the sampling for good
                    continue
                with self._lock:
                    self._latest[family] = (time.monotonic(), uses)
            with self._changed:
                self._changed.wait_for(lambda: self._due, timeout=self.interval_s)


def sample_processes(family: str, *, run=None, which=shutil.which) -> tuple[list[ProcessUse], str | None]:
    """Every process's use of ``family``'s devices, in one ask of its vendor's tool (see vendors/per_process.py); a
    tool that timed out is left alone for a while, as for :func:`sample_devices`."""
    return process_usage(family, run or _run, which)
