"""A job's current attempt as the scheduler watches it: its replicas, their usage and how they ended.

    attempt = RunningAttempt(handles, attempt_id)
    attempt.sample(backend, alive)                 # peak memory, GPU use where measured
    attempt.failed_replica(backend, alive)         # "replica 1 failed with exit code 3" | None
    attempt.metrics(exits)                          # what the attempt row keeps
    attempt.metric_samples(7, 1, at=wall_now)       # the figures to store now, per metric (see metric_names.py)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...backends.base import Backend, Exit, ProcessHandle
from ...store import MetricSample

__all__ = ["SETS_PER_GRAIN", "RunningAttempt"]

# Stored sets of an attempt's measured figures before the interval between two doubles (see metric_samples).
SETS_PER_GRAIN = 1000


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
    usage: dict[int, dict] = field(default_factory=dict)  # each replica's latest sample, kept after it exits
    alive: frozenset[int] = frozenset()  # the replicas alive at the latest sample
    written_at: float | None = None  # wall time of the latest samples stored
    cpu_at: tuple[float, float] | None = None  # (wall time, CPU seconds) of the latest samples stored
    peak_rss_sum_mib: float = 0.0  # the most the replicas held together
    peak_process_device_mib: float = 0.0  # the most device memory the workload's own processes held
    unmeasured: dict[str, str] = field(default_factory=dict)  # what the backend cannot measure, and why
    sets_written: int = 0  # sets of metric samples stored for this attempt (since this server adopted it)

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
        self.alive = frozenset(handle.replica for handle in alive)
        self.unmeasured = dict(getattr(backend, "unmeasured", None) or {})
        for handle in alive:
            sample = self.latest = backend.sample(handle)
            if sample:
                self.usage[handle.replica] = sample
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

    def totals(self, exits: list[Exit] = ()) -> dict[str, float]:
        """The attempt's cumulative figures over its replicas: each replica's exit record where it left one (exact,
        at its end), else its latest sample."""
        ended = {handle.replica: ended.metrics for handle, ended in zip(self.handles, exits)}
        totals: dict[str, float] = {}
        for name in _CUMULATIVE:
            figures = [ended.get(replica, {}).get(name) if ended.get(replica, {}).get(name) is not None
                       else usage.get(name) for replica, usage in self._replicas(ended)]
            if any(figure is not None for figure in figures):
                totals[name] = sum(figure or 0.0 for figure in figures)
        return totals

    def _replicas(self, ended: dict[int, dict]):
        for replica in sorted(self.usage.keys() | ended.keys()):
            yield replica, self.usage.get(replica, {})

    def metric_samples(self, workload_id: int, attempt: int, *, at: float, interval_s: float,
                       exits: list[Exit] | None = None) -> list[MetricSample]:
        """The figures to store for this attempt now, at most one set every ``interval_s`` (the last one, from the
        exit records, always): measured names only, each with where it came from."""
        # Past every SETS_PER_GRAIN stored sets the interval doubles: a week-long attempt keeps some thousands of
        # points per name, not sixty thousand, and its first hours keep the fine grain.
        stretched = interval_s * 2 ** (self.sets_written // SETS_PER_GRAIN)
        if exits is None and self.written_at is not None and at - self.written_at < stretched:
            return []
        self.sets_written += 1
        live = [usage for replica, usage in self.usage.items() if replica in self.alive] if exits is None else []
        figures: list[tuple[str, float, str]] = []
        totals = self.totals(exits or [])
        for name, value in totals.items():
            figures.append((name, value, "procfs"))
        if "cpu_seconds" in totals:
            if self.cpu_at is not None and at > self.cpu_at[0] and totals["cpu_seconds"] >= self.cpu_at[1]:
                figures.append(("cpu_util", round(100 * (totals["cpu_seconds"] - self.cpu_at[1])
                                                  / (at - self.cpu_at[0]), 1), "procfs"))
            self.cpu_at = (at, totals["cpu_seconds"])
        rss = [usage["rss_mib"] for usage in live if "rss_mib" in usage]
        if rss:
            self.peak_rss_sum_mib = max(self.peak_rss_sum_mib, sum(rss))
            figures.append(("memory_rss", round(sum(rss), 1), "procfs"))
        if self.peak_rss_sum_mib:
            figures.append(("memory_rss_peak", self.peak_rss_sum_mib, "procfs"))
        figures += self._device_figures(live)
        self.written_at = at
        return [MetricSample(workload_id, attempt, name, float(value), at, source) for name, value, source in figures]

    def _device_figures(self, live: list[dict]) -> list[tuple[str, float, str]]:
        """The devices' use by the workload's own processes (a vendor tool's per-process reading), else, where the
        backend attributes whole devices to the workload (an exporter's per-pod reading), theirs."""
        own = [usage for usage in live if "process_device_memory_mib" in usage or "process_device_util_pct" in usage]
        figures: list[tuple[str, float, str]] = []
        if own:
            source = own[0].get("device_source", "procfs")
            memory = [usage["process_device_memory_mib"] for usage in own if "process_device_memory_mib" in usage]
            utils = [usage["process_device_util_pct"] for usage in own if "process_device_util_pct" in usage]
            if memory:
                self.peak_process_device_mib = max(self.peak_process_device_mib, sum(memory))
                figures += [("device_memory", round(sum(memory), 1), source),
                            ("device_memory_peak", self.peak_process_device_mib, source)]
            if utils:
                figures.append(("device_util", round(sum(utils), 1), source))
            return figures
        pods = [usage for usage in live if str(usage.get("device_source", "")).startswith("exporter:")]
        if pods:
            source = pods[0]["device_source"]
            utils = [usage["device_util_pct"] for usage in pods if "device_util_pct" in usage]
            memory = [usage["device_memory_used_mib"] for usage in pods if "device_memory_used_mib" in usage]
            if utils:
                figures.append(("device_util", round(sum(utils) / len(utils), 1), source))
            if memory:
                self.peak_process_device_mib = max(self.peak_process_device_mib, sum(memory))
                figures += [("device_memory", round(sum(memory), 1), source),
                            ("device_memory_peak", self.peak_process_device_mib, source)]
        return figures

    def metrics(self, exits: list[Exit]) -> dict:
        metrics = {"peak_rss_mib": max([self.peak_rss_mib] + [e.metrics.get("peak_rss_mib") or 0 for e in exits]),
                   "exit_codes": [e.code for e in exits], **self.totals(exits)}
        if self.device_utils:  # real NVIDIA devices through NVML, devices in pods through an exporter; not emulated ones
            metrics["device_util_pct_mean"] = round(sum(self.device_utils) / len(self.device_utils), 1)
            metrics["device_memory_peak_mib"] = self.peak_device_memory_used_mib
        elif self.device_note:
            metrics["device_note"] = self.device_note
        if self.unmeasured:  # said once, with the attempt: the same for every sample of it
            metrics["not_measured"] = dict(self.unmeasured)
        return metrics


# Figures that only grow over an attempt: summed over its replicas, the exit record's where there is one.
_CUMULATIVE = ("cpu_seconds", "io_read_bytes", "io_write_bytes", "net_rx_bytes", "net_tx_bytes")
