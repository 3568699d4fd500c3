"""An attempt's metric samples from its replicas' samples: sums, CPU share, peaks, the bounded rate and the end."""

from __future__ import annotations

from jupyter_hetero.backends.base import Exit, ProcessHandle
from jupyter_hetero.platform.scheduling.attempts import SETS_PER_GRAIN, RunningAttempt


def _attempt(*usages: dict) -> RunningAttempt:
    attempt = RunningAttempt([ProcessHandle(replica, "local", 100 + replica, 0.0) for replica in range(len(usages))], 9)
    attempt.usage = dict(enumerate(usages))
    attempt.alive = frozenset(range(len(usages)))
    return attempt


def _figures(samples) -> dict[str, tuple[float, str]]:
    return {sample.name: (sample.value, sample.source) for sample in samples}


def test_replicas_are_summed_and_the_cpu_share_comes_from_the_second_set():
    attempt = _attempt({"rss_mib": 100.0, "cpu_seconds": 2.0, "io_read_bytes": 10, "io_write_bytes": 5},
                       {"rss_mib": 50.0, "cpu_seconds": 1.0, "io_read_bytes": 0, "io_write_bytes": 7})
    first = _figures(attempt.metric_samples(7, 1, at=1000.0, interval_s=10))
    assert first == {"cpu_seconds": (3.0, "procfs"), "io_read_bytes": (10.0, "procfs"),
                     "io_write_bytes": (12.0, "procfs"), "memory_rss": (150.0, "procfs"),
                     "memory_rss_peak": (150.0, "procfs")}
    assert attempt.metric_samples(7, 1, at=1005.0, interval_s=10) == []  # within the interval: nothing
    attempt.usage[0] = {"rss_mib": 20.0, "cpu_seconds": 12.0}
    second = _figures(attempt.metric_samples(7, 1, at=1010.0, interval_s=10))
    assert second["cpu_util"] == (100.0, "procfs")  # ten CPU seconds in ten seconds: one core
    assert second["memory_rss"][0] == 70.0 and second["memory_rss_peak"][0] == 150.0


def test_the_interval_doubles_after_each_grain_of_sets():
    attempt = _attempt({"rss_mib": 1.0, "cpu_seconds": 0.0})
    at, stored = 0.0, 0
    while at < 10 * SETS_PER_GRAIN * 3:
        stored += bool(attempt.metric_samples(7, 1, at=at, interval_s=10))
        at += 10
    assert SETS_PER_GRAIN + SETS_PER_GRAIN // 2 <= stored < 2 * SETS_PER_GRAIN + 2


def test_the_end_is_stored_at_once_from_the_exit_records_and_the_row_keeps_the_totals():
    attempt = _attempt({"rss_mib": 80.0, "cpu_seconds": 1.0, "io_write_bytes": 100})
    attempt.metric_samples(7, 1, at=1000.0, interval_s=10)
    ended = [Exit(0, {"peak_rss_mib": 90.0, "cpu_seconds": 4.5, "io_read_bytes": 0, "io_write_bytes": 4096})]
    last = _figures(attempt.metric_samples(7, 1, at=1001.0, interval_s=10, exits=ended))
    assert last["cpu_seconds"][0] == 4.5 and last["io_write_bytes"][0] == 4096 and "memory_rss" not in last
    summary = attempt.metrics(ended)
    assert (summary["cpu_seconds"], summary["io_write_bytes"], summary["peak_rss_mib"]) == (4.5, 4096, 90.0)


def test_device_figures_are_the_workloads_own_processes_or_an_exporters_pod():
    own = _attempt({"process_device_memory_mib": 30412.0, "process_device_util_pct": 87.0, "device_source": "nvidia-smi",
                    "device_util_pct": 40.0, "device_memory_used_mib": 80000.0})
    assert {k: v for k, v in _figures(own.metric_samples(7, 1, at=0.0, interval_s=10)).items()
            if k.startswith("device")} == {"device_memory": (30412.0, "nvidia-smi"),
                                           "device_memory_peak": (30412.0, "nvidia-smi"),
                                           "device_util": (87.0, "nvidia-smi")}
    pod = _attempt({"device_util_pct": 40.0, "device_memory_used_mib": 1024.0, "device_source": "exporter:dcgm"})
    assert _figures(pod.metric_samples(7, 1, at=0.0, interval_s=10))["device_util"] == (40.0, "exporter:dcgm")
    whole = _attempt({"rss_mib": 1.0, "device_util_pct": 40.0})  # a whole device's figure is not the workload's
    assert not any(name.startswith("device") for name in _figures(whole.metric_samples(7, 1, at=0.0, interval_s=10)))
