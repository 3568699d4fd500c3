"""Queueing metrics of a replay: completion times, waits, utilisation, per-tenant outcomes.

    summary = summarize(result, window_s=7 * 86_400, gpus=240)
    summary["avg_jct_s"], summary["queueing_delay_s"]["all"]["p95"], summary["gpu_utilisation"]

Definitions, the same for every scheduler:
- JCT: finish minus first arrival; a preempted job's JCT includes every wait and rerun.
- queueing delay: JCT minus the time the job held devices (waits after preemptions count).
- GPU utilisation: device-seconds held inside ``[0, window_s)`` over ``gpus * window_s``;
  devices held during a grace period count, since nobody else can use them.
- tenant slowdown: the tenant's total JCT over its total best run time (each job alone on its
  fastest flavor): how much longer the tenant's work took than on an empty cluster.
"""

from __future__ import annotations

import numpy as np

from .replay import JobRecord, ReplayResult

__all__ = ["PERCENTILES", "percentiles", "summarize", "tenant_ratio"]

PERCENTILES = (50, 95, 99)


def percentiles(values: list[float]) -> dict[str, float]:
    """``{"p50": ..., "p95": ..., "p99": ...}`` with linear interpolation; NaN for no values."""
    if not values:
        return {f"p{p}": float("nan") for p in PERCENTILES}
    points = np.percentile(np.asarray(values, dtype=float), PERCENTILES)
    return {f"p{p}": float(v) for p, v in zip(PERCENTILES, points)}


def _busy_gpu_s(record: JobRecord, until: float) -> float:
    devices = record.job.request.total.dev / 1000
    return devices * sum(max(0.0, min(stop, until) - min(start, until)) for _f, start, stop in record.intervals)


def summarize(result: ReplayResult, *, window_s: float, gpus: int) -> dict:
    """One scheduler's outcome on one trace, as plain numbers ready for JSON."""
    records = list(result.records.values())
    done = [r for r in records if r.end is not None]
    by_queue: dict[str, list[float]] = {}
    by_tenant: dict[str, list[JobRecord]] = {}
    for record in done:
        by_queue.setdefault(record.job.queue, []).append(record.queued_s)
        by_tenant.setdefault(record.job.tenant, []).append(record)
    delays = {"all": percentiles([d for values in by_queue.values() for d in values])}
    if len(by_queue) > 1:
        delays.update({queue: percentiles(values) for queue, values in sorted(by_queue.items())})
    tenant_jct = {t: float(np.mean([r.jct for r in rs])) for t, rs in sorted(by_tenant.items())}
    slowdown = {
        t: sum(r.jct for r in rs) / sum(r.job.best_runtime for r in rs) for t, rs in sorted(by_tenant.items())
    }
    worst = max(slowdown, key=lambda t: (slowdown[t], t)) if slowdown else None
    return {
        "jobs": len(records),
        "finished": len(done),
        "avg_jct_s": float(np.mean([r.jct for r in done])) if done else float("nan"),
        "queueing_delay_s": delays,
        "gpu_utilisation": sum(_busy_gpu_s(r, window_s) for r in records) / (gpus * window_s),
        "preemptions": sum(r.preemptions for r in records),
        "preempted_jobs": sum(1 for r in records if r.preemptions),
        "makespan_s": max((r.end for r in done), default=0.0),
        "tenant_mean_jct_s": tenant_jct,
        "tenant_slowdown": slowdown,
        "max_tenant_slowdown": {"tenant": worst, "value": slowdown[worst]} if worst else None,
        "cycles": result.cycles,
        "cycle_s": result.cycle_s,
        "wall_s": result.wall_s,
    }


def tenant_ratio(summary: dict, reference: dict) -> dict:
    """The tenant whose mean JCT grew most against ``reference`` (>1: worse off), with every ratio."""
    mine, theirs = summary["tenant_mean_jct_s"], reference["tenant_mean_jct_s"]
    ratios = {t: mine[t] / theirs[t] for t in sorted(mine) if t in theirs and theirs[t] > 0}
    worst = max(ratios, key=lambda t: (ratios[t], t)) if ratios else None
    return {"tenant": worst, "value": ratios[worst] if worst else float("nan"), "ratios": ratios}
