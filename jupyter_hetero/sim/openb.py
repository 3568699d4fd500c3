"""Replay of the Alibaba openb traces under the FGD paper's placement protocol.

    result = run_placement("openb_node_list_gpu_node.csv", "openb_pod_list_default.csv", "hetero", range(42, 52))
    result["alloc_pct"]   # {"100": 95.6, "130": 95.8}: % of cluster GPUs allocated at that arrived demand

The protocol (arrival order, feasibility, metric, baselines) is the one written down in
``shared/data/FGD_PROTOCOL.md``; every seed draws from one random stream, in this order: pod
shuffle, inflation draws, node priority permutation, then the Random policy's own draws.

``hetero`` is the product: each pod is one request placed by the engine's own
:meth:`~jupyter_hetero.engine.Cluster.place` with the server's scorer
(:class:`~jupyter_hetero.engine.scoring.FragmentationScorer`), the trace's nodes as ``NodeState`` objects
of one flavor and ``gpu_spec`` as a label requirement on the GPU model. The six baselines are
simulator-only references (:mod:`.openb_baselines`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..engine import Cluster, Constraints, Device, LabelReq, NodeState, Request
from ..engine.fragmentation import MILLI, TypicalMix, typical_mix
from ..engine.scoring import FragmentationScorer
from .openb_baselines import BASELINES, place_baseline
from .openb_trace import Node, Pod, load_nodes, load_pods

__all__ = [
    "BASELINES",
    "FLAVOR",
    "MODEL_LABEL",
    "POLICIES",
    "Node",
    "Pod",
    "allocation_at",
    "arrival_order",
    "engine_nodes",
    "engine_request",
    "load_nodes",
    "load_pods",
    "place_pods",
    "place_with_engine",
    "replay",
    "run_placement",
]

POLICIES = (*BASELINES, "hetero")
INFLATION = 1.3
LEVELS = (100, 130)
FLAVOR = "openb"  # every trace node in one flavor: the placement, not the flavor order, decides
MODEL_LABEL = "nvidia.com/gpu.product"  # the GPU feature discovery label a gpu_spec becomes a requirement on


def arrival_order(
    pods: list[Pod], capacity_milli: int, rng: np.random.Generator, ratio: float = INFLATION
) -> list[int]:
    """Pod indexes in arrival order: all pods shuffled, then uniform draws until demand would pass ratio x capacity."""
    order = [int(i) for i in rng.permutation(len(pods))]
    demand, bound = sum(p.gpu_demand for p in pods), ratio * capacity_milli
    while True:
        draw = int(rng.integers(len(pods)))
        if demand + pods[draw].gpu_demand > bound:
            return order  # the draw that would pass the bound is not added
        demand += pods[draw].gpu_demand
        order.append(draw)


def _round_div(numerator: int, denominator: int) -> int:
    """numerator / denominator rounded half to even, exactly."""
    quotient, remainder = divmod(numerator, denominator)
    if 2 * remainder > denominator or (2 * remainder == denominator and quotient % 2):
        quotient += 1
    return quotient


def allocation_at(
    arrived: Iterable[int], used: Iterable[int], capacity_milli: int, levels: Iterable[int] = LEVELS
) -> dict[int, float]:
    """Mean % of capacity allocated over the snapshots whose arrived demand rounds to each level (else level +-1)."""
    buckets: dict[int, list[int]] = {}
    for a, u in zip(arrived, used):
        # Integer arithmetic keeps the round-half-even of the protocol exact (2-decimal percent = 1/10000).
        buckets.setdefault(_round_div(100 * a, capacity_milli), []).append(_round_div(10_000 * u, capacity_milli))
    out = {}
    for level in levels:
        values = buckets.get(level) or [v for near in (level - 1, level, level + 1) for v in buckets.get(near, [])]
        out[level] = sum(values) / len(values) / 100 if values else float("nan")
    return out


def engine_nodes(nodes: list[Node], priority: np.ndarray) -> list[NodeState]:
    """The trace's nodes as the engine's, named so that name order is the seed's node priority.

    The engine breaks equal scores by node name; the protocol breaks them by a node priority drawn
    once per seed. Prefixing each name with its priority makes the two the same."""
    width = len(str(len(nodes)))
    return [
        NodeState(
            name=f"{int(rank):0{width}d}-{n.name}", flavor=FLAVOR, cpu=n.cpu_milli, mem=n.memory_mib,
            free_cpu=n.cpu_milli, free_mem=n.memory_mib, devices=[Device(g) for g in range(n.gpus)],
            family="nvidia", model=n.model, labels={MODEL_LABEL: n.model},
        )
        for n, rank in zip(nodes, priority)
    ]


def engine_request(pod: Pod) -> tuple[Request, Constraints]:
    """One pod as the engine's request: whole devices, a fraction of one, or none; ``gpu_spec`` as a label requirement."""
    fractional = pod.gpu_count == 1 and pod.gpu_milli < MILLI
    request = Request(
        cpu=pod.cpu_milli, mem=pod.memory_mib, devices=0 if fractional else pod.gpu_count,
        device_milli=pod.gpu_milli if fractional else 0,
    )
    if not (pod.gpu_count and pod.models):
        return request, Constraints()
    return request, Constraints(labels=(LabelReq(MODEL_LABEL, "In", tuple(sorted(pod.models))),))


@lru_cache(maxsize=4)
def _scorer(mix: TypicalMix) -> FragmentationScorer:
    # One scorer per mix: seeds of one trace share its memo of node-state scores.
    return FragmentationScorer(mix)


def place_with_engine(
    nodes: list[Node], pods: list[Pod], *, order: Iterable[int], priority: np.ndarray, mix: TypicalMix
) -> list[tuple[int, tuple[int, ...]] | None]:
    """Each pod in ``order`` placed by the engine's ``Cluster.place``; (node index, GPU indexes) or None."""
    states = engine_nodes(nodes, priority)
    where = {state.name: i for i, state in enumerate(states)}
    cluster = Cluster(states, node_scorer=_scorer(mix))
    requests: dict[int, tuple[Request, Constraints]] = {}
    placements: list[tuple[int, tuple[int, ...]] | None] = []
    for i in order:
        if i not in requests:
            requests[i] = engine_request(pods[i])
        request, constraints = requests[i]
        slots = cluster.place(FLAVOR, request, constraints)
        if slots is None:
            placements.append(None)
        else:
            placements.append((where[slots[0].node], tuple(index for index, _milli, _mem in slots[0].devices)))
    return placements


def place_pods(
    nodes: list[Node], pods: list[Pod], policy: str, rng: np.random.Generator, *,
    order: Iterable[int] | None = None, priority: np.ndarray | None = None, mix: TypicalMix | None = None,
) -> list[tuple[int, tuple[int, ...]] | None]:
    """Try each pod once in ``order``; the (node index, GPU indexes) each one got, or None where it fit nowhere."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    order = range(len(pods)) if order is None else order
    priority = np.arange(len(nodes)) if priority is None else np.asarray(priority)
    mix = mix or typical_mix(p.shape for p in pods)
    if policy == "hetero":
        return place_with_engine(nodes, pods, order=order, priority=priority, mix=mix)
    return place_baseline(nodes, pods, policy, rng, order=order, priority=priority, mix=mix)


def replay(
    nodes: list[Node], pods: list[Pod], policy: str, seed: int, mix: TypicalMix | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Arrived and allocated GPU milli after each pod attempt of one seed of the protocol."""
    rng = np.random.default_rng(seed)
    order = arrival_order(pods, MILLI * sum(n.gpus for n in nodes), rng)
    priority = rng.permutation(len(nodes))
    placements = place_pods(nodes, pods, policy, rng, order=order, priority=priority, mix=mix)
    demand = np.array([pods[i].gpu_demand for i in order], dtype=np.int64)
    placed = np.array([p is not None for p in placements])
    return np.cumsum(demand), np.cumsum(demand * placed)


def run_placement(nodes_csv: str | Path, pods_csv: str | Path, policy: str, seeds: Iterable[int]) -> dict:
    """Replay every seed and report the mean % of GPUs allocated at 100% and 130% arrived demand."""
    started = time.perf_counter()
    nodes, pods = load_nodes(nodes_csv), load_pods(pods_csv)
    capacity = MILLI * sum(n.gpus for n in nodes)
    mix = typical_mix(p.shape for p in pods)
    per_seed = {}
    for seed in seeds:
        arrived, used = replay(nodes, pods, policy, seed, mix)
        per_seed[str(seed)] = {str(k): v for k, v in allocation_at(arrived.tolist(), used.tolist(), capacity).items()}
    means = {str(level): round(float(np.mean([s[str(level)] for s in per_seed.values()])), 2) for level in LEVELS}
    return {
        "policy": policy,
        "trace": Path(pods_csv).stem.removeprefix("openb_pod_list_"),
        "seeds": [int(s) for s in per_seed],
        "alloc_pct": means,
        "per_seed": per_seed,
        "seconds": round(time.perf_counter() - started, 2),
    }
