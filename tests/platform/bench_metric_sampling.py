"""What measuring every running workload costs the server, at fleet size, with real processes and a real store.

    python -m tests.platform.bench_metric_sampling --workloads 1000 --ticks 10 --out metric-sampling-1000.json

Starts ``--workloads`` real processes (each a replica of its own running workload), then times, per tick, the
parts of the monitor's phase that sampling adds to: the local backend's pass over the process table (memory only,
as before issue 36, and with CPU time and storage IO too, as now), each attempt taking its sample and building its
metric samples, and the store write of every workload's samples in one transaction (SQLite file, WAL). The
processes are this benchmark's own children, each in its own session, killed by pid at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from jupyter_hetero.backends.base import ProcessHandle
from jupyter_hetero.backends.local.processes import LocalBackend
from jupyter_hetero.platform.scheduling.attempts import RunningAttempt
from jupyter_hetero.store import Repository
from jupyter_hetero.store.tables import WorkloadRow


def _start(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen(["sleep", "3600"], start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(count)]


def _rss_only_pass(handles: list[ProcessHandle]) -> int:
    """The pass as it was before issue 36: one walk of the process table, resident memory of each tree."""
    table, children = {}, {}
    for process in psutil.process_iter(["ppid", "create_time", "status"]):
        table[process.pid] = process
        children.setdefault(process.info["ppid"], []).append(process.pid)
    total = 0
    for handle in handles:
        tree = [handle.pid]
        while tree:
            pid = tree.pop()
            tree.extend(children.get(pid, ()))
            try:
                total += table[pid].memory_info().rss
            except (KeyError, psutil.Error):
                pass
    return total


def _ms(seconds: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(seconds) * 1000, 2), "max_ms": round(max(seconds) * 1000, 2)}


def run(workloads: int, ticks: int, db_dir: Path) -> dict:
    repository = Repository(f"sqlite:///{db_dir / 'bench.sqlite'}", clock=time.time)
    rows = [repository.add_workload(WorkloadRow(
        kind="job", name=f"w{number}", tenant="t", user="u", template="data-preprocessing", queue="batch",
        request={}, spec={}, state="running", held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, attempts=1),
        reason="bench") for number in range(workloads)]
    children = _start(workloads)
    try:
        handles = [ProcessHandle(0, "local", child.pid, psutil.Process(child.pid).create_time()) for child in children]
        backend = LocalBackend(usage_interval_s=0.0)  # a full pass every tick: the worst case
        attempts = {row.id: RunningAttempt([handle], attempt_id=row.id) for row, handle in zip(rows, handles)}
        before, after, sampling, writing, rows_written = [], [], [], [], []
        at = time.time()
        for _tick in range(ticks):
            started = time.perf_counter()
            _rss_only_pass(handles)
            before.append(time.perf_counter() - started)

            started = time.perf_counter()
            live = backend.scan(handles)
            after.append(time.perf_counter() - started)

            started = time.perf_counter()
            batch = []
            for row, handle in zip(rows, handles):
                running = attempts[row.id]
                running.sample(backend, [handle] if handle in live else [])
                batch += running.metric_samples(row.id, 1, at=at, interval_s=0.0)
            sampling.append(time.perf_counter() - started)

            started = time.perf_counter()
            repository.record_metric_samples(batch)
            writing.append(time.perf_counter() - started)
            rows_written.append(len(batch))
            at += 10.0  # the default metric_interval_s between two stored sets
        return {
            "workloads": workloads, "ticks": ticks, "cpus": os.cpu_count(),
            "pass_memory_only": _ms(before),
            "pass_memory_cpu_io": _ms(after),
            "samples_built": _ms(sampling),
            "store_write_one_transaction": _ms(writing),
            "rows_per_write": rows_written[-1],
            "database_mib": round(sum(path.stat().st_size for path in db_dir.glob("bench.sqlite*")) / 2**20, 1),
        }
    finally:
        for child in children:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        repository.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures = run(args.workloads, args.ticks, Path(folder))
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
