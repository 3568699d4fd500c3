"""One pass over the process table answers, for every replica at once, whether it lives and what it uses."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from jupyter_hetero.backends.base import Launch
from jupyter_hetero.backends.local.processes import LocalBackend

# A replica whose work runs in a grandchild holding ~64 MiB, so only a walk of the whole tree sees it.
HOLDER = """
import subprocess, sys
code = "import time; block = bytearray(64 * 1024 * 1024); print('holding', flush=True); time.sleep(60)"
subprocess.run([sys.executable, "-c", code])
"""


def _launch(tmp_path: Path, replica: int, code: str) -> Launch:
    folder = tmp_path / str(replica)
    return Launch(workload_id=1, attempt=1, replica=replica, node="local",
                  argv=["command", "--", sys.executable, "-c", code],
                  env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}, cwd=folder,
                  log_path=folder / "log.txt", exit_path=folder / "exit-0.json")


def _poll(condition, timeout: float = 20.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} never held"
        time.sleep(0.05)


def test_one_scan_tells_live_from_exited_replicas_and_sums_each_process_tree(tmp_path):
    backend = LocalBackend(usage_interval_s=0)  # usage measured on every scan
    holder = backend.launch(_launch(tmp_path, 0, HOLDER))
    sleeper = backend.launch(_launch(tmp_path, 1, "import time; time.sleep(60)"))
    quitter = backend.launch(_launch(tmp_path, 2, "pass"))
    try:
        _poll(lambda: "holding" in (tmp_path / "0" / "log.txt").read_text(), what="the holder's allocation")
        _poll(lambda: quitter not in backend.scan([quitter]), what="the quick replica's exit")
        live = backend.scan([holder, sleeper, quitter])
        assert set(live) == {holder, sleeper}
        assert live[holder]["rss_mib"] - live[sleeper]["rss_mib"] >= 50  # the grandchild's 64 MiB counted
        assert backend.sample(holder) is live[holder]  # the tick's per-replica samples come from the scan
        assert backend.exit(quitter).code == 0
    finally:
        for handle in (holder, sleeper):
            backend.kill(handle)


@pytest.mark.parametrize("usage_interval_s", [0, 3600], ids=["measuring usage", "between usage passes"])
def test_a_scan_after_a_restart_recognises_replicas_by_pid_and_start_time(tmp_path, usage_interval_s):
    first = LocalBackend()
    handle = first.launch(_launch(tmp_path, 0, "import time; time.sleep(60)"))
    second = LocalBackend(usage_interval_s=usage_interval_s)  # not their parent, as after a restart of the server
    second.scan([handle])  # the first scan measures usage whatever the interval
    try:
        reused = replace(handle, pid_started=handle.pid_started - 100)  # same pid, another process
        assert set(second.scan([handle, reused])) == {handle}
        second.kill(handle)
        _poll(lambda: handle not in second.scan([handle]), what="the killed replica's end")
    finally:
        first.kill(handle)


def test_a_scan_reads_the_process_table_once_however_many_replicas(tmp_path, monkeypatch):
    backend = LocalBackend()
    handles = [backend.launch(_launch(tmp_path, n, "import time; time.sleep(60)")) for n in range(4)]
    passes = []
    real_iter = psutil.process_iter

    def counting_iter(*args, **kwargs):
        passes.append(1)
        return real_iter(*args, **kwargs)

    def per_replica_walk(*_args, **_kwargs):
        raise AssertionError("a scan walked one replica's tree through /proc on its own")

    monkeypatch.setattr(psutil, "process_iter", counting_iter)
    monkeypatch.setattr(psutil.Process, "children", per_replica_walk)
    try:
        assert set(backend.scan(handles)) == set(handles)
        assert len(passes) == 1
    finally:
        monkeypatch.undo()
        for handle in handles:
            backend.kill(handle)


def test_between_usage_passes_a_scan_sees_exits_at_once_without_reading_the_process_table(tmp_path, monkeypatch):
    backend = LocalBackend(usage_interval_s=3600)
    keeper, quitter = (backend.launch(_launch(tmp_path, n, "import time; time.sleep(60)")) for n in range(2))
    try:
        assert backend.measured_at == float("-inf")
        before = time.monotonic()
        first = backend.scan([keeper, quitter])  # the first scan measures usage
        assert set(first) == {keeper, quitter} and first[keeper]["rss_mib"] > 0
        measured = backend.measured_at  # public: the metric sampling benchmark tells measuring ticks by it
        assert before <= measured <= time.monotonic()
        passes = []
        real_iter = psutil.process_iter
        monkeypatch.setattr(psutil, "process_iter", lambda *a, **k: passes.append(1) or real_iter(*a, **k))
        backend.kill(quitter)
        _poll(lambda: quitter not in backend.scan([keeper, quitter]), what="the killed replica's end")
        again = backend.scan([keeper, quitter])
        assert passes == [], "a scan between usage passes read the whole process table"
        assert backend.measured_at == measured
        assert again == {keeper: first[keeper]} and backend.sample(keeper) == first[keeper]  # its last sample
    finally:
        monkeypatch.undo()
        backend.kill(keeper)


# A replica whose work runs in a grandchild that says its pid, the pid a vendor's tool would name.
NAMED_GRANDCHILD = """
import os, subprocess, sys
code = "import os, time; open(os.environ['PID_FILE'], 'w').write(str(os.getpid())); time.sleep(60)"
subprocess.run([sys.executable, "-c", code])
"""

# A stand-in nvidia-smi on PATH: it names the grandchild's pid (read from the file it wrote) and an unrelated one,
# in the layouts the recorded outputs show (tests/data/vendors/processes).
FAKE_NVIDIA_SMI = """#!{python}
import pathlib, sys
pid = pathlib.Path({pid_file!r}).read_text()
if any(arg.startswith("--query-compute-apps") for arg in sys.argv):
    print(f"00000000:18:00.0, {{pid}}, 30412")
    print("00000000:3B:00.0, 1, 999")
elif sys.argv[1:2] == ["pmon"]:
    print("# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command")
    print("# Idx           #    C/G      %      %      %      %      %      %    name")
    print(f"    0  {{pid:>9}}     C     87     41      -      -      -      -    python")
    print("    1          1     C     50     10      -      -      -      -    init")
else:
    sys.exit("no record")
"""


def test_a_vendor_tools_per_process_figures_are_matched_to_the_replicas_tree_by_pid(tmp_path, monkeypatch):
    pid_file = tmp_path / "grandchild.pid"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "nvidia-smi"
    tool.write_text(FAKE_NVIDIA_SMI.format(python=sys.executable, pid_file=str(pid_file)), encoding="utf-8")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    backend = LocalBackend(usage_interval_s=0)
    launch = _launch(tmp_path, 0, NAMED_GRANDCHILD)
    launch = replace(launch, env={**launch.env, "PID_FILE": str(pid_file)}, devices=(0,), measurable=True,
                     family="nvidia")
    handle = backend.launch(launch)
    try:
        _poll(pid_file.exists, what="the grandchild's pid")
        # The tool is read by the sampler's own thread, not by the scan: its figures come within a pass or so.
        _poll(lambda: "process_device_memory_mib" in backend.scan([handle])[handle], what="the tool's figures")
        sample = backend.scan([handle])[handle]
        assert (sample["process_device_memory_mib"], sample["process_device_util_pct"], sample["device_source"]) \
            == (30412.0, 87.0, "nvidia-smi")  # pid 1's figures are not the workload's
    finally:
        backend.kill(handle)
