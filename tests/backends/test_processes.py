"""The local backend with real processes: process groups, exit records, stop and kill, sampling."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from jupyter_hetero.backends.base import Launch
from jupyter_hetero.backends.local.telemetry import sample_devices
from jupyter_hetero.backends.local.processes import LocalBackend


def _launch(tmp_path: Path, *argv: str, devices=(), measurable=False) -> Launch:
    return Launch(workload_id=1, attempt=1, replica=0, node="local", argv=["command", "--", *argv],
                  env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}, cwd=tmp_path,
                  log_path=tmp_path / "log.txt", exit_path=tmp_path / "exit-0.json", devices=devices,
                  measurable=measurable)


def _until_stopped(backend, handle, timeout=20.0):
    deadline = time.monotonic() + timeout
    while backend.running(handle):
        assert time.monotonic() < deadline, "the process did not stop"
        time.sleep(0.05)


def test_a_replica_runs_logs_and_leaves_an_exit_record(tmp_path):
    backend = LocalBackend()
    handle = backend.launch(_launch(tmp_path, sys.executable, "-c", "print('hello'); raise SystemExit(4)"))
    _until_stopped(backend, handle)
    exit_ = backend.exit(handle)
    assert exit_.code == 4
    assert exit_.metrics["peak_rss_mib"] > 0
    assert "hello" in (tmp_path / "log.txt").read_text()


def test_stop_reaches_the_whole_process_group(tmp_path):
    backend = LocalBackend()
    handle = backend.launch(_launch(tmp_path, sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"))
    deadline = time.monotonic() + 20
    while "ready" not in (tmp_path / "log.txt").read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert backend.sample(handle)["rss_mib"] > 0
    backend.signal_stop(handle)
    _until_stopped(backend, handle)
    assert backend.exit(handle).code == -15


def test_a_killed_replica_leaves_no_exit_record(tmp_path):
    backend = LocalBackend()
    handle = backend.launch(_launch(tmp_path, sys.executable, "-c", "import time; time.sleep(60)"))
    backend.kill(handle)
    _until_stopped(backend, handle)
    assert backend.exit(handle).code is None


def test_a_restarted_server_still_recognises_the_process_by_pid_and_start_time(tmp_path):
    first = LocalBackend()
    handle = first.launch(_launch(tmp_path, sys.executable, "-c", "import time; time.sleep(60)"))
    second = LocalBackend()  # knows nothing of its children, as after a restart
    assert second.running(handle)
    from dataclasses import replace

    assert not second.running(replace(handle, pid_started=handle.pid_started - 100))  # a reused pid
    second.kill(handle)
    _until_stopped(second, handle)


def test_device_sampling_without_a_vendor_library_or_tool_reports_nothing_rather_than_failing():
    assert sample_devices("nvidia", []) == {}
    assert isinstance(sample_devices("nvidia", [0]), dict)
    assert sample_devices("cpu", [0]) == {}
