"""A canary's verdict, pure: promoted within the targets, rolled back naming each target it missed."""

from __future__ import annotations

from jupyter_hetero.catalog.models import MetricTarget
from jupyter_hetero.platform.serving.rollout import verdict


def figures(requests: int, error_rate: float, p95: float) -> dict:
    return {"requests": requests, "error_rate": error_rate, "latency_ms": {"p50": p95 / 2, "p95": p95, "p99": p95 * 2}}


TARGETS = [MetricTarget(name="error_rate", max=0.05, max_increase=0.02),
           MetricTarget(name="request_latency_p95", max_ratio=1.5)]


def test_a_canary_within_every_target_is_promoted():
    decided = verdict(figures(40, 0.01, 12), figures(160, 0.0, 10), TARGETS)
    assert (decided.promote, decided.violations, decided.reason) == (True, [], "every target met")


def test_each_missed_target_is_named_with_its_figures():
    decided = verdict(figures(40, 0.5, 30), figures(160, 0.0, 10), TARGETS)
    assert not decided.promote
    assert decided.violations == [
        "error_rate 0.5 over its bound 0.05",
        "error_rate 0.5 is +0.5 over stable's 0 (at most +0.02)",
        "request_latency_p95 30 ms is 3.00x stable's 10 ms (at most 1.5x)",
    ]


def test_a_stable_revision_without_traffic_leaves_only_the_canarys_own_bounds():
    decided = verdict(figures(40, 0.0, 500), figures(0, 0.0, 0), TARGETS)
    assert decided.promote  # no ratio or increase without a stable figure to compare with
    slow = verdict(figures(40, 0.0, 500), figures(0, 0.0, 0), [MetricTarget(name="request_latency_p95", max=100)])
    assert slow.violations == ["request_latency_p95 500 ms over its bound 100 ms"]


def test_a_latency_ratio_within_the_tolerance_is_noise_not_a_miss():
    tolerant = [MetricTarget(name="request_latency_p95", max_ratio=1.5, tolerance=10)]
    assert verdict(figures(40, 0.0, 4), figures(160, 0.0, 1.5), tolerant).promote  # 2.7x, but 2.5 ms more
    slow = verdict(figures(40, 0.0, 150), figures(160, 0.0, 1.5), tolerant)
    assert slow.violations == ["request_latency_p95 150 ms is 100.00x stable's 1.5 ms (at most 1.5x)"]
    assert not verdict(figures(40, 0.0, 4), figures(160, 0.0, 1.5), TARGETS).promote  # no tolerance: a miss
