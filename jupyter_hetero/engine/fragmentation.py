"""Fragmentation-aware placement of (fractional-)GPU requests on one node.

    mix = typical_mix([Shape(4000, 500, 1), Shape(8000, 1000, 1), Shape(4000, 500, 1)])
    choice = choose_gpus([1000, 300, 600], 32000, "T4", Shape(4000, 500, 1), mix)
    choice.gpus, choice.frag_delta   # ((2,), -100.0): the 600 slot, keeping the whole GPU for whole-GPU requests

Fragmentation follows FGD (Weng et al., USENIX ATC'23): for each shape of the typical mix, the idle
GPU milli of a node that this shape could not use (all of it when the shape cannot fit there at all,
else only the GPUs too small for it), averaged with the mix's weights.

Policies: ``fgd`` scores a placement by the sigmoid of the fragmentation it removes; ``hetero`` (the
product default) also counts GPU milli taken from a model that constrained requests depend on
(``model_exclusivity``) as fragmentation, and among equal scores stacks a shared request on the
fullest GPU that fits; ``binpack`` and ``spread`` take the least and the most free capacity that fits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = [
    "MILLI",
    "POLICIES",
    "FragmentationIndex",
    "GpuChoice",
    "Shape",
    "TypicalMix",
    "choose_gpus",
    "fgd_score",
    "model_exclusivity",
    "node_fragmentation",
    "placement_keys",
    "typical_mix",
]

MILLI = 1000
POLICIES = ("hetero", "fgd", "binpack", "spread")


@dataclass(frozen=True, slots=True)
class Shape:
    """A request shape: CPU milli, GPU milli per GPU, GPU count, and the GPU models it accepts (None: any)."""

    cpu_milli: int
    gpu_milli: int = 0
    gpu_count: int = 0
    models: frozenset[str] | None = None

    @property
    def uses_gpu(self) -> bool:
        return self.gpu_count > 0 and self.gpu_milli > 0

    @property
    def is_fractional(self) -> bool:
        return self.gpu_count == 1 and 0 < self.gpu_milli < MILLI

    def accepts(self, model: str) -> bool:
        return self.models is None or model in self.models


@dataclass(frozen=True, slots=True)
class TypicalMix:
    """The shapes a cluster usually sees, each with an integer weight (how often it was seen)."""

    shapes: tuple[Shape, ...]
    weights: tuple[int, ...]

    @property
    def total_weight(self) -> int:
        return sum(self.weights)


@dataclass(frozen=True, slots=True)
class GpuChoice:
    """Where a request goes on one node: GPU indexes, the fragmentation change, and a score (higher is better)."""

    gpus: tuple[int, ...]
    frag_delta: float  # change of the node's fragmentation in milli-GPU; negative means less fragmented
    score: tuple[float, ...]  # comparable across nodes for the same request and policy


def typical_mix(requests: Iterable[Shape], coverage: float = 0.95, step: int = 10) -> TypicalMix:
    """The most frequent shapes covering ``coverage`` of ``requests``, taken ``step`` shapes at a time as FGD does."""
    counts = Counter(requests)
    if not counts:
        raise ValueError("typical_mix needs at least one request")
    # Most frequent first; equal counts fall back to the larger shape so the order never depends on input order.
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], *_shape_order(kv[0])), reverse=True)
    wanted, taken, covered = coverage * sum(counts.values()), 0, 0
    while covered < wanted and taken < len(ranked):
        batch = ranked[taken : taken + step]
        covered += sum(count for _, count in batch)
        taken += len(batch)
    chosen = ranked[:taken]
    return TypicalMix(tuple(s for s, _ in chosen), tuple(c for _, c in chosen))


def _shape_order(shape: Shape) -> tuple:
    return (shape.cpu_milli, shape.gpu_milli, shape.gpu_count, "|".join(sorted(shape.models or ())))


class FragmentationIndex:
    """Vectorised fragmentation of many node states against one mix, in exact integer units.

        index = FragmentationIndex(mix)
        amounts = index.amounts(free, cpu, [index.model_id("T4")] * len(cpu))  # int64, milli x weight
        amounts / index.total_weight                                           # milli-GPU per node
    """

    def __init__(self, mix: TypicalMix) -> None:
        self.mix = mix
        self.total_weight = mix.total_weight
        gpu_shapes = [s.uses_gpu for s in mix.shapes]
        self._thresholds = np.array(sorted({s.gpu_milli for s in mix.shapes if s.uses_gpu}) or [MILLI])
        where = {t: i for i, t in enumerate(self._thresholds.tolist())}
        self._threshold_of = np.array([where.get(s.gpu_milli, 0) for s in mix.shapes])
        self._count = np.array([s.gpu_count for s in mix.shapes])
        self._cpu = np.array([s.cpu_milli for s in mix.shapes])
        self._weight = np.array(mix.weights, dtype=np.int64)
        self._gpu_shape = np.array(gpu_shapes, dtype=bool)
        self._models: dict[str, int] = {}
        self._access = np.zeros((0, len(mix.shapes)), dtype=bool)

    def model_id(self, model: str) -> int:
        """A small integer for ``model``; rows of ``amounts`` refer to models by it."""
        if model not in self._models:
            row = np.array([s.uses_gpu and s.accepts(model) for s in self.mix.shapes], dtype=bool)
            self._access = np.vstack([self._access, row])
            self._models[model] = len(self._models)
        return self._models[model]

    def amounts(self, free: np.ndarray, cpu: np.ndarray, model_ids: np.ndarray) -> np.ndarray:
        """Fragmentation x total weight for each row of ``free`` (rows x GPUs; absent GPUs are 0)."""
        free = np.asarray(free, dtype=np.int64)
        at = free[:, None, :]
        thresholds = self._thresholds[None, :, None]
        fits = (at >= thresholds).sum(axis=2)  # rows x thresholds: GPUs with at least that much free
        too_small = (at * (at < thresholds)).sum(axis=2)  # idle milli on GPUs below the threshold
        idle = free.sum(axis=1)
        usable = (
            self._access[np.asarray(model_ids)]
            & (fits[:, self._threshold_of] >= self._count)
            & (np.asarray(cpu)[:, None] >= self._cpu)
        )
        # A shape that fits leaves only the too-small GPUs behind; one that does not fit (or is CPU-only,
        # or is excluded by its GPU models) leaves every idle milli behind.
        per_shape = np.where(usable, too_small[:, self._threshold_of], idle[:, None])
        return per_shape @ self._weight


@lru_cache(maxsize=16)
def _index(mix: TypicalMix) -> FragmentationIndex:
    return FragmentationIndex(mix)


def node_fragmentation(free_milli_per_gpu: Sequence[int], free_cpu_milli: int, model: str, mix: TypicalMix) -> float:
    """The node's fragmentation in milli-GPU: idle GPU milli the typical mix could not use, weighted."""
    index = _index(mix)
    row = np.array([list(free_milli_per_gpu)], dtype=np.int64)
    amount = index.amounts(row, np.array([free_cpu_milli]), np.array([index.model_id(model)]))[0]
    return float(amount) / index.total_weight


def fgd_score(frag_decrease: np.ndarray | float) -> np.ndarray:
    """FGD's node score 0..100: the sigmoid of the fragmentation decrease in GPUs, truncated to an integer."""
    decrease = np.asarray(frag_decrease, dtype=np.float64)
    return (100.0 / (1.0 + np.exp(-decrease / MILLI))).astype(np.int64)


def _options(free_milli_per_gpu: np.ndarray, request: Shape) -> list[tuple[int, ...]]:
    """The GPU sets worth comparing on one node: each fitting GPU (fractional) or the lowest free ones (whole)."""
    free = np.asarray(free_milli_per_gpu)
    if not request.uses_gpu:
        return [()]
    if request.is_fractional:
        return [(int(g),) for g in np.flatnonzero(free >= request.gpu_milli)]
    whole = np.flatnonzero(free == MILLI)
    return [tuple(int(g) for g in whole[: request.gpu_count])] if len(whole) >= request.gpu_count else []


def model_exclusivity(mix: TypicalMix, gpus_by_model: Mapping[str, int]) -> dict[str, float]:
    """Per GPU model, the share (0..1) of the mix's expected GPU demand on it that could not run on other models.

        model_exclusivity(mix, {"T4": 842, "G2": 4392, ...})   # T4 0.66, G2 0.10 for openb gpuspec33

    Each shape's demand is spread over the capacity of the models it accepts, as if total demand
    equalled capacity; a shape that accepts every model in ``gpus_by_model`` counts as unconstrained.
    """
    capacity = {m: n for m, n in gpus_by_model.items() if n > 0}
    everything = sum(capacity.values())
    shapes = [(s, w * s.gpu_milli * s.gpu_count) for s, w in zip(mix.shapes, mix.weights) if s.uses_gpu]
    demand = sum(d for _, d in shapes)
    claims = dict.fromkeys(capacity, 0.0)  # constrained demand per unit of the model's capacity
    anywhere = 0.0  # demand that can go to any model, per unit of capacity
    for shape, d in shapes:
        accepted = [m for m in capacity if shape.accepts(m)]
        if len(accepted) == len(capacity):
            anywhere += d / demand
            continue
        for m in accepted:
            claims[m] += d / demand * everything / sum(capacity[a] for a in accepted)
    return {m: c / (c + anywhere) if c + anywhere else 0.0 for m, c in claims.items()}


def choose_gpus(
    free_milli_per_gpu: Sequence[int],
    free_cpu_milli: int,
    model: str,
    request: Shape,
    mix: TypicalMix | None = None,
    policy: str = "hetero",
    exclusivity: float = 0.0,
) -> GpuChoice | None:
    """The best GPUs for ``request`` on one node under ``policy``, or None if it does not fit (memory is not checked).

    ``exclusivity`` is ``model_exclusivity(mix, cluster_gpus)[model]``; only ``hetero`` uses it.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown placement policy {policy!r}; expected one of {', '.join(POLICIES)}")
    if (policy in ("hetero", "fgd")) and mix is None:
        raise ValueError(f"policy {policy!r} needs the typical mix")
    free = np.asarray(list(free_milli_per_gpu), dtype=np.int64)
    if free_cpu_milli < request.cpu_milli or (request.uses_gpu and not request.accepts(model)):
        return None
    sets = _options(free, request)
    if not sets:
        return None
    before = np.repeat(free[None, :], len(sets), axis=0)
    after = before.copy()
    for row, gpus in enumerate(sets):
        after[row, list(gpus)] -= request.gpu_milli
    cpu_after = np.full(len(sets), free_cpu_milli - request.cpu_milli)
    deltas = np.zeros(len(sets))
    if mix is not None:
        index = _index(mix)
        model_ids = np.full(len(sets) + 1, index.model_id(model))
        amounts = index.amounts(np.vstack([free[None, :], after]), np.append(free_cpu_milli, cpu_after), model_ids)
        deltas = (amounts[1:] - amounts[0]) / index.total_weight
    keys = placement_keys(policy, deltas, before, after, cpu_after, exclusivity)
    best = max(range(len(sets)), key=lambda i: (tuple(k[i] for k in keys), -i))
    return GpuChoice(sets[best], float(deltas[best]), tuple(float(k[best]) for k in keys))


def placement_keys(
    policy: str,
    frag_delta: np.ndarray,
    free_before: np.ndarray,
    free_after: np.ndarray,
    cpu_after: np.ndarray,
    exclusivity: np.ndarray | float = 0.0,
) -> list[np.ndarray]:
    """Score keys of candidate placements, most significant first, higher is better; the simulator uses it too.

    Per candidate: ``frag_delta`` the node's fragmentation change, ``free_before``/``free_after`` its GPUs'
    free milli (candidates x GPUs), ``cpu_after`` its free CPU afterwards, ``exclusivity`` its model's.
    """
    gpu_after = free_after.sum(axis=1)
    if policy == "fgd":
        return [fgd_score(-frag_delta)]
    if policy == "hetero":
        # Taking GPU milli that only constrained requests could use displaces them: count it as fragmentation.
        taken = (free_before - free_after).sum(axis=1)
        # Among equal scores, stack a shared request on the fullest GPU that fits (whole GPUs all tie at 1000).
        landing = np.where(free_before != free_after, free_before, 0).max(axis=1)
        return [fgd_score(-(frag_delta + taken * exclusivity)), -landing]
    # Sum of squared free milli grows most when the pod lands on the GPU with the least free: best fit inside the node.
    consolidated = (free_after.astype(np.float64) ** 2).sum(axis=1)
    if policy == "binpack":
        return [-gpu_after, -cpu_after, consolidated]
    if policy == "spread":
        return [gpu_after, cpu_after, -consolidated]
    raise ValueError(f"unknown placement policy {policy!r}")
