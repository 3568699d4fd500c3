"""Dominant-resource fair share (DRF) between tenants, weighted."""

from __future__ import annotations

from .model import ZERO, Res

__all__ = ["dominant_share"]


def dominant_share(used: Res, capacity: Res, weight: float = 1.0) -> float:
    """The largest fraction of any cluster resource the tenant holds, divided by its weight.

    >>> dominant_share(Res(cpu=8000, mem=0, dev=1000), Res(cpu=64000, mem=1, dev=2000))
    0.5
    """
    shares = [u / c for u, c in zip(used, capacity) if c > 0]
    return (max(shares) if shares else 0.0) / weight


def total(items) -> Res:
    result = ZERO
    for item in items:
        result = result + item
    return result
