"""What ``GET /workloads/{id}/evidence`` answers: one workload's evidence chain, section by section, in order."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .audit import Alert, AuditEntry
from .responses import Answer
from .workloads import Blocker, Event, Placement, WorkloadState

__all__ = ["EvidenceAttempt", "EvidenceAudit", "EvidenceAuditVerdict", "EvidenceNode", "EvidencePreemption",
           "EvidenceRelease", "EvidenceRequest", "EvidenceUtilisation", "EvidenceWait", "LogTail",
           "RecordedBlockers", "WorkloadEvidence"]


class EvidenceRequest(Answer):
    """The submission as it was stored."""

    kind: str
    name: str | None
    template: str
    queue: str
    parameters: dict[str, Any] = Field(description="The advanced parameters as submitted.")
    flavors: list[str] = Field(description="The eligible flavors the submission resolved to, in order.")
    resolved: dict[str, Any] = Field(description="The resolved request: resources, replicas, flavors, limits.")
    payload: str | None = Field(description="command, script, code or notebook.")
    cwd: str | None = Field(default=None, description="Where it ran: its working directory.")
    python: str | None = Field(default=None, description="The interpreter `python` meant in it (the submitter's).")
    submitter: str
    tenant: str
    submitted_at: float
    idempotency_key: str | None = Field(description="The submitter's Idempotency-Key (empty for others when one "
                                                    "was given; null when none was).")


class EvidenceNode(Answer):
    """A node as it was when the attempt was placed on it (recorded in its `started` event)."""

    known: bool = True
    flavor: str | None = None
    emulated: bool | None = None
    arch: str | None = None
    vendor: str | None = None
    chip: str | None = None
    driver: str | None = None
    runtime: str | None = None
    labels: dict[str, str] = Field(default_factory=dict, description="Its capability labels (at most 48).")
    labels_left_out: int | None = None


class LogTail(Answer):
    lines: list[str] = Field(description="The last lines of the attempt's log (at most 50, at most 16 KiB).")
    truncated: bool = Field(description="Whether the log had more before them.")


class EvidenceAttempt(Answer):
    """One run: where, on what, with which image, how it ended and what it used."""

    number: int
    nodes: list[str]
    placement: Placement | None
    node_labels: dict[str, EvidenceNode] = Field(description="Each node's facts at placement; empty for an attempt "
                                                             "started before they were recorded.")
    image: str | None
    runtime: dict[str, Any] | None = Field(description="The runtime variant: family, image, frameworks.")
    started_at: float | None
    ended_at: float | None
    outcome: str | None
    exit_code: int | None
    reason: str | None
    metrics: dict[str, Any]
    log_tail: LogTail


class RecordedBlockers(Answer):
    """What the workload waited on from ``at`` (a `waiting` event: its top blocker changed; or `inadmissible`)."""

    at: float
    event: str
    blockers: list[Blocker]


class EvidenceWait(Answer):
    """One wait: from submission or a requeue to an admission (or to its end, never admitted again)."""

    attempt: int = Field(description="The attempt the admission started.")
    from_: float = Field(alias="from")
    from_event: str = Field(description="submitted or requeued.")
    admitted_at: float | None
    waited_s: float | None
    blockers: list[RecordedBlockers] = Field(description="The blockers over time, oldest first.")
    ended_by: str | None = Field(default=None, description="The final state it ended in while waiting.")


class EvidenceUtilisation(Answer):
    """Each attempt's measured use; the per-workload series where the store keeps one."""

    attempts: list[dict[str, Any]] = Field(description="Per attempt: device_util_pct_mean, device_memory_peak_mib, "
                                                       "peak_rss_mib, device_note.")
    series_recorded: bool = Field(description="Whether this server records per-workload metric samples.")
    series: list[dict[str, Any]] = Field(description="The samples, oldest first; empty when not recorded.")


class EvidencePreemption(Answer):
    at: float
    attempt: int | None
    by_workload: int | None = Field(description="The preemptor, when the scheduler preempted it.")
    by_admin: str | None = Field(description="The platform admin who preempted it by hand.")
    why: str | None = Field(description="priority, reservation, reclaim or admin.")
    message: str | None
    grace_deadline: float | None


class EvidenceRelease(Answer):
    """How it ended (or where it stands, when it has not)."""

    final: bool
    state: WorkloadState
    reason: str | None
    finished_at: float | None
    event: Event | None = Field(description="The event that recorded the final state.")
    attempts: int
    failures: int
    preemptions: int
    node_losses: int


class EvidenceAuditVerdict(Answer):
    intact: bool
    entries: int = Field(description="Entries checked (up to the first bad one).")
    first_break: int | None = Field(description="The first entry that breaks the chain.")
    problem: str | None


class EvidenceAudit(Answer):
    entries: list[AuditEntry] = Field(description="The audit entries naming this workload, with their hashes.")
    verification: EvidenceAuditVerdict = Field(description="The whole audit chain's verification.")


class WorkloadEvidence(Answer):
    """One workload's evidence chain, from the record of its submission to its release."""

    id: int
    name: str | None
    state: WorkloadState
    request: EvidenceRequest
    attempts: list[EvidenceAttempt]
    wait: list[EvidenceWait]
    utilisation: EvidenceUtilisation
    alerts: list[Alert] = Field(description="Alerts firing while it waited or ran on its tenant, queue, nodes or it.")
    preemptions: list[EvidencePreemption]
    release: EvidenceRelease
    events: list[Event] = Field(description="Its full history, oldest first.")
    audit: EvidenceAudit
