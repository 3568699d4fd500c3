"""A job's current attempt as the scheduler watches it: its replicas, their usage and how they ended.

    attempt = RunningAttempt(handles, attempt_id)
    attempt.sample(backend, alive)                 # peak memory, GPU use where measured
    attempt.failed_replica(backend, alive)         # "replica 1 failed with exit code 3" | None
    attempt.metrics(exits)                          # what the attempt row keeps
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...backends.base import Backend, Exit, ProcessHandle

__all__ = ["RunningAttempt"]


@dataclass
class RunningAttempt:
    """The replicas of one attempt and what has been seen of them; kept in memory, rebuilt on re-adoption."""

    handles: list[ProcessHandle]
    attempt_id: int
    peak_rss_mib: float = 0.0
    device_utils: list[float] = field(default_factory=list)
    peak_device_memory_used_mib: float = 0.0
    latest: dict = field(default_factory=dict)  # the last sample (one replica's: a service's replica has one)
    device_note: str | None = None  # the first reason the backend gave for not measuring its devices
    signalled: bool = False  # SIGTERM sent for the current stop
    killed: bool = False
    exits: dict[int, Exit] = field(default_factory=dict)  # replicas that have exited, by replica number
    failed_code: int | None = None  # exit code of the replica whose failure stopped the gang

    def signal_stop(self, backend: Backend) -> None:
        """SIGTERM to every replica, once per stop."""
        if not self.signalled:
            self.signalled = True
            for handle in self.handles:
                backend.signal_stop(handle)

    def kill(self, backend: Backend, handles: list[ProcessHandle] | None = None) -> None:
        for handle in self.handles if handles is None else handles:
            backend.kill(handle)
        self.killed = True

    def sample(self, backend: Backend, alive: list[ProcessHandle]) -> str | None:
        """Take each live replica's latest sample; the backend's note on why its devices are not measured, the
        first time the attempt gets one (None otherwise)."""
        noted = None
        for handle in alive:
            sample = self.latest = backend.sample(handle)
            self.peak_rss_mib = max(self.peak_rss_mib, sample.get("rss_mib", 0.0))
            if "device_util_pct" in sample:
                self.device_utils.append(sample["device_util_pct"])
                self.peak_device_memory_used_mib = max(self.peak_device_memory_used_mib,
                                                       sample.get("device_memory_used_mib") or 0.0)
            elif sample.get("device_note") and self.device_note is None:
                self.device_note = noted = sample["device_note"]
        return noted

    def exit_of(self, backend: Backend, handle: ProcessHandle) -> Exit:
        ended = self.exits.get(handle.replica)
        if ended is None:
            ended = self.exits[handle.replica] = backend.exit(handle)
        return ended

    def failed_replica(self, backend: Backend, alive: list[ProcessHandle]) -> str | None:
        """A replica that ended badly while others still run, in words; None when all is well."""
        for handle in self.handles:
            if handle in alive:
                continue
            ended = self.exit_of(backend, handle)
            because = f": {ended.reason}" if ended.reason else ""
            if ended.code is None:
                return f"replica {handle.replica} vanished without an exit record{because}"
            if ended.code != 0:
                self.failed_code = ended.code
                return f"replica {handle.replica} failed with exit code {ended.code}{because}"
        return None

    def metrics(self, exits: list[Exit]) -> dict:
        metrics = {"peak_rss_mib": max([self.peak_rss_mib] + [e.metrics.get("peak_rss_mib") or 0 for e in exits]),
                   "exit_codes": [e.code for e in exits]}
        if self.device_utils:  # real NVIDIA devices through NVML, devices in pods through an exporter; not emulated ones
            metrics["device_util_pct_mean"] = round(sum(self.device_utils) / len(self.device_utils), 1)
            metrics["device_memory_peak_mib"] = self.peak_device_memory_used_mib
        elif self.device_note:
            metrics["device_note"] = self.device_note
        return metrics
