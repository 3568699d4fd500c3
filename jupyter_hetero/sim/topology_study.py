"""Topology-aware against topology-blind placement of whole-device jobs on emulated 8-device servers.

    samples = philly_samples("philly_jobs.csv")           # (devices, run time) of its 1/2/4/8-GPU jobs
    out = run_topology(samples, presets=("nvlink-2x4",), nodes=16, jobs=2000, seeds=(1, 2, 3))
    out["presets"]["nvlink-2x4"]["aware"]["single_domain_share"]

Each preset of ``topologies.yaml`` becomes a cluster of identical emulated nodes, turned into the
engine's nodes by the server's own ``engine_inputs.node_state``. One seeded job stream (devices
and run times drawn from the samples, Poisson arrivals at ``load`` times the cluster's device
capacity) is replayed twice on each: ``Engine(topology=True)``, the default, and
``Engine(topology=False)``, which takes the lowest free device indexes; both with the product's
fragmentation-aware scorer. Figures per run:

- single-domain share: multi-device jobs whose devices all sit in one link domain;
- single-NUMA share: multi-device jobs whose devices all sit on one NUMA node;
- allocation rate: device-seconds allocated over device-seconds available, from the first arrival
  to the last (after it, the cluster only drains);
- mean wait: first start minus arrival, over all jobs and over multi-device jobs.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..backends.local.discovery import load_emulated_nodes
from ..capability import NodeCapability
from ..engine import Decisions, Engine, NodeState, Request, Res, Snapshot, TenantQuota
from ..engine.scoring import fragmentation_scorer
from ..engine.topology import domain_of
from ..engine_inputs import NodeView, node_state
from .philly import default_queues, load_trace
from .replay import SimJob, replay

__all__ = ["PRESETS", "PRESETS_FILE", "SIZES", "build_nodes", "make_stream", "philly_samples", "run_topology"]

PRESETS_FILE = Path(__file__).with_name("topologies.yaml")
PRESETS = ("nvswitch-8", "nvlink-2x4", "ascend-910b-hccs", "mi300x-xgmi", "ascend-910a-2x4")
SIZES = (1, 2, 4, 8)  # devices per job: what fits one 8-device node
CPU_PER_DEVICE, MEM_PER_DEVICE = 4_000, 32 * 1024  # milli-cores, MiB: devices are what binds
TENANT, QUEUE = "research", "training"


def philly_samples(path: str | Path) -> list[tuple[int, float]]:
    """(devices, run time in seconds) of every Philly job that asks for 1, 2, 4 or 8 GPUs."""
    return [(job.gpus, job.duration) for job in load_trace(path) if job.gpus in SIZES]


def build_nodes(preset: str, count: int) -> list[NodeState]:
    """``count`` emulated nodes of one preset, as the server's snapshot builds them."""
    capability = _preset(preset)
    nodes = []
    for i in range(count):
        node = capability.model_copy(update={"name": f"{preset}-{i:03d}"})
        nodes.append(node_state(NodeView(node, flavor=preset, state="ready", first_seen=0.0, last_seen=0.0)))
    return nodes


def _preset(name: str) -> NodeCapability:
    presets = {node.name: node for node in load_emulated_nodes(PRESETS_FILE)}
    if name not in presets:
        raise ValueError(f"unknown topology preset {name!r}; expected one of {', '.join(presets)}")
    return presets[name]


def make_stream(samples: list[tuple[int, float]], *, jobs: int, devices: int, load: float, seed: int,
                flavor: str, max_runtime_s: float) -> list[SimJob]:
    """``jobs`` jobs drawn from ``samples`` with Poisson arrivals offering ``load`` x ``devices`` of work."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(len(samples), size=jobs)
    drawn = [(samples[i][0], min(max(samples[i][1], 1.0), max_runtime_s)) for i in picks]
    mean_work = sum(k * run for k, run in drawn) / jobs  # device-seconds per job
    gaps = rng.exponential(mean_work / (load * devices), size=jobs)
    arrivals = np.cumsum(gaps) - gaps[0]
    return [
        SimJob(i, TENANT, QUEUE, float(at), run, _request(k), (flavor,), {flavor: 1.0})
        for i, ((k, run), at) in enumerate(zip(drawn, arrivals))
    ]


def _request(devices: int) -> Request:
    return Request(cpu=CPU_PER_DEVICE * devices, mem=MEM_PER_DEVICE * devices, devices=devices)


class _Recorder:
    """The engine, keeping the first placement of every job it admits."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.first: dict[int, tuple[tuple[int, int, int], ...]] = {}
        self.node: dict[int, str] = {}

    def cycle(self, snapshot: Snapshot) -> Decisions:
        decisions = self.engine.cycle(snapshot)
        for admission in decisions.admissions:
            slot = admission.placement.slots[0]
            self.first.setdefault(admission.workload, slot.devices)
            self.node.setdefault(admission.workload, slot.node)
        return decisions


def _run(preset: str, nodes: list[NodeState], jobs: list[SimJob], *, aware: bool) -> dict:
    devices = sum(len(n.devices) for n in nodes)
    capacity = Res(sum(n.cpu for n in nodes), sum(n.mem for n in nodes), devices * 1000)
    tenants = {TENANT: TenantQuota(TENANT, nominal={preset: capacity})}
    scorer = fragmentation_scorer(job.request for job in jobs)
    recorder = _Recorder(Engine(eta=False, node_scorer=scorer, topology=aware))
    result = replay(jobs, [n.clone() for n in nodes], default_queues(), tenants, recorder)
    by_name = {n.name: n for n in nodes}
    multi = [job for job in jobs if job.request.devices > 1 and job.id in recorder.first]
    # Per multi-device job: (devices, inside one link domain, inside one NUMA node).
    inside = []
    for job in multi:
        node = by_name[recorder.node[job.id]]
        taken = [node.devices[index] for index, _milli, _mem in recorder.first[job.id]]
        numa = {d.numa for d in taken}
        inside.append((job.request.devices, len({domain_of(d) for d in taken}) == 1, len(numa) == 1 and -1 not in numa))
    horizon = max(job.arrival for job in jobs) or 1.0
    allocated = sum(
        record.job.request.devices * sum(max(0.0, min(stop, horizon) - start) for _f, start, stop in record.intervals)
        for record in result.records.values()
    )
    waits = {job.id: result.records[job.id].first_start - job.arrival for job in jobs if job.id in recorder.first}
    return {
        "multi_device_jobs": len(multi),
        "single_domain_share": _mean(domain for _k, domain, _numa in inside),
        "single_numa_share": _mean(numa for _k, _domain, numa in inside),
        "single_domain_share_by_size": {str(k): _mean(d for n, d, _numa in inside if n == k) for k in SIZES[1:]},
        "allocation_rate": allocated / (devices * horizon),
        "mean_wait_s": _mean(waits.values()),
        "mean_wait_multi_s": _mean(waits[job.id] for job in multi),
        "unstarted": len(jobs) - len(waits),
        "cycles": result.cycles,
        "cycle_s": result.cycle_s,
    }


def _mean(values) -> float | None:
    values = [float(v) for v in values]
    return sum(values) / len(values) if values else None


def run_topology(samples: list[tuple[int, float]], *, presets: tuple[str, ...] = PRESETS, nodes: int = 16,
                 jobs: int = 2000, load: float = 0.9, seeds: tuple[int, ...] = (1, 2, 3, 4, 5),
                 max_runtime_s: float = 86_400.0) -> dict:
    """Every preset, aware and blind, on the same job streams (one per seed); figures are means over seeds."""
    began = time.perf_counter()
    out: dict = {
        "nodes_per_preset": nodes, "jobs": jobs, "load": load, "seeds": list(seeds), "max_runtime_s": max_runtime_s,
        "sizes": {str(k): sum(1 for s in samples if s[0] == k) / len(samples) for k in SIZES},
        "presets": {},
    }
    for preset in presets:
        cluster = build_nodes(preset, nodes)
        devices = sum(len(n.devices) for n in cluster)
        runs: dict[str, list[dict]] = {"aware": [], "blind": []}
        for seed in seeds:
            stream = make_stream(samples, jobs=jobs, devices=devices, load=load, seed=seed, flavor=preset,
                                 max_runtime_s=max_runtime_s)
            for mode, aware in (("aware", True), ("blind", False)):
                runs[mode].append(_run(preset, cluster, stream, aware=aware))
        out["presets"][preset] = {"devices": devices, **{mode: _means(per_seed) for mode, per_seed in runs.items()},
                                  "per_seed": runs}
    out["run_s"] = time.perf_counter() - began
    return out


def _means(runs: list[dict]) -> dict:
    """The mean over seeds of every figure (of each size's share, too), ignoring seeds without one."""
    out = {}
    for key, value in runs[0].items():
        if isinstance(value, dict):
            out[key] = _means([run[key] for run in runs])
        else:
            out[key] = _mean(run[key] for run in runs if run[key] is not None)
    return out
