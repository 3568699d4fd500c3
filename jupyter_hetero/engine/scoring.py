"""The product's placement score: fragmentation-aware, for every request the engine places.

    scorer = FragmentationScorer(typical_mix(shape_of(t.request, flavors=t.flavors) for t in templates))
    Engine(node_scorer=scorer)        # each cycle's Cluster binds it to the nodes it holds

A placement is scored by how much it fragments the node for the typical mix of requests (FGD) plus
the capacity it takes from GPU models that constrained requests depend on (model exclusivity, which
needs the inventory: hence ``bind``). Whole-device, fractional and CPU-only requests are scored
alike; :func:`.fragmentation.score_nodes` does the arithmetic, vectorised over the node states the
memo has not seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter

import numpy as np

from .fragmentation import (
    POLICIES,
    FragmentationIndex,
    Shape,
    TypicalMix,
    model_exclusivity,
    score_nodes,
    typical_mix,
)
from .model import NodeState, Request

__all__ = ["FragmentationRanker", "FragmentationScorer", "fragmentation_scorer", "mix_of", "shape_of"]

# Bound scorers kept per inventory: cycles over an unchanged fleet reuse the exclusivity and the memo.
_BOUND_KEPT = 4
# Memoised (request, node state) scores per inventory before the memo starts over; states repeat a lot
# (every empty node of a model looks the same), but a long replay creates millions of one-off ones.
_MEMO_SIZE = 1 << 18
_UNSEEN = object()
_free_milli = attrgetter("free_milli")


def shape_of(request: Request, *, models: Iterable[str] | None = None, flavors: Iterable[str] | None = None) -> Shape:
    """The fragmentation shape of one replica of ``request``, accepting these GPU models and flavors (None: any)."""
    return Shape(
        request.cpu,
        request.device_milli or (1000 if request.devices else 0),
        1 if request.device_milli else request.devices,
        frozenset(models) if models is not None else None,
        frozenset(flavors) if flavors is not None else None,
    )


def mix_of(requests: Iterable[Request]) -> TypicalMix:
    """The typical mix of these requests (GPU shapes and CPU-only ones alike), accepting any model and flavor."""
    return typical_mix(shape_of(r) for r in requests)


class FragmentationScorer:
    """The engine's node scorer; :meth:`bind` fits it to an inventory (what ``Cluster`` does each cycle)."""

    def __init__(self, mix: TypicalMix, policy: str = "hetero"):
        if policy not in POLICIES:
            raise ValueError(f"unknown placement policy {policy!r}; expected one of {', '.join(POLICIES)}")
        self.mix = mix
        self.policy = policy
        self._bound: dict[tuple, FragmentationRanker] = {}

    def bind(self, nodes: Iterable[NodeState]) -> FragmentationRanker:
        """The scorer for this inventory: exclusivity from the devices of each (model, flavor) pool it holds."""
        gpus: dict[tuple[str, str], int] = {}
        for node in nodes:
            pool = (node.model, node.flavor)
            gpus[pool] = gpus.get(pool, 0) + (len(node.devices) if node.schedulable else 0)
        key = tuple(sorted(gpus.items()))
        ranker = self._bound.get(key)
        if ranker is None:
            if len(self._bound) >= _BOUND_KEPT:
                self._bound.clear()
            ranker = self._bound[key] = FragmentationRanker(self.mix, self.policy, gpus)
        return ranker


def fragmentation_scorer(requests: Iterable[Request], policy: str = "hetero") -> FragmentationScorer:
    """A scorer whose typical mix is these requests, each accepting any model and flavor."""
    return FragmentationScorer(mix_of(requests), policy)


class FragmentationRanker:
    """A scorer bound to one inventory: ranks node states for a request, lower ranks first.

        ranker.rank(nodes, request)   # per node: (rank tuple, GPU for a fractional request or -1), or None
    """

    def __init__(self, mix: TypicalMix, policy: str, gpus: dict[tuple[str, str], int]):
        self.policy = policy
        # Its own index, with every pool registered now: the ranker is read-only once built, so cycles
        # on other threads may share it.
        self._index = FragmentationIndex(mix)
        self._pool_ids = {pool: self._index.model_id(*pool) for pool in sorted(gpus)}
        shares = model_exclusivity(mix, {pool: n for pool, n in gpus.items() if n})
        self.exclusivity = {pool: shares.get(pool, 0.0) for pool in gpus}
        self._memo: dict[tuple, tuple[tuple, int] | None] = {}

    def rank(self, nodes: Sequence[NodeState], request: Request) -> list[tuple[tuple, int] | None]:
        """Each node's rank for one replica of ``request`` and the GPU a fraction takes; None where it does not fit.

        Only CPU and devices are checked: memory, models and labels are the caller's (eligibility)."""
        need = (request.cpu, request.devices, request.device_milli, request.device_mem)
        keys = [_state(node, request.device_mem) for node in nodes]
        memo = self._memo
        out = [memo.get((need, key), _UNSEEN) for key in keys]
        missing = [i for i, value in enumerate(out) if value is _UNSEEN]
        if missing:
            fresh = self._score([keys[i] for i in missing], request)
            if len(memo) + len(missing) > _MEMO_SIZE:
                memo.clear()
            for i, value in zip(missing, fresh):
                out[i] = memo[(need, keys[i])] = value
        return out

    def _score(self, states: list[tuple], request: Request) -> list[tuple[tuple, int] | None]:
        rows = [state[4] for state in states]
        width = max(map(len, rows), default=0)
        if any(len(row) != width for row in rows):
            rows = [row + (0,) * (width - len(row)) for row in rows]  # absent devices have nothing free
        free = np.array(rows, dtype=np.int64).reshape(len(rows), width)
        cpu = np.array([state[2] for state in states], dtype=np.int64)
        pools = [(state[1], state[0]) for state in states]
        model_ids = np.array([self._pool_ids[pool] for pool in pools], dtype=np.int64)
        exclusivity = np.array([self.exclusivity.get(pool, 0.0) for pool in pools])
        scores = score_nodes(free, cpu, model_ids, shape_of(request), self._index, self.policy, exclusivity)
        keys = [k.tolist() for k in scores.keys]
        fits, gpu = scores.fits.tolist(), scores.gpu.tolist()
        ranked: list[tuple[tuple, int] | None] = []
        for row, state in enumerate(states):
            if not fits[row]:
                ranked.append(None)
                continue
            # No accelerator, nothing to fragment: the fullest CPU node that fits keeps whole machines free.
            cpu_left = cpu[row] - request.cpu if not state[3] else 0
            ranked.append((tuple(-k[row] for k in keys) + (int(cpu_left),), gpu[row]))
        return ranked


def _state(node: NodeState, device_mem: int) -> tuple:
    """What a node's score depends on: (flavor, model, free CPU, has devices, free milli per device).

    Devices without the memory the request needs count as full."""
    if device_mem:
        free = tuple([d.free_milli if d.free_mem >= device_mem else 0 for d in node.devices])
    else:
        free = tuple(map(_free_milli, node.devices))
    return (node.flavor, node.model, node.free_cpu, bool(node.devices), free)
