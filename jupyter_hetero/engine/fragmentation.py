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

``score_nodes`` is the one vectorised scoring of many node states for one request: the engine's
scorer (:mod:`.scoring`) and the simulator's FGD baseline both call it.
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
    "NodeScores",
    "Shape",
    "TypicalMix",
    "choose_gpus",
    "fgd_score",
    "model_exclusivity",
    "node_fragmentation",
    "placement_keys",
    "score_nodes",
    "typical_mix",
]

MILLI = 1000
POLICIES = ("hetero", "fgd", "binpack", "spread")


@dataclass(frozen=True, slots=True)
class Shape:
    """A request shape: CPU milli, GPU milli per GPU, GPU count, and the GPU models and flavors it accepts (None: any)."""

    cpu_milli: int
    gpu_milli: int = 0
    gpu_count: int = 0
    models: frozenset[str] | None = None
    flavors: frozenset[str] | None = None  # a template's eligible flavors; None where the flavor is not known

    @property
    def uses_gpu(self) -> bool:
        return self.gpu_count > 0 and self.gpu_milli > 0

    @property
    def is_fractional(self) -> bool:
        return self.gpu_count == 1 and 0 < self.gpu_milli < MILLI

    def accepts(self, model: str, flavor: str | None = None) -> bool:
        return (self.models is None or model in self.models) and (
            self.flavors is None or flavor is None or flavor in self.flavors
        )


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


def typical_mix(requests: Iterable[Shape], coverage: float = 0.95, step: int = 1) -> TypicalMix:
    """The most frequent shapes covering ``coverage`` of ``requests``, taken ``step`` shapes at a time.

    One at a time is what the FGD authors' published runs used (``podIncreaseStep: 1``; the Go
    default of 10 adds up to nine rare shapes, which moved our FGD on openb cpu250 0.4 points off)."""
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
    return (shape.cpu_milli, shape.gpu_milli, shape.gpu_count, "|".join(sorted(shape.models or ())),
            "|".join(sorted(shape.flavors or ())))


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
        self._models: dict[tuple[str, str | None], int] = {}
        self._access = np.zeros((0, len(mix.shapes)), dtype=bool)

    def model_id(self, model: str, flavor: str | None = None) -> int:
        """A small integer for ``model`` (in ``flavor``, where shapes name flavors); rows of ``amounts`` refer to it."""
        key = (model, flavor)
        if key not in self._models:
            row = np.array([s.uses_gpu and s.accepts(model, flavor) for s in self.mix.shapes], dtype=bool)
            self._access = np.vstack([self._access, row])
            self._models[key] = len(self._models)
        return self._models[key]

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


def model_exclusivity(
    mix: TypicalMix, gpus_by_model: Mapping[str, int] | Mapping[tuple[str, str | None], int]
) -> dict:
    """Per GPU model, the share (0..1) of the mix's expected GPU demand on it that could not run on other models.

        model_exclusivity(mix, {"T4": 842, "G2": 4392, ...})   # T4 0.66, G2 0.10 for openb gpuspec33
        model_exclusivity(mix, {("T4", "t4"): 40, ("A100", "a100-80g"): 800})   # shapes that name flavors

    Each shape's demand is spread over the capacity of the models it accepts, as if total demand
    equalled capacity; a shape that accepts every model in ``gpus_by_model`` counts as unconstrained.
    Keys are model names, or (model, flavor) pairs where the mix's shapes name flavors.
    """
    capacity = {m: n for m, n in gpus_by_model.items() if n > 0}
    everything = sum(capacity.values())
    shapes = [(s, w * s.gpu_milli * s.gpu_count) for s, w in zip(mix.shapes, mix.weights) if s.uses_gpu]
    demand = sum(d for _, d in shapes)
    claims = dict.fromkeys(capacity, 0.0)  # constrained demand per unit of the model's capacity
    anywhere = 0.0  # demand that can go to any model, per unit of capacity
    for shape, d in shapes:
        accepted = [m for m in capacity if shape.accepts(*(m if isinstance(m, tuple) else (m,)))]
        if len(accepted) == len(capacity):
            anywhere += d / demand
            continue
        for m in accepted:
            claims[m] += d / demand * everything / sum(capacity[a] for a in accepted)
    return {m: c / (c + anywhere) if c + anywhere else 0.0 for m, c in claims.items()}


@dataclass(frozen=True, slots=True)
class NodeScores:
    """How one request would land on each of many node states (arrays with one entry per node)."""

    fits: np.ndarray  # bool: the request fits (CPU and GPUs; memory and models are the caller's to check)
    keys: list[np.ndarray]  # score keys of the best placement, most significant first, higher is better
    gpu: np.ndarray  # the GPU a fractional request takes; -1 otherwise (whole GPUs: the lowest free ones)
    frag_delta: np.ndarray  # the node's fragmentation change in milli-GPU; negative means less fragmented


def score_nodes(
    free: np.ndarray,
    cpu: np.ndarray,
    model_ids: np.ndarray,
    request: Shape,
    index: FragmentationIndex | None,
    policy: str = "hetero",
    exclusivity: np.ndarray | float = 0.0,
) -> NodeScores:
    """Score ``request`` on many node states at once: free milli per GPU (nodes x GPUs, absent GPUs 0), free CPU.

        scores = score_nodes(np.array([[1000, 300], [600, 0]]), np.array([32000, 8000]), ids, Shape(4000, 250, 1), index)
        scores.fits, scores.keys[0], scores.gpu      # per node: fits?, FGD score, the GPU it would take

    A fractional request compares every GPU with room on each node and keeps the best (lowest index on
    ties); whole GPUs go to the lowest-index free ones; a CPU-only request takes no GPU.
    """
    free = np.asarray(free, dtype=np.int64)
    cpu = np.asarray(cpu, dtype=np.int64)
    nodes, width = free.shape
    enough_cpu = cpu >= request.cpu_milli
    if request.is_fractional:
        # One option per GPU of each node: that GPU takes the request.
        valid = (free >= request.gpu_milli) & enough_cpu[:, None]
        after = np.repeat(free[:, None, :], width, axis=1) - request.gpu_milli * np.eye(width, dtype=np.int64)[None]
    else:
        whole = free == MILLI
        count = request.gpu_count if request.uses_gpu else 0
        valid = (enough_cpu & (whole.sum(axis=1) >= count))[:, None]
        taken = whole & (np.cumsum(whole, axis=1) <= count)
        after = np.where(taken, 0, free)[:, None, :]
    if not valid.shape[1]:  # a fraction on nodes without accelerators: no option at all
        valid = np.zeros((nodes, 1), dtype=bool)
        after = free[:, None, :]
    rows, options = np.nonzero(valid)
    after_rows = after[rows, options]
    cpu_after = cpu[rows] - request.cpu_milli
    delta = np.zeros(len(rows))
    if index is not None and len(rows):
        model_ids = np.asarray(model_ids)
        # One pass over the states before (first ``nodes`` rows) and after each option.
        amounts = index.amounts(
            np.vstack([free, after_rows]), np.concatenate([cpu, cpu_after]), np.concatenate([model_ids, model_ids[rows]])
        )
        delta = (amounts[nodes:] - amounts[:nodes][rows]) / index.total_weight
    exclusivity = np.broadcast_to(np.asarray(exclusivity, dtype=np.float64), (nodes,))
    flat = placement_keys(policy, delta, free[rows], after_rows, cpu_after, exclusivity[rows])
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
    at = picked[np.arange(nodes), option]
    fits = valid.any(axis=1)
    gpu = np.where(fits, option, -1) if request.is_fractional else np.full(nodes, -1)
    if not len(rows):
        return NodeScores(fits, [np.zeros(nodes) for _ in flat], gpu, np.zeros(nodes))
    return NodeScores(fits, [k[at] for k in flat], gpu, delta[at])


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
    if request.uses_gpu and not request.accepts(model):
        return None
    free = np.array([list(free_milli_per_gpu)], dtype=np.int64)
    index = _index(mix) if mix is not None else None
    model_ids = np.array([index.model_id(model) if index is not None else 0])
    scores = score_nodes(free, np.array([free_cpu_milli]), model_ids, request, index, policy, exclusivity)
    if not scores.fits[0]:
        return None
    if request.is_fractional:
        gpus: tuple[int, ...] = (int(scores.gpu[0]),)
    else:
        gpus = tuple(int(g) for g in np.flatnonzero(free[0] == MILLI)[: request.gpu_count if request.uses_gpu else 0])
    return GpuChoice(gpus, float(scores.frag_delta[0]), tuple(float(k[0]) for k in scores.keys))


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
        landing = np.where(free_before != free_after, free_before, 0).max(axis=1, initial=0)
        return [fgd_score(-(frag_delta + taken * exclusivity)), -landing]
    # Sum of squared free milli grows most when the pod lands on the GPU with the least free: best fit inside the node.
    consolidated = (free_after.astype(np.float64) ** 2).sum(axis=1)
    if policy == "binpack":
        return [-gpu_after, -cpu_after, consolidated]
    if policy == "spread":
        return [gpu_after, cpu_after, -consolidated]
    raise ValueError(f"unknown placement policy {policy!r}")
