"""One workload's evidence chain: from the submission, through every wait and attempt, to its release.

    chains = EvidenceChains(repository=..., access=..., clock=...)
    chain = chains.chain(identity, 7, language="zh")   # as describing it allows; blocking (logs, the audit chain)

Everything comes from the store, read in one snapshot (``Repository.evidence_record``), plus each attempt's log
tail and the audit chain's verification; ``evidence_of`` puts the sections together and is pure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ...engine import render
from ...engine.decisions import Blocker
from ...errors import NotFound
from ...i18n import N_, Message
from ...store import MetricSeries, Repository
from ...store.evidence import EvidenceRecord
from ...store.tables import AttemptRow, AuditRow, EventRow, WorkloadRow
from ..access import Access
from ..clock import Clock
from ..identity import Identity
from ..workloads.service import FINAL_STATES, event_json
from .alerts import alert_json
from .audit import audit_json

__all__ = ["LOG_TAIL_BYTES", "LOG_TAIL_LINES", "MAX_SERIES_POINTS", "EvidenceChains", "evidence_of", "log_tail",
           "series_json"]

# An attempt's log in the chain: its last lines, and never more than this many bytes of them.
LOG_TAIL_LINES = 50
LOG_TAIL_BYTES = 16 * 1024
# Points of one metric's series in the chain: a week of 10-second samples is thinned to this many.
MAX_SERIES_POINTS = 500
# Events after which a workload waits again to be admitted.
_WAIT_STARTS = ("submitted", "requeued")
# Events that carry a waiting workload's blockers in their data.
_BLOCKER_EVENTS = ("waiting", "inadmissible")


class EvidenceChains:
    """Builds the evidence chain of one workload for whoever may describe it."""

    def __init__(self, *, repository: Repository, access: Access, clock: Clock,
                 metric_series: Callable[[int], list[dict[str, Any]] | None] | None = None):
        self.repository = repository
        self.access = access
        self.clock = clock
        # A workload's metric series (the store's `metric_samples`); None where a server records none (the chain
        # then says so, in an empty section).
        self.metric_series = metric_series or (lambda workload_id: series_json(repository.metric_series(workload_id)))

    def chain(self, identity: Identity, workload_id: int, language: str = "en") -> dict[str, Any]:
        """The chain; 404 for an unknown workload, an audited 403 for one the caller may not describe."""
        record = self.repository.evidence_record(workload_id, now=self.clock.wall())
        if record is None:
            raise NotFound(Message(N_("workload {workload} does not exist"), workload=workload_id))
        self.access.require_see(identity, record.workload, "workload.evidence")
        entries, broken = self.repository.verify_audit()
        verdict = {"intact": broken is None, "entries": entries, "first_break": broken[0] if broken else None,
                   "problem": broken[1] if broken else None}
        tails = {attempt.number: log_tail(attempt.log_path) for attempt in record.attempts}
        return evidence_of(record, verdict, tails, series=self.metric_series(workload_id), viewer=identity.user,
                           language=language)


def series_json(found: dict[str, MetricSeries], limit: int = MAX_SERIES_POINTS) -> list[dict[str, Any]]:
    """Each metric's series as the chain shows it, by name: its unit, source and points ``[at, value, attempt]``,
    at most ``limit`` of them, evenly spread over the series (its last point always among them)."""
    shown = []
    for name in sorted(found):
        series = found[name]
        points = series.points
        if len(points) > limit:
            step = len(points) / limit
            points = [points[int(i * step)] for i in range(limit - 1)] + [points[-1]]
        shown.append({"name": name, "unit": series.unit, "source": series.source, "count": len(series.points),
                      "points": [[at, value, attempt] for at, value, attempt in points]})
    return shown


def log_tail(path: str | None, lines: int = LOG_TAIL_LINES, limit: int = LOG_TAIL_BYTES) -> dict[str, Any]:
    """The last ``lines`` lines of a log, at most ``limit`` bytes of it; ``truncated`` when there was more."""
    if not path:
        return {"lines": [], "truncated": False}
    try:
        with open(path, "rb") as handle:
            end = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, end - limit))
            data = handle.read(limit)
    except OSError:
        return {"lines": [], "truncated": False}
    text = data.decode("utf-8", errors="replace").splitlines()
    if end > limit and text:
        text = text[1:]  # the first line read is likely cut
    return {"lines": text[-lines:], "truncated": end > limit or len(text) > lines}


def evidence_of(record: EvidenceRecord, verdict: dict[str, Any], tails: dict[int, dict[str, Any]], *,
                series: list[dict[str, Any]] | None, viewer: str | None, language: str = "en") -> dict[str, Any]:
    """The chain's sections, in order, from what the store recorded."""
    row, events = record.workload, record.events
    started = {event.data.get("attempt"): event.data for event in events if event.type == "started" and event.data}
    attempts = [_attempt(attempt, started.get(attempt.number, {}), tails.get(attempt.number)) for attempt in
                record.attempts]
    submitted = next((event for event in events if event.type == "submitted"), None)
    recorded, resolved = (submitted.data or {}) if submitted else {}, row.request or {}
    return {
        "id": row.id,
        "name": row.name,
        "state": row.state,
        "request": {
            "kind": row.kind, "name": row.name, "template": row.template, "queue": row.queue,
            # As the submission recorded them; else (a kernel, a service's replica) as its request resolved them.
            "parameters": recorded.get("parameters", resolved.get("parameters") or {}),
            "flavors": recorded.get("flavors") or resolved.get("flavors") or [],
            "resolved": row.request, "payload": (row.spec or {}).get("payload"), "submitter": row.user,
            "cwd": (row.spec or {}).get("cwd") or None, "python": (row.spec or {}).get("python"),
            "tenant": row.tenant, "submitted_at": row.created_at,
            # The key is the submitter's own, like their env values.
            "idempotency_key": row.request_key if viewer == row.user else (None if row.request_key is None else ""),
        },
        "attempts": attempts,
        "wait": _waits(events, language),
        "utilisation": {
            "attempts": [_utilisation(attempt) for attempt in record.attempts],
            "series_recorded": series is not None,
            "series": series or [],
        },
        "alerts": [alert_json(alert) for alert in record.alerts],
        "preemptions": _preemptions(events, record.audit),
        "release": _release(row, events),
        "events": [event_json(event) for event in events],
        "audit": {"entries": [audit_json(entry) for entry in record.audit], "verification": verdict},
    }


def _attempt(attempt: AttemptRow, started: dict[str, Any], tail: dict[str, Any] | None) -> dict[str, Any]:
    slots = (attempt.placement or {}).get("slots", [])
    nodes = sorted({slot.get("node") for slot in slots if slot.get("node")} or {attempt.node})
    return {
        "number": attempt.number, "nodes": nodes, "placement": attempt.placement,
        "node_labels": started.get("nodes") or {}, "image": started.get("image"), "runtime": started.get("runtime"),
        "started_at": attempt.started_at, "ended_at": attempt.ended_at, "outcome": attempt.outcome,
        "exit_code": attempt.exit_code, "reason": attempt.reason, "metrics": attempt.metrics or {},
        "log_tail": tail or {"lines": [], "truncated": False},
    }


def _blockers(data: dict[str, Any], language: str) -> list[dict[str, Any]]:
    """A recorded event's blockers, their messages in ``language`` (rendered again from their facts)."""
    shown = []
    for blocker in data.get("blockers") or []:
        message = blocker.get("message")
        if language != "en" or not message:
            message = render(Blocker(blocker.get("kind", ""), blocker.get("flavor"), blocker.get("params") or {}),
                             language)
        shown.append({"kind": blocker.get("kind"), "flavor": blocker.get("flavor"), "message": message,
                      "params": blocker.get("params") or {}})
    return shown


def _waits(events: list[EventRow], language: str) -> list[dict[str, Any]]:
    """Each wait from submission (or a requeue) to admission, with the blockers recorded during it."""
    waits: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    admissions = 0
    for event in events:
        if event.type in _WAIT_STARTS and current is None:
            current = {"attempt": admissions + 1, "from": event.at, "from_event": event.type, "admitted_at": None,
                       "waited_s": None, "blockers": []}
            waits.append(current)
        elif event.type in _BLOCKER_EVENTS and current is not None:
            current["blockers"].append({"at": event.at, "event": event.type,
                                        "blockers": _blockers(event.data or {}, language)})
        elif event.type == "admitted" and current is not None:
            admissions += 1
            current.update(attempt=admissions, admitted_at=event.at, waited_s=round(event.at - current["from"], 3))
            current = None
        elif event.type == "admitted":
            admissions += 1
        elif event.type in FINAL_STATES and current is not None:
            current["ended_by"] = event.type  # it never was admitted again
            current = None
    return waits


def _utilisation(attempt: AttemptRow) -> dict[str, Any]:
    metrics = attempt.metrics or {}
    return {
        "attempt": attempt.number,
        "device_util_pct_mean": metrics.get("device_util_pct_mean", metrics.get("gpu_util_pct_mean")),
        "device_memory_peak_mib": metrics.get("device_memory_peak_mib", metrics.get("gpu_memory_peak_mib")),
        "peak_rss_mib": metrics.get("peak_rss_mib"),
        "device_note": metrics.get("device_note"),
    }


def _preemptions(events: list[EventRow], audit: list[AuditRow]) -> list[dict[str, Any]]:
    """Each preemption: when, of which attempt, by whom (a workload, or an admin by hand) and why."""
    found = []
    attempt = 0
    by_admin = [entry for entry in audit if entry.action == "workload.preempt" and entry.actor != "scheduler"
                and entry.outcome == "allowed"]
    for event in events:
        if event.type == "started":
            attempt = (event.data or {}).get("attempt", attempt + 1)
        if event.type != "preempting":
            continue
        data = event.data or {}
        preemptor = data.get("preemptor")
        admin = None
        if preemptor is None:
            admin = next((entry.actor for entry in reversed(by_admin) if entry.at <= event.at + 1), None)
        found.append({
            "at": event.at, "attempt": attempt or None, "by_workload": preemptor, "by_admin": admin,
            "why": data.get("reason") or ("admin" if preemptor is None else None), "message": event.reason,
            "grace_deadline": data.get("grace_deadline"),
        })
    return found


def _release(row: WorkloadRow, events: list[EventRow]) -> dict[str, Any]:
    final = row.state in FINAL_STATES
    ending = next((event for event in reversed(events) if event.type == row.state), None) if final else None
    return {
        "final": final, "state": row.state, "reason": row.reason, "finished_at": row.finished_at,
        "event": event_json(ending) if ending is not None else None,
        "attempts": row.attempts, "failures": row.failures or 0, "preemptions": row.preemptions or 0,
        "node_losses": row.node_losses or 0,
    }
