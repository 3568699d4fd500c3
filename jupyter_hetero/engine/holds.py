"""Starvation holds: a head that waited past its queue's max wait keeps its preferred flavor from
work of equal or lower priority, so a stream of smaller work cannot starve it.

A head held back only by its own tenant's quota holds the flavor against its own tenant alone:
capacity it could not use anyway goes to everybody else's work that fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .model import Workload

__all__ = ["Hold", "hold", "release"]


class _Head(Protocol):
    """What a hold needs to know of a head (``cycle._Head``)."""

    workload: Workload
    priority: int
    starving: bool


@dataclass(frozen=True, slots=True)
class Hold:
    """A starving head's claim on a flavor against work of equal or lower priority."""

    priority: int
    holder: int
    tenant: str | None = None  # set: only this tenant's work is held back (the holder waits for its quota)

    def blocks(self, head: _Head) -> bool:
        return (self.holder != head.workload.id and self.priority >= head.priority
                and self.tenant in (None, head.workload.tenant))


def hold(holds: dict[str, list[Hold]], head: _Head, flavors: list[tuple[str, str | None]]) -> None:
    """A starving head claims the first of ``flavors`` (each with the tenant its claim is limited to)
    unless an equal or stronger claim there already holds it back."""
    if not head.starving or not flavors:
        return
    release(holds, head.workload.id)  # the latest pass knows best what it waits for
    flavor, tenant = flavors[0]
    claims = holds.setdefault(flavor, [])
    if not any(claim.blocks(head) for claim in claims):
        claims.append(Hold(head.priority, head.workload.id, tenant))


def release(holds: dict[str, list[Hold]], holder: int) -> None:
    """Drop every claim of ``holder`` (admitted, or about to claim afresh)."""
    for flavor, claims in holds.items():
        if any(claim.holder == holder for claim in claims):
            holds[flavor] = [claim for claim in claims if claim.holder != holder]
