"""What measuring every running workload costs the server's scheduler ticks, read from the scheduler's own tick log.

    python -m tests.platform.bench_metric_sampling --workloads 1000 --ticks 60 \\
        --out docs/results/metric-sampling-1000.json

Two servers' platforms are built as a server builds its own (``startup.build_platform`` over HeteroApp's defaults,
each with its own SQLite file), over 16 emulated 64-core CPU nodes and this machine. Each store is left as a server
that stopped leaves it: ``--workloads`` running jobs, submitted through the workloads service and placed by the
engine, each with one replica that is a real ``sleep`` process this benchmark started, recorded as its attempt's
process with its pid and start time. Each platform is then built again over its store, like a restarted server:
``reconcile()`` adopts the processes, and the two schedulers ``tick()`` in turn, each half a ``schedule_interval``
after the other's tick ended, so that each waits about ``schedule_interval`` between its ticks, as a server's loop
does. One samples as shipped (the ``metric_interval_s`` default); the other has its interval set past the run's end,
so that after its first tick (which stores every attempt's first set, as any restart does) it stores nothing.
Everything else, the local backend's pass over the process table included, is the same code in both.

Every figure is read from the schedulers' own tick logs (monitor, snapshot, engine, apply, total); the rows each tick
wrote are counted in its store. The processes are this benchmark's own, each in its own session, killed by pid at the
end, on Ctrl-C and on SIGTERM too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

import psutil
import yaml
from jupyter_server.serverapp import ServerApp
from sqlalchemy import func, select
from traitlets.config import Config

from jupyter_hetero.app import HeteroApp
from jupyter_hetero.backends.base import ProcessHandle
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH
from jupyter_hetero.engine_inputs import engine_workload, placement_to_json
from jupyter_hetero.models import SubmitWorkload
from jupyter_hetero.platform.scheduling.loop import freeze_long_lived
from jupyter_hetero.platform.wiring import Platform
from jupyter_hetero.startup import build_platform
from jupyter_hetero.store.tables import AttemptRow, EventRow, MetricSampleRow

SHIPPED = "as shipped"
OFF = "sampling off"
# Enough emulated CPU capacity that every job, one core and 1 GiB each, is placed (16 x 64 cores, 256 GiB).
NODES, NODE_CPUS = 16, 64
TEMPLATE = "data-preprocessing"


def _bench_files(folder: Path, workloads: int) -> tuple[Path, Path]:
    """The emulated nodes, and the shipped catalog with the default tenant's CPU quota raised to hold every job."""
    nodes = folder / "nodes.yaml"
    nodes.write_text(yaml.safe_dump({"nodes": [{"name": f"cpu-{n}", "cpu": NODE_CPUS, "memory": "256Gi"}
                                               for n in range(NODES)]}), encoding="utf-8")
    catalog = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    default = next(tenant for tenant in catalog["tenants"] if tenant["name"] == catalog["default_tenant"])
    default["quotas"]["cpu-standard"]["nominal"]["cpu"] = max(workloads, 512)
    path = folder / "catalog.yaml"
    path.write_text(yaml.safe_dump(catalog, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return nodes, path


def _app(folder: Path, nodes: Path, catalog: Path, metric_interval_s: float | None) -> HeteroApp:
    """A HeteroApp with its defaults except where this server's files are (and, for one, the sampling interval)."""
    config = Config()
    config.ServerApp.root_dir = str(folder)
    config.HeteroApp.db_url = f"sqlite:///{folder / 'hetero.sqlite'}"
    config.HeteroApp.work_dir = str(folder / "work")
    config.HeteroApp.audit_key_file = str(folder / "audit.key")
    config.HeteroApp.audit_anchor_file = str(folder / "audit.anchor")
    config.HeteroApp.catalog_file = str(catalog)
    config.HeteroApp.emulated_nodes_file = str(nodes)
    if metric_interval_s is not None:
        config.HeteroApp.metric_interval_s = metric_interval_s
    serverapp = ServerApp(config=config)
    serverapp.init_configurables()
    app = HeteroApp(config=config)
    app.serverapp = serverapp
    return app


def _start_sleepers(count: int) -> list[subprocess.Popen]:
    sleepers = []
    try:
        for _ in range(count):
            sleepers.append(subprocess.Popen(["sleep", "86400"], start_new_session=True, stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    except BaseException:
        _kill(sleepers)
        raise
    return sleepers


def _kill(sleepers: list[subprocess.Popen]) -> None:
    for sleeper in sleepers:
        try:
            os.killpg(sleeper.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        sleeper.wait()


def _close(platform: Platform) -> None:
    asyncio.run(platform.close())


def _leave_running(app: HeteroApp, sleepers: list[subprocess.Popen]) -> None:
    """The store as a server that stopped leaves it: every job submitted, placed by the engine, and running its one
    replica (one of ``sleepers``), recorded as the launch records it."""
    platform = build_platform(app)
    try:
        owner = platform.identify(platform.owner, owner=True)
        ids = [platform.workloads.submit(owner, SubmitWorkload(
            template=TEMPLATE, name=f"sampled-{number}", command=["sleep", "86400"],
            parameters={"cpu": 1, "memory": "1Gi"}))["id"] for number in range(len(sleepers))]
        scheduler, repository = platform.scheduler, platform.repository
        placements = {admission.workload: admission.placement
                      for admission in scheduler.dry_run(scheduler.clock()).admissions}
        if len(placements) != len(ids):
            raise SystemExit(f"the engine placed {len(placements)} of {len(ids)} jobs")
        for workload_id, sleeper in zip(ids, sleepers):
            placement, row = placements[workload_id], repository.workload(workload_id)
            total = engine_workload(row, None, 0).request.total
            paths = scheduler.paths(workload_id)
            for folder in (paths.attempt(1), paths.checkpoints, paths.outputs):
                folder.mkdir(parents=True, exist_ok=True)
            node, started = placement.slots[0].node, time.time()
            handle = ProcessHandle(0, node, sleeper.pid, psutil.Process(sleeper.pid).create_time(),
                                   exit_path=str(paths.attempt(1) / "exit-0.json"))
            repository.add_attempt(AttemptRow(
                workload_id=workload_id, number=1, node=node, placement=placement_to_json(placement),
                processes=[handle.to_json()], started_at=started, log_path=str(paths.attempt(1) / "log.txt"),
                metrics={}))
            repository.update_workload(
                workload_id, event="started", reason=f"attempt 1 running as pid {sleeper.pid}", state="running",
                attempts=1, flavor=placement.flavor, node=node, placement=placement_to_json(placement),
                held_cpu_milli=total.cpu, held_memory_mib=total.mem, held_device_milli=total.dev,
                admitted_at=started, started_at=started)
    finally:
        _close(platform)


def _adopted(platform: Platform) -> int:
    with platform.repository.session() as session:
        return session.scalar(select(func.count()).select_from(EventRow).where(EventRow.type == "adopted"))


def _walked_at(platform: Platform) -> float:
    """When the local backend last walked the process table for usage (every ``usage_interval_s``), to tell the
    ticks that did from those that did not."""
    return platform.backend.measured_at


def _rows(platform: Platform) -> int:
    with platform.repository.session() as session:
        return session.scalar(select(func.count()).select_from(MetricSampleRow))


def _ms(seconds: list[float]) -> dict[str, float]:
    """Median, p95 (nearest rank), mean and max, in ms."""
    ordered = sorted(seconds)
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
    return {"median_ms": round(statistics.median(ordered) * 1000, 1), "p95_ms": round(p95 * 1000, 1),
            "mean_ms": round(statistics.fmean(ordered) * 1000, 1), "max_ms": round(ordered[-1] * 1000, 1)}


def _summary(ticks: list[dict]) -> dict:
    """The ticks after the first (a restart's first tick reads and stores everything, in both servers)."""
    steady = ticks[1:]
    writing = [tick for tick in steady if tick["rows_written"]]
    return {
        "ticks": len(steady),
        **{phase: _ms([tick[f"{phase}_s"] for tick in steady])
           for phase in ("monitor", "snapshot", "engine", "apply", "total")},
        "ticks_that_stored_a_set": len(writing),
        "ticks_that_walked_the_process_table": sum(tick["walked"] for tick in steady),
        "rows_per_stored_set": sorted({tick["rows_written"] for tick in writing}),
        "rows_written": sum(tick["rows_written"] for tick in steady),
        "monitor_by_what_the_tick_did": {
            f"{'walked' if walked else 'no walk'}, {'stored a set' if stored else 'stored nothing'}": _ms(chosen)
            for walked in (False, True) for stored in (False, True)
            if (chosen := [tick["monitor_s"] for tick in steady
                           if tick["walked"] == walked and bool(tick["rows_written"]) == stored])},
        "first_tick": {"monitor_ms": round(ticks[0]["monitor_s"] * 1000, 1),
                       "total_ms": round(ticks[0]["total_s"] * 1000, 1), "rows_written": ticks[0]["rows_written"]},
    }


def run(workloads: int, ticks: int, folder: Path) -> dict:
    defaults = HeteroApp()
    interval_s = defaults.schedule_interval
    # Past the run's end: after each attempt's first set, none is due again while the benchmark runs.
    off_interval_s = float(10 * (ticks + 1) * interval_s + 3600)
    nodes, catalog = _bench_files(folder, workloads)
    load_before = os.getloadavg()
    sleepers = _start_sleepers(workloads)
    platforms: dict[str, Platform] = {}
    try:
        apps = {}
        for name, metric_interval_s in ((SHIPPED, None), (OFF, off_interval_s)):
            (folder / name).mkdir()
            apps[name] = _app(folder / name, nodes, catalog, metric_interval_s)
            _leave_running(apps[name], sleepers)
        for name, app in apps.items():
            platforms[name] = build_platform(app)  # the restart: a new server over the same store
            platforms[name].scheduler.reconcile()  # what its loop does first: adopt what still runs
        adopted = {name: _adopted(platform) for name, platform in platforms.items()}
        recorded: dict[str, list[dict]] = {name: [] for name in platforms}
        for number in range(ticks + 1):
            for name, platform in platforms.items():
                before, walked = _rows(platform), _walked_at(platform)
                platform.scheduler.tick()
                timing = platform.scheduler.ticks.recent()[-1]
                recorded[name].append({**asdict(timing), "rows_written": _rows(platform) - before,
                                       "walked": _walked_at(platform) != walked})
                if number == 0 and name == OFF:
                    freeze_long_lived()  # as the server's loop does after its first tick
                # The server's loop waits schedule_interval after a tick ends; here the other server ticks halfway.
                time.sleep(interval_s / 2)
        return {
            "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "workloads": workloads, "adopted": adopted, "cpus": os.cpu_count(),
            "load_average_1_5_15_before": [round(load, 2) for load in load_before],
            "load_average_1_5_15_after": [round(load, 2) for load in os.getloadavg()],
            "processes_on_the_machine": len(psutil.pids()),
            "schedule_interval_s": interval_s,
            "metric_interval_s": {SHIPPED: defaults.metric_interval_s, OFF: off_interval_s},
            "usage_interval_s": platforms[SHIPPED].backend.usage_interval_s,
            "engine_process": defaults.engine_process,
            "summary": {name: _summary(ticks) for name, ticks in recorded.items()},
            "ticks": recorded,
        }
    finally:
        for platform in platforms.values():
            _close(platform)
        _kill(sleepers)


def _stop_on_sigterm(signum, frame) -> None:
    raise KeyboardInterrupt  # unwinds through run()'s cleanup, as Ctrl-C does


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=60, help="ticks of each server after its first")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    with tempfile.TemporaryDirectory() as folder:
        figures = run(args.workloads, args.ticks, Path(folder))
    text = json.dumps(figures, indent=2)
    print(json.dumps({"workloads": figures["workloads"], "adopted": figures["adopted"],
                      "load_average_1_5_15_before": figures["load_average_1_5_15_before"],
                      "load_average_1_5_15_after": figures["load_average_1_5_15_after"],
                      "summary": figures["summary"]}, indent=2))
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
