"""Control-plane throughput: admissions per second over a stream of cycles on a large mixed cluster.

    result = run_throughput(nodes=5000, workloads=50000, seed=1)
    result["admissions_per_s"], result["cycle_p99_ms"], result["peak_rss_mib"]

The stream: 50,000 workloads wait; each cycle admits what fits; between cycles the oldest
running work completes (a fixed share of it), as a busy cluster would see. Only time spent
inside ``Engine.cycle`` counts, so the figure is the engine's, not the harness's. The engine
places every request with the server's fragmentation-aware scorer.
"""

from __future__ import annotations

import random
import resource
import time
from dataclasses import dataclass

from ..engine import (
    Constraints,
    Device,
    Engine,
    NodeState,
    QueuePolicy,
    Request,
    Res,
    Snapshot,
    TenantQuota,
    VariantNeed,
    Workload,
    WorkloadKind,
)
from ..engine.fragmentation import typical_mix
from ..engine.scoring import FragmentationScorer, shape_of

__all__ = ["build_cluster", "build_workloads", "run_throughput"]

GIB = 1024
TENANTS = 20

# (flavor, share of nodes, family, devices per node, device memory GiB, cores, memory GiB)
FLEET = [
    ("cpu-standard", 0.40, "cpu", 0, 0, 64, 256),
    ("a100-80g", 0.20, "nvidia", 8, 80, 128, 1024),
    ("h100-80g", 0.05, "nvidia", 8, 80, 192, 2048),
    ("t4", 0.15, "nvidia", 4, 16, 32, 128),
    ("ascend-910b", 0.15, "ascend", 8, 64, 192, 1536),
    ("amd-mi300", 0.05, "amd", 8, 192, 128, 1024),
]

# (share of workloads, queue, request, eligible flavors in template order, runtime variant needs)
_NV = (VariantNeed("nvidia", "535", "12.1"), VariantNeed("ascend", "23.0", "8.0"), VariantNeed("amd", None, "6.0"),
       VariantNeed("cpu"))
MIX = [
    (0.30, "batch", Request(cpu=4000, mem=16 * GIB), ("cpu-standard",)),
    (0.20, "experiment", Request(cpu=2000, mem=8 * GIB, device_milli=500, device_mem=8 * GIB),
     ("t4", "a100-80g", "ascend-910b")),
    (0.20, "training", Request(cpu=16000, mem=128 * GIB, devices=1, device_mem=40 * GIB),
     ("a100-80g", "h100-80g", "ascend-910b", "amd-mi300")),
    (0.12, "training", Request(cpu=32000, mem=256 * GIB, devices=4, device_mem=40 * GIB),
     ("a100-80g", "h100-80g", "ascend-910b", "amd-mi300")),
    (0.05, "training", Request(cpu=64000, mem=512 * GIB, devices=8, device_mem=40 * GIB, replicas=2),
     ("h100-80g", "a100-80g", "ascend-910b")),
    (0.08, "inference", Request(cpu=8000, mem=32 * GIB, devices=1, device_mem=16 * GIB),
     ("t4", "ascend-910b", "a100-80g")),
    (0.05, "urgent", Request(cpu=8000, mem=64 * GIB, devices=2, device_mem=40 * GIB),
     ("a100-80g", "h100-80g", "ascend-910b")),
]


def queue_policies() -> dict[str, QueuePolicy]:
    return {
        "urgent": QueuePolicy("urgent", 1000, 300, "notify", may_preempt=frozenset({"batch", "experiment"}), grace_s=60),
        "inference": QueuePolicy("inference", 800, 600, "allow-preemption", may_preempt=frozenset({"batch"}),
                                 reserved={"t4": 40}),
        "training": QueuePolicy("training", 300, 7200, "allow-borrowing", may_preempt=frozenset({"batch"}),
                                preemptible=True, can_borrow=False),
        "experiment": QueuePolicy("experiment", 200, 1800, "raise-priority", priority_boost=150, preemptible=True),
        "batch": QueuePolicy("batch", 100, 86400, "raise-priority", priority_boost=100, preemptible=True),
    }


def build_cluster(n_nodes: int, seed: int = 1) -> list[NodeState]:
    """A mixed CPU/GPU/NPU fleet; interconnect domains group eight nodes of a flavor."""
    rng = random.Random(seed)
    nodes = []
    for flavor, share, family, devices, dev_gib, cores, mem_gib in FLEET:
        for i in range(max(1, round(n_nodes * share))):
            dev_mem = dev_gib * GIB
            nodes.append(NodeState(
                name=f"{flavor}-{i:05d}", flavor=flavor, cpu=cores * 1000, mem=mem_gib * GIB,
                free_cpu=cores * 1000, free_mem=mem_gib * GIB,
                devices=[Device(d, 1000, dev_mem, dev_mem) for d in range(devices)],
                family=family, model=flavor, driver=rng.choice(["535.104", "550.54"]) if family == "nvidia" else "24.1",
                runtime={"nvidia": "12.4", "ascend": "8.0", "amd": "6.1"}.get(family), interconnect="nvlink" if devices else "none",
                domain=f"{flavor}-d{i // 8}",
            ))
    return nodes


def tenant_quotas(nodes: list[NodeState]) -> dict[str, TenantQuota]:
    """Twenty tenants in one cohort, each with an equal nominal share of every flavor."""
    totals: dict[str, Res] = {}
    for node in nodes:
        totals[node.flavor] = totals.get(node.flavor, Res()) + Res(node.cpu, node.mem, len(node.devices) * 1000)
    share = {flavor: Res(t.cpu // TENANTS, t.mem // TENANTS, t.dev // TENANTS) for flavor, t in totals.items()}
    return {f"t{i:02d}": TenantQuota(f"t{i:02d}", "all", 1.0, dict(share)) for i in range(TENANTS)}


def build_workloads(n: int, seed: int = 1, start_id: int = 1) -> list[Workload]:
    rng = random.Random(seed)
    weights = [share for share, *_ in MIX]
    workloads = []
    for i in range(n):
        _share, queue, request, flavors = rng.choices(MIX, weights)[0]
        workloads.append(Workload(
            id=start_id + i, tenant=f"t{rng.randrange(TENANTS):02d}", queue=queue, request=request, flavors=flavors,
            submitted_at=float(i), kind=WorkloadKind.KERNEL if queue == "experiment" else WorkloadKind.JOB,
            constraints=Constraints(variants=_NV), runtime_s=rng.choice([600.0, 1800.0, 3600.0, 7200.0]),
        ))
    return workloads


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class _Running:
    workload: Workload
    end: float


def run_throughput(nodes: int = 5000, workloads: int = 50_000, *, cycles: int = 30, complete_share: float = 0.1,
                   seed: int = 1, eta: bool = True) -> dict:
    """Run a stream of ``cycles`` cycles; returns admissions/s, cycle latency percentiles and peak RSS."""
    cluster = build_cluster(nodes, seed)
    quotas = tenant_quotas(cluster)
    queues = queue_policies()
    pending = build_workloads(workloads, seed)
    running: list[Workload] = []
    # The server's scorer: the typical requests on their eligible flavors (app.HeteroApp._engine).
    typical = typical_mix(shape_of(request, flavors=flavors) for _share, _queue, request, flavors in MIX)
    engine = Engine(eta=eta, node_scorer=FragmentationScorer(typical))
    now = float(workloads)
    latencies, admitted_total, preempted_total = [], 0, 0
    for _ in range(cycles):
        snapshot = Snapshot(now=now, nodes=cluster, queues=queues, tenants=quotas, running=running, pending=pending)
        started = time.perf_counter()
        decisions = engine.cycle(snapshot)
        latencies.append(time.perf_counter() - started)
        admitted = {a.workload: a.placement for a in decisions.admissions}
        admitted_total += len(admitted)
        preempted_total += len(decisions.preemptions)
        # Victims leave within their grace (shorter than a cycle here) and wait again.
        victims = {p.victim for p in decisions.preemptions}
        requeued = [w for w in running if w.id in victims]
        running = [w for w in running if w.id not in victims]
        for workload in requeued:
            workload.placement = workload.started_at = workload.expected_end = None
        newly = []
        still = []
        for workload in pending:
            placement = admitted.get(workload.id)
            if placement is None:
                still.append(workload)
            else:
                workload.placement, workload.started_at = placement, now
                workload.expected_end = now + workload.runtime_s
                newly.append(workload)
        pending = still + requeued
        # The oldest share of running work completes before the next cycle.
        running = sorted(running + newly, key=lambda w: (w.expected_end, w.id))
        running = running[int(len(running) * complete_share):]
        now += 60
        if not pending:
            break
    ordered = sorted(latencies)
    total = sum(latencies)
    return {
        "nodes": len(cluster),
        "workloads": workloads,
        "cycles": len(latencies),
        "admissions": admitted_total,
        "preemptions": preempted_total,
        "admissions_per_s": round(admitted_total / total, 1) if total else 0.0,
        "cycle_mean_ms": round(1000 * total / len(latencies), 1),
        "cycle_p50_ms": round(1000 * ordered[len(ordered) // 2], 1),
        "cycle_p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
        "engine_seconds": round(total, 2),
        "pending_left": len(pending),
        "peak_rss_mib": round(_peak_rss_mib(), 1),
        "eta": eta,
    }
