"""What the REST API answers about online services, as pydantic models (see ``responses.py``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from .responses import Answer
from .workloads import Placement, WorkloadState

__all__ = ["Latency", "ReplicaUsage", "Revision", "RevisionSpec", "Rollout", "Service", "ServiceReplica", "Traffic"]


class ReplicaUsage(Answer):
    """A running replica's latest usage sample: memory always, its devices where they are measured."""

    rss_mib: float | None = Field(default=None, description="Resident memory of its processes (local backend).")
    device_util_pct: float | None = Field(default=None, description="Mean utilisation of its devices; None where "
                                                                    "not measured (emulated nodes, pods).")
    device_memory_used_mib: float | None = Field(default=None, description="Device memory its devices use.")


class ServiceReplica(Answer):
    """One replica: a workload of kind service, and whether it takes traffic."""

    id: int = Field(description="Its workload's id (GET /workloads/{id} for its events and logs).")
    replica: int
    revision: int
    state: WorkloadState
    reason: str | None
    node: str | None
    flavor: str | None
    placement: Placement | None
    attempts: int
    port: int | None = Field(description="Where it listens on its node, this attempt.")
    address: str | None = Field(description="Where the endpoint reaches it (its pod's IP on Kubernetes); None "
                                            "until it has one.")
    usage: ReplicaUsage
    ready: bool = Field(description="Its readiness path answered at the last check: it takes traffic.")


class Latency(Answer):
    p50: float
    p95: float
    p99: float


class Traffic(Answer):
    """What the endpoint relayed over the last ``window_s`` seconds."""

    window_s: float
    requests: int
    requests_per_s: float
    error_rate: float | None = Field(description="Share of answers that were 5xx; None without requests.")
    latency_ms: Latency | None


class RevisionSpec(Answer):
    command: list[str] | None
    code: str | None = None
    env: dict[str, str | None] = Field(description="Its variables; their values only to the service's owner (they "
                                                   "may be secrets), null to everyone else.")
    parameters: dict[str, Any]
    readiness_path: str
    target_in_flight: float | None = None
    scale_down_delay_s: float = 60


class Revision(Answer):
    """One revision of a service and how it went: created, promoted or rolled back (with the canary's and the
    stable revision's figures and the targets it missed), rolled back to, abandoned."""

    model_config = ConfigDict(extra="allow")  # a verdict's figures ride along

    revision: int
    spec: RevisionSpec
    outcome: Literal["created", "promoted", "rolled-back", "rolled-back-to", "abandoned"]
    at: float
    by: str | None = None


class Rollout(Answer):
    """A canary under trial."""

    model_config = ConfigDict(extra="allow")

    revision: int
    spec: RevisionSpec
    state: Literal["canary"]
    replicas: int
    traffic: float
    window_s: float
    min_requests: int
    started_at: float
    ready_at: float | None
    canary: Traffic
    stable: Traffic


class Service(Answer):
    """An online service: its definition, its replicas and its traffic."""

    name: str = Field(description="Unique among its tenant's active services; a deleted service's name is free again.")
    tenant: str
    user: str = Field(description="Its owner.")
    template: str
    queue: str
    state: Literal["active", "deleted"]
    revision: int
    replicas: int = Field(description="Replicas wanted.")
    min_replicas: int
    max_replicas: int
    command: list[str] | None
    code: str | None
    env: dict[str, str | None] = Field(description="Its variables; their values only to the service's owner (they "
                                                   "may be secrets), null to everyone else.")
    parameters: dict[str, Any]
    readiness_path: str
    target_in_flight: float | None = Field(description="Scaled by policy to about this many requests in flight per "
                                                       "replica; None: by hand only.")
    in_flight: int = Field(description="Requests the endpoint is relaying now.")
    endpoint: str = Field(description="Where it answers, /hetero/endpoints/<tenant>/<name>/, behind the server's "
                                      "authentication.")
    ready_replicas: int
    device_utilisation: dict[str, float] | None = Field(
        description="Its running replicas' devices, where measured (as a kernel's usage says it): mean "
                    "device_util_pct, summed device_memory_used_mib; None where not measured (emulated nodes, pods).")
    traffic: Traffic
    replica_workloads: list[ServiceReplica]
    rollout: Rollout | None = Field(description="A new revision under trial as a canary.")
    revisions: list[Revision] = Field(description="Every revision, oldest first, with how it ended.")
    created_at: float
    updated_at: float
