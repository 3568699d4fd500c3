"""What ``/workloads/{id}/metrics`` answers: a workload's figures over time, measured and reported, and what is not."""

from __future__ import annotations

from pydantic import Field

from .responses import Answer

__all__ = ["MetricSeries", "NotMeasured", "ReportedMetrics", "WorkloadMetrics"]


class MetricSeries(Answer):
    """One metric over the workload's attempts, oldest first."""

    name: str
    unit: str | None = Field(description="s, %, MiB, bytes (cumulative over the attempt), samples/s...; null for a "
                                         "reported figure of no known unit.")
    source: str = Field(description="procfs, nvidia-smi, amd-smi, npu-smi, xpu-smi, exporter:<kind> or reported "
                                    "(the newest point's).")
    points: list[tuple[float, float, int]] = Field(description="[at (Unix time), value, attempt], oldest first.")


class NotMeasured(Answer):
    """A declared (or measurable) metric without figures, and why, in the asked language."""

    name: str
    why: str


class WorkloadMetrics(Answer):
    """A workload's figures: what its template declares, every series recorded, and what has no figures and why."""

    workload: int
    declared: list[str] = Field(description="The metrics its template names.")
    series: list[MetricSeries]
    not_measured: list[NotMeasured]


class ReportedMetrics(Answer):
    """What a report stored."""

    workload: int
    attempt: int
    at: float
    stored: list[str] = Field(description="The names stored, sorted.")
    thinned: list[str] = Field(description="Names whose oldest points were thinned to keep at most "
                                           "max_points per name.")
    max_points: int
