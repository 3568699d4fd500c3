"""The six reference policies of the FGD paper, re-implemented for the openb replay only.

    placements = place_baseline(nodes, pods, "bestfit", rng, order=order, priority=priority, mix=mix)

Random, DotProd, GpuClustering, GpuPacking, BestFit and FGD, as ``shared/data/FGD_PROTOCOL.md``
defines them. They exist to check the replay against the paper's published numbers; the product's
own placement is the engine's (``openb.place_with_engine``), never a policy of this module. FGD
scores nodes with :func:`~jupyter_hetero.engine.fragmentation.score_nodes`, the engine's arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..engine.fragmentation import (
    MILLI,
    FragmentationIndex,
    TypicalMix,
    score_nodes,
    typical_mix,
)
from .openb_trace import Node, Pod

__all__ = ["BASELINES", "place_baseline"]

BASELINES = ("random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd")
MAX_PODS_PER_NODE = 1001
MAX_CPU, MAX_GPU = 128_000, 8 * MILLI  # the simulator's normalisers for DotProd and BestFit


class _Cluster:
    """Free capacity of every node as arrays, plus per-request-shape FGD score caches refreshed only where nodes changed."""

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
        self._spec_masks: dict[frozenset[str], np.ndarray] = {}
        self._caches: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

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

    def fgd_scores(self, pod: Pod, cands: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-candidate FGD score and GPU choice; only nodes changed since this shape last asked are rescored."""
        key = (pod.cpu_milli, pod.gpu_milli if pod.gpu_count else 0, pod.gpu_count)
        if key not in self._caches:
            n = len(self.cpu)
            self._caches[key] = (np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64))
        score, chosen, seen = self._caches[key]
        stale = cands[seen[cands] != self.version[cands]]
        if len(stale):
            fresh = score_nodes(self.free[stale], self.cpu[stale], self.model_ids[stale], pod.shape, self.index, "fgd")
            score[stale], chosen[stale], seen[stale] = fresh.keys[0], fresh.gpu, self.version[stale]
        return score[cands], chosen[cands]


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


def _pick(score: np.ndarray, priority: np.ndarray) -> int:
    """Position of the highest score; ties go to the lowest node priority."""
    alive = score == score.max()
    return int(np.flatnonzero(alive)[np.argmin(priority[alive])])


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
    if len(cands) == 1:
        return int(cands[0]), cl.smallest_fit(int(cands[0]), pod)  # the scheduler skips scoring for one node
    if policy == "fgd":
        score, gpu = cl.fgd_scores(pod, cands)
        at = _pick(score, cl.priority[cands])
        node = int(cands[at])
        if pod.gpu_count == 1 and pod.gpu_milli < MILLI:
            return node, (int(gpu[at]),)
        return node, cl.smallest_fit(node, pod)
    at = _pick(_baseline_scores(policy, cl, pod, cands), cl.priority[cands])
    return int(cands[at]), cl.smallest_fit(int(cands[at]), pod)


def place_baseline(
    nodes: list[Node], pods: list[Pod], policy: str, rng: np.random.Generator, *,
    order: Iterable[int], priority: np.ndarray, mix: TypicalMix | None = None,
) -> list[tuple[int, tuple[int, ...]] | None]:
    """Try each pod once in ``order``; the (node index, GPU indexes) each one got, or None where it fit nowhere."""
    if policy not in BASELINES:
        raise ValueError(f"unknown baseline policy {policy!r}; expected one of {', '.join(BASELINES)}")
    index = FragmentationIndex(mix or typical_mix(p.shape for p in pods)) if policy == "fgd" else None
    cl = _Cluster(nodes, np.asarray(priority), index)
    placements: list[tuple[int, tuple[int, ...]] | None] = []
    for i in order:
        pod, cands = pods[i], cl.feasible(pods[i])
        placements.append(_decide(policy, cl, pod, cands, rng) if len(cands) else None)
        if placements[-1] is not None:
            cl.place(*placements[-1], pod)
    return placements
