"""The acceptance report: per task type, the evidence chain a platform team accepts the platform by, from the store.

    reports = Reports(catalog=..., repository=..., inventory=..., access=..., clock=..., usage=...)
    report = reports.build(identity, since_s=30 * 86400)   # platform admins; blocking: call it off the event loop

For each task type that ran: submissions, outcomes, retries and preemptions, the images and nodes (with their
chips, drivers and runtimes) used, device utilisation and memory watermarks where measured, the metrics its
templates declare summarised over its workloads' latest figures, the errors; per
queue the waits (p50, p95, against its max wait, as a histogram); usage and cost per tenant; device allocation
over time per flavor; the alerts fired and the services' releases (each rollout and its verdict); the capacity
advice (more nodes where a queue waits past its max wait, release where devices sit unused). Then the four
checkpoints, each item met, failed or not measured by its own evidence (see checkpoints.py):

- data preprocessing: a template ran it, the bytes its attempts read and wrote, a failure was retried;
- training: a device memory watermark per process, a collective figure or a multi-replica job's network bytes,
  a checkpoint written;
- online inference: a rollout was judged on latency and throughput, and one was rolled back;
- batch inference: its waits were recorded, it was costed, its results were archived.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from ...catalog import Catalog
from ...metric_names import unit_of
from ...store import Repository
from ...store.tables import AttemptRow, WorkloadRow
from ..access import Access
from ..clock import Clock
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..scheduling.inventory import Inventory
from .alerts import alert_json
from .checkpoints import CHECKPOINTS, judge_checkpoints
from .usage import held, usage_report

__all__ = ["CHECKPOINTS", "Reports", "WAIT_BUCKETS_S"]

WAIT_BUCKETS_S = (1, 10, 60, 300, 900, 3600, 4 * 3600, 86400)


class Reports(ReadsLiveCatalog):
    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, inventory: Inventory, access: Access,
                 clock: Clock, capacity: Callable[[float], dict]):
        self.live_catalog = LiveCatalog.of(catalog)
        self.capacity = capacity  # the capacity advice over the last N seconds
        self.repository = repository
        self.inventory = inventory
        self.access = access
        self.clock = clock

    def build(self, identity: Identity, since_s: float, language: str = "en") -> dict[str, Any]:
        """The report over the last ``since_s``; its checkpoints' evidence and needs said in ``language``."""
        self.access.require_platform_admin(identity, "report.read", "report")
        now = self.clock.wall()
        since = now - since_s
        record = self.repository.record_since(since)
        attempts: dict[int, list[AttemptRow]] = defaultdict(list)
        for attempt in record["attempts"]:
            attempts[attempt.workload_id].append(attempt)
        images: dict[int, set[str]] = defaultdict(set)
        for event in record["started"]:
            if (event.data or {}).get("image"):
                images[event.workload_id].add(event.data["image"])
        task_of = {template.name: template.task_type.value for template in self.catalog.templates}
        by_task: dict[str, list[WorkloadRow]] = defaultdict(list)
        for row in record["workloads"]:
            by_task[task_of.get(row.template, "other")].append(row)
        ran = self.repository.attempts_between(since, now)
        usage = usage_report(ran, self.catalog, since=since, until=now, now=now, by="tenant")
        by_template = usage_report(ran, self.catalog, since=since, until=now, now=now, by="template")
        releases = [{"service": service.name, "tenant": service.tenant, **entry}
                    for service in record["services"] for entry in service.revisions if entry.get("at", 0) >= since]
        latest = self.repository.latest_metrics([row.id for row in record["workloads"]])
        tasks = [{**self._task(task, rows, attempts, images), "metrics": self._declared(rows, latest)}
                 for task, rows in sorted(by_task.items())]
        return {
            "since": since, "until": now, "generated_at": now,
            "task_types": tasks,
            "queues": self._queues(record["workloads"], now),
            "usage": usage,
            "utilisation": self._utilisation(record["attempts"], now, since),
            "alerts": [alert_json(row) for row in record["alerts"]],
            "releases": releases,
            "capacity": self.capacity(since_s),
            "checkpoints": judge_checkpoints(
                by_task, attempts, releases, {row["key"]: row["cost"] for row in by_template["rows"]},
                latest, language=language),
        }

    # -- sections ----------------------------------------------------------------------------

    def _task(self, task: str, rows: list[WorkloadRow], attempts, images) -> dict[str, Any]:
        ended = [a for row in rows for a in attempts.get(row.id, ()) if a.outcome]
        util = [a.metrics["device_util_pct_mean"] for a in ended if (a.metrics or {}).get("device_util_pct_mean") is not None]
        nodes = sorted({a.node for row in rows for a in attempts.get(row.id, ())})
        return {
            "task_type": task,
            "templates": sorted({row.template for row in rows}),
            "submissions": len(rows),
            "states": dict(Counter(row.state for row in rows)),
            "attempts": dict(Counter(a.outcome for a in ended)),
            "retries": sum(max(0, row.attempts - 1) for row in rows),
            "preemptions": sum(row.preemptions for row in rows),
            "images": sorted({image for row in rows for image in images.get(row.id, ())}),
            "nodes": [self._node(name) for name in nodes],
            "device_util_pct_mean": round(sum(util) / len(util), 1) if util else None,
            "memory_peak_mib": max((a.metrics or {}).get("peak_rss_mib") or 0 for a in ended) if ended else None,
            "device_memory_peak_mib": max(((a.metrics or {}).get("device_memory_peak_mib") or 0 for a in ended),
                                          default=0) or None,
            "errors": [{"workload": a.workload_id, "attempt": a.number, "exit_code": a.exit_code, "reason": a.reason}
                       for a in ended if a.outcome == "failed"][:20],
        }

    def _declared(self, rows: list[WorkloadRow], latest) -> list[dict[str, Any]]:
        """Each metric the task type's templates declare, summarised over its workloads' latest figures (a byte
        counter's latest is its attempt's total): how many workloads have one, their least, mean and most, and
        where they came from; a name no workload has figures for is listed with none."""
        declared = {}
        for template in sorted({row.template for row in rows}):
            found = self.catalog.template(template)
            for metric in found.metrics if found else ():
                declared.setdefault(metric if isinstance(metric, str) else metric.name, None)
        summaries = []
        for name in declared:
            figures = [latest[row.id][name] for row in rows if name in latest.get(row.id, {})]
            values = [value for value, _source in figures]
            summaries.append({"name": name, "unit": unit_of(name), "workloads": len(values),
                              "min": min(values) if values else None,
                              "mean": round(sum(values) / len(values), 6) if values else None,
                              "max": max(values) if values else None,
                              "sources": sorted({source for _value, source in figures})})
        return summaries

    def _node(self, name: str) -> dict[str, Any]:
        view = self.inventory.node(name)
        if view is None:
            return {"name": name, "flavor": None, "labels": {}}
        capability = view.capability
        accelerator = capability.accelerator
        return {"name": name, "flavor": view.flavor, "emulated": capability.emulated,
                "chip": accelerator.model if accelerator else None,
                "driver": accelerator.driver_version if accelerator else None,
                "runtime": accelerator.runtime if accelerator else None, "labels": dict(capability.labels)}

    def _queues(self, rows: list[WorkloadRow], now: float) -> list[dict[str, Any]]:
        waits: dict[str, list[float]] = defaultdict(list)
        for row in rows:
            if row.kind in ("job", "service"):
                waits[row.queue].append((row.admitted_at if row.admitted_at is not None else now) - row.created_at)
        found = []
        for queue in self.catalog.queues:
            values = sorted(waits.get(queue.name, ()))
            found.append({
                "queue": queue.name, "max_wait_s": queue.max_wait_s, "workloads": len(values),
                "p50_s": _percentile(values, 50), "p95_s": _percentile(values, 95),
                "over_max_wait": bool(values) and _percentile(values, 95) > queue.max_wait_s,
                "histogram": [[bound, sum(v <= bound for v in values)] for bound in WAIT_BUCKETS_S]
                + [["+Inf", len(values)]],
            })
        return found

    def _utilisation(self, attempts: list[AttemptRow], now: float, since: float) -> list[dict[str, Any]]:
        """Per flavor, devices allocated over time (a step per start and end) against the devices it has."""
        steps: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for attempt in attempts:
            placement = attempt.placement
            devices = held(placement, None)[0] if placement else 0
            if devices:
                steps[placement["flavor"]] += [(max(attempt.started_at, since), devices),
                                               (attempt.ended_at if attempt.ended_at is not None else now, -devices)]
        have = Counter()
        for view in self.inventory.nodes():
            if view.flavor and view.capability.accelerator:
                have[view.flavor] += view.capability.accelerator.count
        found = []
        for flavor, changes in sorted(steps.items()):
            level, timeline = 0.0, [[since, 0.0]]
            for at, change in sorted(changes):
                level += change
                timeline.append([at, round(level, 3)])
            timeline.append([now, round(level, 3)])
            found.append({"flavor": flavor, "devices": have.get(flavor, 0), "timeline": timeline})
        return found


def _percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)], 3)
