"""SQLAlchemy tables: nodes, workloads, events (append-only), the audit chain, workload credentials, services,
metric samples and recurring schedules."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["AlertRow", "OnboardingRow", "AttemptRow", "AuditRow", "Base", "CredentialRow", "EventRow", "MetricSampleRow",
           "NodeRow", "ScheduleRow", "SchemaVersionRow", "ServiceRow", "WorkloadRow"]


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class SchemaVersionRow(Base):
    __tablename__ = "schema_version"

    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    applied_at: Mapped[float] = mapped_column(Float)


class NodeRow(Base):
    """A node as last seen, with the flavor it maps to and its state as its source reports it."""

    __tablename__ = "nodes"

    name: Mapped[str] = mapped_column(String(253), primary_key=True)
    source: Mapped[str] = mapped_column(String(32))
    emulated: Mapped[bool] = mapped_column(Boolean, default=False)
    flavor: Mapped[str | None] = mapped_column(String(63), nullable=True)
    state: Mapped[str] = mapped_column(String(16), default="ready")
    capability: Mapped[dict[str, Any]] = mapped_column(JSON)
    first_seen: Mapped[float] = mapped_column(Float)
    last_seen: Mapped[float] = mapped_column(Float)


class WorkloadRow(Base):
    """A kernel, job or service: what was asked, where it runs and what state it is in."""

    __tablename__ = "workloads"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str | None] = mapped_column(String(253), nullable=True)
    tenant: Mapped[str] = mapped_column(String(63), index=True)
    user: Mapped[str] = mapped_column(String(253), index=True)
    template: Mapped[str] = mapped_column(String(63))
    queue: Mapped[str] = mapped_column(String(63))
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    flavor: Mapped[str | None] = mapped_column(String(63), nullable=True)
    node: Mapped[str | None] = mapped_column(String(253), nullable=True)
    placement: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # Capacity held while admitted, kept as columns so usage per tenant and flavor is one query.
    held_cpu_milli: Mapped[int] = mapped_column(Integer, default=0)
    held_memory_mib: Mapped[int] = mapped_column(Integer, default=0)
    held_device_milli: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    admitted_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # Schema 2: what the scheduler needs to resume after a restart.
    priority_boost: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    escalated: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    not_before: Mapped[float | None] = mapped_column(Float, nullable=True)  # retry backoff
    time_limit_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    runtime_s: Mapped[float | None] = mapped_column(Float, nullable=True)  # expected, for ETAs
    preempting_until: Mapped[float | None] = mapped_column(Float, nullable=True)  # stop deadline, any stop
    stopping: Mapped[str | None] = mapped_column(String(16), nullable=True)  # cancel | preempt | time-limit | node-lost | replica-failed
    preempted_for: Mapped[int | None] = mapped_column(Integer, nullable=True)
    checkpoint_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    idle: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    # Schema 3: why attempts ended, counted apart, since only the job's own failures use up its retries.
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    preemptions: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    node_losses: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    preempted_at: Mapped[list[Any]] = mapped_column(JSON, default=list)  # wall times, oldest first
    # Schema 8: the submitter's Idempotency-Key, unique per user, so that a submission sent again is stored once.
    request_key: Mapped[str | None] = mapped_column(String(128), nullable=True)

    __table_args__ = (Index("ix_workloads_state_queue", "state", "queue"),
                      Index("ix_workloads_user_request_key", "user", "request_key", unique=True))


class AttemptRow(Base):
    """One run of a workload: where, which process, how it ended, what it used, where its log is."""

    __tablename__ = "attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("workloads.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    node: Mapped[str] = mapped_column(String(253))
    placement: Mapped[dict[str, Any]] = mapped_column(JSON)
    # [{"replica", "node", "pid", "pid_started"}]; pid_started is the process create time, since pids get reused.
    processes: Mapped[list[Any]] = mapped_column(JSON, default=list)
    started_at: Mapped[float] = mapped_column(Float)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    outcome: Mapped[str | None] = mapped_column(String(16), nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    log_path: Mapped[str] = mapped_column(Text)
    archive_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class EventRow(Base):
    """One fact in a workload's (or node's) history; rows are only ever added."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    workload_id: Mapped[int | None] = mapped_column(ForeignKey("workloads.id"), nullable=True, index=True)
    node: Mapped[str | None] = mapped_column(String(253), nullable=True)
    at: Mapped[float] = mapped_column(Float, index=True)
    type: Mapped[str] = mapped_column(String(32))
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class AuditRow(Base):
    """An admin action or a denial; each row's hash covers the previous row's, so edits show."""

    __tablename__ = "audit"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[float] = mapped_column(Float, index=True)
    actor: Mapped[str] = mapped_column(String(253))
    action: Mapped[str] = mapped_column(String(63))
    target: Mapped[str] = mapped_column(String(253))
    outcome: Mapped[str] = mapped_column(String(16))
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class CredentialRow(Base):
    """A credential handed to one process of a workload; only a digest of its secret is kept."""

    __tablename__ = "credentials"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("workloads.id"), index=True)
    digest: Mapped[str] = mapped_column(String(64))  # sha256 of the secret, hex
    issued_at: Mapped[float] = mapped_column(Float)
    revoked_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class ServiceRow(Base):
    """An online service: what its replicas run and how many; each replica is a workload of kind service."""

    __tablename__ = "services"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(63))  # its endpoint: /hetero/endpoints/<tenant>/<name>/
    tenant: Mapped[str] = mapped_column(String(63), index=True)
    user: Mapped[str] = mapped_column(String(253))
    template: Mapped[str] = mapped_column(String(63))
    queue: Mapped[str] = mapped_column(String(63))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)  # command, env, parameters, readiness path
    replicas: Mapped[int] = mapped_column(Integer)  # wanted
    min_replicas: Mapped[int] = mapped_column(Integer)
    max_replicas: Mapped[int] = mapped_column(Integer)
    revision: Mapped[int] = mapped_column(Integer, default=1)  # the stable revision, whose spec is ``spec``
    rollout: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)  # a canary under trial
    revisions: Mapped[list[Any]] = mapped_column(JSON, default=list)  # every revision: spec, outcome, figures
    state: Mapped[str] = mapped_column(String(16))  # active | deleted
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)

    # Schema 9: a name is unique among a tenant's active services only; a deleted service's row stays (for audit
    # and usage) and its name is free again.
    __table_args__ = (Index("ix_services_tenant_name_active", "tenant", "name", unique=True,
                            sqlite_where=text("state = 'active'"), postgresql_where=text("state = 'active'")),)


class AlertRow(Base):
    """One alert: a rule that found something wrong with a subject, from when it fired until it resolved."""

    __tablename__ = "alerts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    rule: Mapped[str] = mapped_column(String(63))
    kind: Mapped[str] = mapped_column(String(32))
    subject: Mapped[str] = mapped_column(String(253))  # queue/batch, node/gpu-3, tenant/vision/a100-80g ...
    tenant: Mapped[str | None] = mapped_column(String(63), nullable=True)  # whose it is, when it is one tenant's
    severity: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16), index=True)  # firing | resolved
    message: Mapped[str] = mapped_column(Text)
    figures: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    fired_at: Mapped[float] = mapped_column(Float)
    resolved_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    deliveries: Mapped[list[Any]] = mapped_column(JSON, default=list)  # each webhook call: state, at, outcome


class OnboardingRow(Base):
    """A node's, chip's, framework's, model's or tenant's onboarding: its checklist with the evidence of each step."""

    __tablename__ = "onboarding"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16))  # node | tenant
    name: Mapped[str] = mapped_column(String(253))
    state: Mapped[str] = mapped_column(String(16))  # requested | verifying | accepted | rejected
    steps: Mapped[list[Any]] = mapped_column(JSON, default=list)  # {name, ok, evidence, at}, in order
    failed_step: Mapped[str | None] = mapped_column(String(32), nullable=True)
    by: Mapped[str] = mapped_column(String(253))  # who asked (the server itself for a new node)
    updated_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (UniqueConstraint("kind", "name"),)


class MetricSampleRow(Base):
    """One figure of one workload's attempt at one moment: measured from the machine or reported by the workload."""

    __tablename__ = "metric_samples"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("workloads.id"))
    attempt: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(63))  # metric_names.MEASURED, or a reported name
    value: Mapped[float] = mapped_column(Float)
    at: Mapped[float] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(32))  # procfs | nvidia-smi | ... | exporter:<name> | reported

    __table_args__ = (Index("ix_metric_samples_workload_name_at", "workload_id", "name", "at"),)


class ScheduleRow(Base):
    """A recurring job: its cron and time zone, the job it submits as its owner, and when it is next due. Its runs
    are workloads whose spec names it; the latest are listed here too, so that they outlive a restart."""

    __tablename__ = "schedules"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100))
    tenant: Mapped[str] = mapped_column(String(63), index=True)
    user: Mapped[str] = mapped_column(String(253), index=True)
    # The owner's groups when they last defined it: each run is submitted as them, their tenant found as at a request.
    groups: Mapped[list[Any]] = mapped_column(JSON, default=list)
    cron: Mapped[str] = mapped_column(String(200))
    timezone: Mapped[str] = mapped_column(String(64))
    missed: Mapped[str] = mapped_column(String(16))  # run-once | skip
    state: Mapped[str] = mapped_column(String(16))  # active | paused | deleted
    job: Mapped[dict[str, Any]] = mapped_column(JSON)  # a POST /workloads body
    next_run_at: Mapped[float | None] = mapped_column(Float, nullable=True)  # None unless active
    last_run_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    runs: Mapped[list[Any]] = mapped_column(JSON, default=list)  # {workload, due_at, submitted_at, late}, newest first
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (Index("ix_schedules_state_next_run_at", "state", "next_run_at"),)
