"""The fragmentation-aware node scorer the engine uses for fractional devices.

    scorer = fragmentation_scorer(typical_requests)      # e.g. the catalog templates' defaults
    Engine(node_scorer=scorer)

It asks :mod:`.fragmentation` for the best device on a node and how much that placement
fragments the node for the typical mix of requests, so nodes can be compared.
"""

from __future__ import annotations

from collections.abc import Iterable

from .capacity import NodeScorer
from .fragmentation import Shape, TypicalMix, choose_gpus, typical_mix
from .model import NodeState, Request

__all__ = ["fragmentation_scorer", "mix_of"]


def mix_of(requests: Iterable[Request]) -> TypicalMix:
    """The typical mix of these requests (GPU shapes and CPU-only ones alike)."""
    return typical_mix(
        Shape(r.cpu, r.device_milli or (1000 if r.devices else 0), 1 if r.device_milli else r.devices)
        for r in requests
    )


# Node states repeat a lot (every empty node of a model looks the same): scores are memoised.
_CACHE_SIZE = 65536


def fragmentation_scorer(requests: Iterable[Request], policy: str = "hetero") -> NodeScorer:
    mix = mix_of(requests)
    cache: dict[tuple, tuple[tuple, int] | None] = {}

    def score(node: NodeState, request: Request):
        # Devices without the memory the request needs count as full for this request.
        free = tuple(d.free_milli if d.free_mem >= request.device_mem else 0 for d in node.devices)
        key = (free, node.free_cpu, node.model, request.cpu, request.device_milli)
        if key not in cache:
            if len(cache) >= _CACHE_SIZE:
                cache.clear()
            choice = choose_gpus(free, node.free_cpu, node.model, Shape(request.cpu, request.device_milli, 1), mix,
                                 policy)
            cache[key] = None if choice is None else (tuple(-k for k in choice.score), choice.gpus[0])
        return cache[key]

    return score
