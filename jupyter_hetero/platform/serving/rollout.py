"""A canary's verdict, pure: its figures against the stable revision's and the template's targets.

>>> from jupyter_hetero.catalog.models import MetricTarget
>>> canary = {"requests": 40, "error_rate": 0.5, "latency_ms": {"p50": 5, "p95": 9, "p99": 12}}
>>> stable = {"requests": 160, "error_rate": 0.0, "latency_ms": {"p50": 5, "p95": 8, "p99": 11}}
>>> verdict(canary, stable, [MetricTarget(name="error_rate", max_increase=0.02)]).promote
False
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...catalog.models import MetricTarget

__all__ = ["Verdict", "history_entry", "verdict"]


@dataclass(frozen=True)
class Verdict:
    promote: bool
    violations: list[str] = field(default_factory=list)  # one sentence per target missed, with its figures

    @property
    def reason(self) -> str:
        return "; ".join(self.violations) if self.violations else "every target met"


def verdict(canary: dict[str, Any], stable: dict[str, Any], targets: list[MetricTarget]) -> Verdict:
    """Promote unless the canary misses a target: its own bound, or a ratio or increase over stable."""
    missed = []
    for target in targets:
        mine, theirs = _value(canary, target.name), _value(stable, target.name)
        if mine is None:
            continue
        unit = "" if target.name == "error_rate" else " ms"
        if target.max is not None and mine > target.max:
            missed.append(f"{target.name} {mine:g}{unit} over its bound {target.max:g}{unit}")
        if (theirs is not None and target.max_ratio is not None and theirs > 0 and mine / theirs > target.max_ratio
                and mine - theirs > target.tolerance):
            missed.append(f"{target.name} {mine:g}{unit} is {mine / theirs:.2f}x stable's {theirs:g}{unit} "
                          f"(at most {target.max_ratio:g}x)")
        if theirs is not None and target.max_increase is not None and mine - theirs > target.max_increase:
            missed.append(f"{target.name} {mine:g} is {mine - theirs:+g} over stable's {theirs:g} "
                          f"(at most +{target.max_increase:g})")
    return Verdict(not missed, missed)


def _value(figures: dict[str, Any], name: str) -> float | None:
    if not figures.get("requests"):
        return None
    if name == "error_rate":
        return figures["error_rate"]
    return (figures.get("latency_ms") or {}).get(name.removeprefix("request_latency_"))


def history_entry(rollout: dict[str, Any]) -> dict[str, Any]:
    """A rollout as its revision's history entry."""
    return {"revision": rollout["revision"], "spec": rollout["spec"], "by": rollout.get("by"),
            "started_at": rollout.get("started_at"), "ready_at": rollout.get("ready_at")}
