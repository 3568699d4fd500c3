"""The Microsoft Philly trace as a heterogeneous queueing benchmark.

    scenario = Scenario("philly_jobs.csv", "gavel_throughputs.json", Window.parse("2017-11-06+7d"))
    out = run_queueing(scenario, workers=2)  # fifo, quota-fifo, engine, engine-blind on one window
    out["schedulers"]["engine"]["avg_jct_s"], out["heterogeneity_gain"]

The trace gives arrival, duration, GPU count and virtual cluster (our tenant) of each job. It
says nothing about the model, so each job draws one of Gavel's 26 job types; the trace duration
is taken as its run time on a K80, and Gavel's isolated throughputs turn it into run times on
P100 and V100 (see :func:`load_speeds` for why K80). The cluster has 8-GPU nodes of all three
flavors; quotas follow each tenant's GPU-hours (see :func:`tenant_quotas`).
"""

from __future__ import annotations

import csv
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from ..catalog import DEFAULT_CATALOG_PATH, load_catalog
from ..engine import Device, Engine, NodeState, QueuePolicy, Request, Res, TenantQuota
from ..engine_inputs import queue_policies
from .baselines import FifoScheduler, QuotaFifoScheduler
from .replay_metrics import summarize, tenant_ratio
from .replay import SimJob, replay

__all__ = [
    "BLIND_ORDER",
    "DEFAULT_WINDOW",
    "FLAVORS",
    "REFERENCE",
    "SCHEDULERS",
    "Scenario",
    "TraceJob",
    "Window",
    "build_cluster",
    "default_queues",
    "load_speeds",
    "load_trace",
    "make_jobs",
    "request_for",
    "run_one",
    "run_queueing",
    "tenant_quotas",
]

FLAVORS = ("k80", "p100", "v100")
REFERENCE = "k80"
# A heterogeneity-blind admin lists flavors newest first, the same for every job.
BLIND_ORDER = ("v100", "p100", "k80")
GPUS_PER_NODE = 8
CPU_PER_GPU, MEM_PER_GPU = 4_000, 32 * 1024  # milli-cores, MiB: enough that devices are what binds
COHORT = "philly"


@dataclass(frozen=True, slots=True)
class Window:
    """A contiguous slice of the trace by submit time: ``start`` and ``days`` after it."""

    start: datetime
    days: float

    @classmethod
    def parse(cls, text: str) -> Window:
        """``"2017-11-06+7d"`` or ``"2017-11-06T12:00+1.5d"``; without ``+Nd``, one day."""
        start, _, days = text.partition("+")
        try:
            return cls(datetime.fromisoformat(start), float(days.removesuffix("d") or 1))
        except ValueError:
            raise ValueError(f"window must look like 2017-11-06+7d: {text!r}") from None

    @property
    def end(self) -> datetime:
        return self.start + timedelta(days=self.days)

    @property
    def seconds(self) -> float:
        return self.days * 86_400

    def __str__(self) -> str:
        return f"{self.start.isoformat(sep=' ')} + {self.days:g} days"


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One row of the trace: seconds since the window opened, K80 run time, GPUs, tenant."""

    arrival: float
    duration: float
    gpus: int
    tenant: str


def load_trace(path: str | Path, window: Window | None = None) -> list[TraceJob]:
    """The jobs submitted inside ``window`` (all jobs without one), in submit order, file order breaking ties."""
    rows = _read_trace(str(path))
    if window is not None:
        rows = [row for row in rows if window.start <= row[0] < window.end]
    if not rows:
        return []
    origin = window.start if window is not None else rows[0][0]
    return [TraceJob((at - origin).total_seconds(), duration, gpus, tenant) for at, duration, gpus, tenant in rows]


@lru_cache(maxsize=2)
def _read_trace(path: str) -> tuple[tuple[datetime, float, int, str], ...]:
    """The whole trace, parsed and sorted once per process: every scheduler replays the same rows."""
    with open(path, newline="") as f:
        rows = [(datetime.fromisoformat(r["timestamp"]), i, r) for i, r in enumerate(csv.DictReader(f))]
    rows.sort(key=lambda row: (row[0], row[1]))
    return tuple((at, float(r["duration"]), int(r["num_gpus"]), r["cluster"]) for at, _i, r in rows)


def load_speeds(path: str | Path) -> dict[str, dict[str, float]]:
    """Job type -> flavor -> speed relative to a K80, from Gavel's isolated ("null") throughputs.

    The K80 is the reference because it is the slowest generation for 22 of the 26 types (the
    other four, recommendation models, are slower on a V100 in Gavel's measurements), so a trace
    duration is an upper bound of the run time almost everywhere: the conservative reading of a
    trace that does not say which GPUs it ran on.
    """
    with open(path) as f:
        table = json.load(f)
    speeds: dict[str, dict[str, float]] = {}
    for key, row in table[REFERENCE].items():
        name, _, scale = key.strip("()").rpartition(", ")
        if scale != "1":
            continue  # data-parallel scale factors: the per-GPU ratio is what we need
        name = name.strip("'")
        reference = row["null"]
        speeds[name] = {flavor: table[flavor][key]["null"] / reference for flavor in FLAVORS}
    return dict(sorted(speeds.items()))


def request_for(gpus: int) -> Request:
    """Up to 8 GPUs: one replica with that many; more: a gang of ceil(n/8) replicas of 8."""
    devices, replicas = (gpus, 1) if gpus <= GPUS_PER_NODE else (GPUS_PER_NODE, math.ceil(gpus / GPUS_PER_NODE))
    return Request(cpu=CPU_PER_GPU * devices, mem=MEM_PER_GPU * devices, devices=devices, replicas=replicas)


def make_jobs(trace: list[TraceJob], speeds: dict[str, dict[str, float]], *, seed: int,
              aware: bool = True) -> list[SimJob]:
    """Jobs of the ``training`` queue, each of a job type drawn uniformly by ``seed``, with flavors
    fastest first for that type when ``aware``, else in :data:`BLIND_ORDER`."""
    types = sorted(speeds)
    draws = np.random.default_rng(seed).integers(len(types), size=len(trace))
    jobs = []
    for i, (row, draw) in enumerate(zip(trace, draws)):
        speed = speeds[types[int(draw)]]
        flavors = tuple(sorted(FLAVORS, key=lambda f: (-speed[f], BLIND_ORDER.index(f)))) if aware else BLIND_ORDER
        jobs.append(SimJob(i, row.tenant, "training", row.arrival, row.duration, request_for(row.gpus), flavors, speed))
    return jobs


def build_cluster(nodes_per_flavor: int) -> list[NodeState]:
    """``nodes_per_flavor`` nodes of 8 GPUs for each of k80, p100 and v100."""
    nodes = []
    for flavor in FLAVORS:
        for i in range(nodes_per_flavor):
            devices = [Device(index=d, free_milli=1000) for d in range(GPUS_PER_NODE)]
            cpu, mem = 2 * CPU_PER_GPU * GPUS_PER_NODE, 2 * MEM_PER_GPU * GPUS_PER_NODE
            nodes.append(NodeState(f"{flavor}-{i:03d}", flavor, cpu, mem, cpu, mem, devices, family="nvidia",
                                   model=flavor.upper(), domain=f"{flavor}-{i:03d}"))
    return nodes


def tenant_quotas(jobs: list[SimJob], nodes: list[NodeState]) -> dict[str, TenantQuota]:
    """Nominal GPUs per tenant and flavor, in proportion to the tenant's GPU-hours in ``jobs``.

    Each flavor's GPUs are shared out by largest remainder, so quotas add up to the cluster.
    A tenant whose share is smaller than its largest job gets that job's size on the flavor
    every blind order tries first (v100): strict quota FIFO could never run the job otherwise,
    and an admin would not leave a tenant's queue blocked for good. That floor is the only
    over-commitment.
    """
    demand: dict[str, float] = {}
    largest: dict[str, int] = {}
    for job in jobs:
        gpus = job.request.total.dev // 1000
        demand[job.tenant] = demand.get(job.tenant, 0.0) + gpus * job.work
        largest[job.tenant] = max(largest.get(job.tenant, 0), gpus)
    capacity = {flavor: sum(len(n.devices) for n in nodes if n.flavor == flavor) for flavor in FLAVORS}
    total = sum(demand.values()) or 1.0
    tenants = sorted(demand)
    nominal = {tenant: {} for tenant in tenants}
    for flavor, gpus in capacity.items():
        for tenant, share in _largest_remainder({t: demand[t] / total * gpus for t in tenants}, gpus).items():
            nominal[tenant][flavor] = share
    for tenant in tenants:
        floor_flavor = BLIND_ORDER[0]
        nominal[tenant][floor_flavor] = max(nominal[tenant][floor_flavor], min(largest[tenant], capacity[floor_flavor]))
    return {
        tenant: TenantQuota(tenant, COHORT, nominal={f: _gpus(n) for f, n in nominal[tenant].items()})
        for tenant in tenants
    }


def _gpus(n: int) -> Res:
    return Res(CPU_PER_GPU * n, MEM_PER_GPU * n, 1000 * n)


def _largest_remainder(exact: dict[str, float], total: int) -> dict[str, int]:
    shares = {k: int(v) for k, v in exact.items()}
    order = sorted(exact, key=lambda k: (-(exact[k] - shares[k]), k))
    for k in order[: total - sum(shares.values())]:
        shares[k] += 1
    return shares


def default_queues(**overrides: dict) -> dict[str, QueuePolicy]:
    """The shipped catalog's queues as engine policies; ``overrides`` patch fields per queue."""
    base = queue_policies(load_catalog(DEFAULT_CATALOG_PATH))
    for name, fields in overrides.items():
        base[name] = replace(base[name], **fields)
    return base


# -- the benchmark ---------------------------------------------------------------------------

DEFAULT_WINDOW = "2017-11-06+7d"
DEFAULT_NODES_PER_FLAVOR = 10
# name -> (what it is, heterogeneity-aware flavor order?)
SCHEDULERS = {
    "fifo": ("one global FIFO queue, no quotas, head-of-line blocking", False),
    "quota-fifo": ("Kueue-like: strict FIFO per tenant, nominal quota, no borrowing", False),
    "engine": ("our engine: borrowing in one cohort, DRF, backfill, reclaim; fastest flavor first", True),
    "engine-blind": ("our engine with the fixed flavor order v100, p100, k80", False),
}


@dataclass(frozen=True, slots=True)
class Scenario:
    """Everything that decides one benchmark run; picklable, so runs can go to worker processes."""

    trace: str
    throughputs: str
    window: Window
    seed: int = 1
    nodes_per_flavor: int = DEFAULT_NODES_PER_FLAVOR
    training_borrows: bool = True

    def queues(self) -> dict[str, QueuePolicy]:
        # The catalog's training queue borrows only after its max wait; the benchmark's engine
        # runs with Kueue's cohort default instead (borrow whenever the lender is idle) unless asked.
        return default_queues(training={"can_borrow": True}) if self.training_borrows else default_queues()

    def jobs(self, *, aware: bool) -> list[SimJob]:
        return make_jobs(load_trace(self.trace, self.window), load_speeds(self.throughputs), seed=self.seed, aware=aware)


def run_one(scenario: Scenario, name: str) -> dict:
    """Replay the scenario's window under one scheduler of :data:`SCHEDULERS` and summarise it."""
    _what, aware = SCHEDULERS[name]
    jobs = scenario.jobs(aware=aware)
    nodes = build_cluster(scenario.nodes_per_flavor)
    scheduler = {"fifo": FifoScheduler, "quota-fifo": QuotaFifoScheduler}.get(name, lambda: Engine(eta=False))()
    result = replay(jobs, nodes, scenario.queues(), tenant_quotas(jobs, nodes), scheduler)
    return summarize(result, window_s=scenario.window.seconds, gpus=sum(len(n.devices) for n in nodes))


def run_queueing(scenario: Scenario, *, schedulers: tuple[str, ...] = tuple(SCHEDULERS), workers: int = 1) -> dict:
    """Every scheduler on the same window and cluster, plus fairness against quota FIFO and the heterogeneity gain.

    Runs are independent and deterministic, so ``workers`` > 1 spreads them over processes
    without changing any number.
    """
    began = time.perf_counter()
    jobs = scenario.jobs(aware=False)
    if not jobs:
        raise ValueError(f"no jobs submitted in {scenario.window}")
    # SCHEDULERS runs fastest to slowest; starting the slowest first lets parallel workers finish together.
    order = [name for name in reversed(SCHEDULERS) if name in schedulers]
    if workers > 1 and len(order) > 1:
        with ProcessPoolExecutor(max_workers=min(workers, len(order))) as pool:
            futures = {name: pool.submit(run_one, scenario, name) for name in order}
            results = {name: futures[name].result() for name in order}
    else:
        results = {name: run_one(scenario, name) for name in order}
    results = {name: results[name] for name in schedulers}
    if "quota-fifo" in results:
        for summary in results.values():
            summary["tenant_jct_vs_quota_fifo"] = tenant_ratio(summary, results["quota-fifo"])
    nodes = build_cluster(scenario.nodes_per_flavor)
    quotas = tenant_quotas(jobs, nodes)
    gpus = {flavor: sum(len(n.devices) for n in nodes if n.flavor == flavor) for flavor in FLAVORS}
    out = {
        "trace": Path(scenario.trace).name,
        "window": {"start": scenario.window.start.isoformat(), "days": scenario.window.days},
        "seed": scenario.seed,
        "jobs": len(jobs),
        "tenants": len(quotas),
        "cluster": {"nodes_per_flavor": scenario.nodes_per_flavor, "gpus_per_node": GPUS_PER_NODE, "gpus": gpus},
        "reference_flavor": REFERENCE,
        "training_borrows": scenario.training_borrows,
        "quotas": {t: {f: q.nominal[f].dev // 1000 for f in FLAVORS} for t, q in quotas.items()},
        "quota_overcommit": {
            f: sum(q.nominal[f].dev for q in quotas.values()) / 1000 / gpus[f] for f in FLAVORS
        },
        "schedulers": results,
        "descriptions": {name: SCHEDULERS[name][0] for name in schedulers},
    }
    if {"engine", "engine-blind"} <= results.keys():
        out["heterogeneity_gain"] = results["engine-blind"]["avg_jct_s"] / results["engine"]["avg_jct_s"]
    out["run_s"] = time.perf_counter() - began
    out["workers"] = workers
    return out
