"""Replay of the Alibaba openb traces under the FGD paper's placement protocol.

    result = run_placement("openb_node_list_gpu_node.csv", "openb_pod_list_default.csv", "hetero", range(42, 52))
    result["alloc_pct"]   # {"100": 95.6, "130": 95.8}: % of cluster GPUs allocated at that arrived demand

The protocol (arrival order, feasibility, metric, baselines) is the one written down in
``shared/data/FGD_PROTOCOL.md``; every seed draws from one random stream, in this order: pod
shuffle, inflation draws, node priority permutation, then the Random policy's own draws.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..engine.fragmentation import (
    MILLI,
    FragmentationIndex,
    Shape,
    TypicalMix,
    model_exclusivity,
    placement_keys,
    typical_mix,
)

__all__ = [
    "BASELINES",
    "POLICIES",
    "Node",
    "Pod",
    "allocation_at",
    "arrival_order",
    "load_nodes",
    "load_pods",
    "place_pods",
    "replay",
    "run_placement",
]

BASELINES = ("random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd")
POLICIES = (*BASELINES, "hetero")
INFLATION = 1.3
LEVELS = (100, 130)
MAX_PODS_PER_NODE = 1001
MAX_CPU, MAX_GPU = 128_000, 8 * MILLI  # the simulator's normalisers for DotProd and BestFit


@dataclass(frozen=True, slots=True)
class Node:
    """One GPU node of the trace."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class Pod:
    """One pod of the trace; ``models`` is its ``gpu_spec`` split on ``|`` (None: any model)."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpu_count: int
    gpu_milli: int
    models: frozenset[str] | None = None

    @property
    def shape(self) -> Shape:
        return Shape(self.cpu_milli, self.gpu_milli if self.gpu_count else 0, self.gpu_count, self.models)

    @property
    def gpu_demand(self) -> int:
        return self.gpu_count * self.gpu_milli


def load_nodes(path: str | Path) -> list[Node]:
    """The trace's GPU nodes; CPU-only rows of the all-node list are left out as the protocol does."""
    with open(path, newline="") as f:
        rows = [
            Node(r["sn"], int(r["cpu_milli"]), int(r["memory_mib"]), int(r["gpu"]), r["model"]) for r in csv.DictReader(f)
        ]
    return [n for n in rows if n.gpus > 0]


def load_pods(path: str | Path) -> list[Pod]:
    """The trace's pods sorted by name."""
    with open(path, newline="") as f:
        pods = [
            Pod(
                r["name"], int(r["cpu_milli"]), int(r["memory_mib"]), int(r["num_gpu"]), int(r["gpu_milli"]),
                frozenset(m for m in r["gpu_spec"].split("|") if m) or None,
            )
            for r in csv.DictReader(f)
        ]
    return sorted(pods, key=lambda p: p.name)


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


class _Cluster:
    """Free capacity of every node as arrays, plus per-request-shape score caches refreshed only where nodes changed."""

    def __init__(self, nodes: list[Node], priority: np.ndarray, index: FragmentationIndex | None) -> None:
        width = max(n.gpus for n in nodes)
        self.gpus = np.array([n.gpus for n in nodes])
        self.free = np.array([[MILLI] * n.gpus + [0] * (width - n.gpus) for n in nodes], dtype=np.int64)
        self.cpu = np.array([n.cpu_milli for n in nodes], dtype=np.int64)
        self.mem = np.array([n.memory_mib for n in nodes], dtype=np.int64)
        self.pods = np.zeros(len(nodes), dtype=np.int64)
        self.models = [n.model for n in nodes]
        self.priority = priority  # lower wins ties, as the simulator's permuted node names do
        self.free_total = self.free.sum(axis=1)
        self.max_free = self.free.max(axis=1)
        self.whole_free = (self.free == MILLI).sum(axis=1)
        self.tags = np.zeros((len(nodes), 9), dtype=np.int64)  # GPU pods per shape tag: 0 shared, n n-GPU
        self.version = np.zeros(len(nodes), dtype=np.int64)
        self.index = index
        self.model_ids = np.array([index.model_id(m) for m in self.models]) if index else None
        self.frag = index.amounts(self.free, self.cpu, self.model_ids) if index else None
        self.exclusivity = np.zeros(len(nodes))
        if index is not None:
            gpus_by_model: dict[str, int] = {}
            for n in nodes:
                gpus_by_model[n.model] = gpus_by_model.get(n.model, 0) + n.gpus
            shares = model_exclusivity(index.mix, gpus_by_model)
            self.exclusivity = np.array([shares[m] for m in self.models])
        self._spec_masks: dict[frozenset[str], np.ndarray] = {}
        self._caches: dict[tuple[int, int, int], tuple[list[np.ndarray], np.ndarray, np.ndarray]] = {}

    def feasible(self, pod: Pod) -> np.ndarray:
        ok = (self.cpu >= pod.cpu_milli) & (self.mem >= pod.memory_mib) & (self.pods < MAX_PODS_PER_NODE)
        if pod.gpu_count and pod.models is not None:
            if pod.models not in self._spec_masks:
                self._spec_masks[pod.models] = np.array([m in pod.models for m in self.models])
            ok &= self._spec_masks[pod.models]
        if pod.gpu_count and pod.gpu_milli < MILLI:
            ok &= self.max_free >= pod.gpu_milli
        elif pod.gpu_count:
            ok &= self.whole_free >= pod.gpu_count
        return np.flatnonzero(ok)

    def smallest_fit(self, node: int, pod: Pod) -> tuple[int, ...]:
        """The open-gpu-share "best" choice: the least free GPU that fits, or the lowest-index free GPUs."""
        if not pod.gpu_count:
            return ()
        row = self.free[node]
        if pod.gpu_milli < MILLI:
            return (int(np.argmin(np.where(row >= pod.gpu_milli, row, 2 * MILLI))),)
        return tuple(int(g) for g in np.flatnonzero(row == MILLI)[: pod.gpu_count])

    def place(self, node: int, gpus: tuple[int, ...], pod: Pod) -> None:
        row = self.free[node]
        row[list(gpus)] -= pod.gpu_milli
        self.cpu[node] -= pod.cpu_milli
        self.mem[node] -= pod.memory_mib
        self.pods[node] += 1
        self.free_total[node] = row.sum()
        self.max_free[node] = row.max()
        self.whole_free[node] = (row == MILLI).sum()
        if pod.gpu_count:
            self.tags[node, 0 if pod.gpu_milli < MILLI else pod.gpu_count] += 1
        self.version[node] += 1
        if self.index is not None:
            at = slice(node, node + 1)
            self.frag[node] = self.index.amounts(row[None, :], self.cpu[at], self.model_ids[at])[0]

    def engine_scores(self, policy: str, pod: Pod, cands: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Per-candidate score keys and GPU choice of an engine policy; only nodes changed since last asked are rescored."""
        key = (pod.cpu_milli, pod.gpu_milli if pod.gpu_count else 0, pod.gpu_count)
        if key not in self._caches:
            n = len(self.cpu)
            self._caches[key] = ([], np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64))
        keys, chosen, seen = self._caches[key]
        stale = cands[seen[cands] != self.version[cands]]
        if len(stale):
            fresh_keys, fresh_gpu = self._evaluate(policy, pod, stale)
            if not keys:
                keys.extend(np.zeros(len(self.cpu)) for _ in fresh_keys)
            for store, fresh in zip(keys, fresh_keys):
                store[stale] = fresh
            chosen[stale] = fresh_gpu
            seen[stale] = self.version[stale]
        return [k[cands] for k in keys], chosen[cands]

    def _evaluate(self, policy: str, pod: Pod, nodes: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        free, width = self.free[nodes], self.free.shape[1]
        if pod.gpu_count == 1 and pod.gpu_milli < MILLI:
            # One option per GPU of each node: that GPU takes the pod.
            valid = free >= pod.gpu_milli
            after = np.repeat(free[:, None, :], width, axis=1) - pod.gpu_milli * np.eye(width, dtype=np.int64)[None]
        else:
            valid = np.ones((len(nodes), 1), dtype=bool)
            # Whole GPUs go to the lowest-index free ones; a CPU-only pod takes none.
            taken = (free == MILLI) & (np.cumsum(free == MILLI, axis=1) <= pod.gpu_count)
            after = np.where(taken, 0, free)[:, None, :]
        rows, options = np.nonzero(valid)
        after_rows = after[rows, options]
        cpu_after = self.cpu[nodes][rows] - pod.cpu_milli
        delta = np.zeros(len(rows))
        if self.index is not None:
            amounts = self.index.amounts(after_rows, cpu_after, self.model_ids[nodes][rows])
            delta = (amounts - self.frag[nodes][rows]) / self.index.total_weight
        flat = placement_keys(policy, delta, free[rows], after_rows, cpu_after, self.exclusivity[nodes][rows])
        # Best option per node: lexicographically highest keys, then the lowest GPU index.
        best = valid.copy()
        for k in flat:
            grid = np.full(valid.shape, -np.inf)
            grid[rows, options] = k
            grid[~best] = -np.inf
            best &= grid == grid.max(axis=1, keepdims=True)
        option = np.argmax(best, axis=1)
        picked = np.zeros(valid.shape, dtype=np.int64)
        picked[rows, options] = np.arange(len(rows))
        at = picked[np.arange(len(nodes)), option]
        gpu = option if valid.shape[1] > 1 else np.full(len(nodes), -1)
        return [k[at] for k in flat], gpu


def _baseline_scores(policy: str, cl: _Cluster, pod: Pod, cands: np.ndarray) -> np.ndarray:
    """The simulator's integer node scores (0..100) of a baseline policy for one pod."""
    cpu, free_total, demand = cl.cpu[cands], cl.free_total[cands], pod.gpu_demand
    if policy == "dotprod":
        dot = (cpu / MAX_CPU) * (pod.cpu_milli / MAX_CPU) + (free_total / MAX_GPU) * (demand / MAX_GPU)
        return (100.0 * (1 - dot / 2)).astype(np.int64)
    if policy == "bestfit":
        spare = (cpu - pod.cpu_milli) / MAX_CPU * 0.5 + (free_total - demand) / MAX_GPU * 0.5
        return ((1.0 - spare) * 100).astype(np.int64)
    if not pod.gpu_count:
        return np.zeros(len(cands), dtype=np.int64)  # both GPU-only scorers ignore CPU-only pods
    if policy == "gpuclustering":
        tags = cl.tags[cands] > 0
        same = tags[:, 0 if pod.gpu_milli < MILLI else pod.gpu_count]
        kinds = tags.sum(axis=1)
        bonus = np.where(same, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0))
        return 25 * (MAX_GPU - free_total) // MAX_GPU + bonus
    if policy == "gpupacking":
        whole = cl.whole_free[cands]
        if pod.gpu_milli < MILLI:
            free = cl.free[cands]
            tightest = np.where(free >= pod.gpu_milli, free, 2 * MILLI).min(axis=1)
            shared = np.maximum(100 - (tightest * 100 // MILLI) // 10, 50)
            partly = np.where(tightest == MILLI, np.maximum(50 - 1, 33), shared)
        else:
            partly = np.full(len(cands), max(50 - pod.gpu_count, 33))
        return np.where(whole == cl.gpus[cands], np.maximum(33 - whole, whole), partly)
    raise ValueError(f"unknown baseline policy {policy!r}")


def _pick(keys: list[np.ndarray], priority: np.ndarray) -> int:
    """Position of the lexicographically highest keys; ties go to the lowest node priority."""
    alive = np.ones(len(priority), dtype=bool)
    for k in keys:
        alive &= k == k[alive].max()
    return int(np.flatnonzero(alive)[np.argmin(priority[alive])])


def place_pods(
    nodes: list[Node], pods: list[Pod], policy: str, rng: np.random.Generator, *,
    order: Iterable[int] | None = None, priority: np.ndarray | None = None, mix: TypicalMix | None = None,
) -> list[tuple[int, tuple[int, ...]] | None]:
    """Try each pod once in ``order``; the (node index, GPU indexes) each one got, or None where it fit nowhere."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    engine = policy in ("fgd", "hetero")
    index = FragmentationIndex(mix or typical_mix(p.shape for p in pods)) if engine else None
    priority = np.arange(len(nodes)) if priority is None else np.asarray(priority)
    cl = _Cluster(nodes, priority, index)
    placements: list[tuple[int, tuple[int, ...]] | None] = []
    for i in range(len(pods)) if order is None else order:
        pod, cands = pods[i], cl.feasible(pods[i])
        placements.append(_decide(policy, cl, pod, cands, rng) if len(cands) else None)
        if placements[-1] is not None:
            cl.place(*placements[-1], pod)
    return placements


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


def _decide(
    policy: str, cl: _Cluster, pod: Pod, cands: np.ndarray, rng: np.random.Generator
) -> tuple[int, tuple[int, ...]]:
    if policy == "random":
        node = int(cands[rng.integers(len(cands))]) if len(cands) > 1 else int(cands[0])
        if not pod.gpu_count:
            return node, ()
        if pod.gpu_milli < MILLI:
            return node, (int(rng.choice(np.flatnonzero(cl.free[node] >= pod.gpu_milli))),)
        picked = rng.choice(np.flatnonzero(cl.free[node] == MILLI), pod.gpu_count, replace=False)
        return node, tuple(sorted(int(g) for g in picked))
    if len(cands) == 1 and policy != "hetero":
        return int(cands[0]), cl.smallest_fit(int(cands[0]), pod)  # the scheduler skips scoring for one node
    if policy in ("fgd", "hetero"):
        keys, gpu = cl.engine_scores(policy, pod, cands)
        at = _pick(keys, cl.priority[cands])
        node = int(cands[at])
        if pod.gpu_count == 1 and pod.gpu_milli < MILLI:
            return node, (int(gpu[at]),)
        return node, cl.smallest_fit(node, pod)
    at = _pick([_baseline_scores(policy, cl, pod, cands)], cl.priority[cands])
    return int(cands[at]), cl.smallest_fit(int(cands[at]), pod)


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
