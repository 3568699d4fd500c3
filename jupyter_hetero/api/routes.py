"""Every operation of the REST API: path, method, parameters, body, answer and error statuses.

The OpenAPI document is built from this table and the models (see ``openapi.py``); the handlers
serve the same paths, which a test checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from ..models import (
    ActivityReport,
    AlertsQuery,
    AuditQuery,
    CancelQuery,
    CapacityQuery,
    ReportQuery,
    UsageQuery,
    CreateRollout,
    CreateService,
    EvidenceQuery,
    ExplainQuery,
    FilesQuery,
    Launched,
    ListNodesQuery,
    ListTemplatesQuery,
    ListWorkloadsQuery,
    LogsQuery,
    PreemptQuery,
    PreviewWorkload,
    ReleaseQuery,
    ReportMetrics,
    RequestKernelPlacement,
    RequestServer,
    RollBack,
    ScaleService,
    ServiceQuery,
    StartKernel,
    SubmitWorkload,
)
from . import audit as a
from . import evidence as ev
from . import metrics as m
from . import responses as r
from . import schedules as sc
from . import services as s
from . import workloads as w

__all__ = ["ROUTES", "Route"]

# Error statuses every route may list; each names a shared response of the document.
BAD_REQUEST, FORBIDDEN, NOT_FOUND, TOO_MANY_REQUESTS, ENGINE_RESTARTING = 400, 403, 404, 429, 503


@dataclass(frozen=True)
class Route:
    """One operation; ``answer`` is a model, ``[model]`` for a list, or a media type's plain schema."""

    path: str
    method: str
    operation_id: str
    summary: str
    answer: type[BaseModel] | list | None
    status: int = 200
    answer_description: str = ""
    description: str = ""
    query: type[BaseModel] | None = None
    path_parameters: dict[str, str] = field(default_factory=dict)  # name -> JSON type
    headers: dict[str, dict] = field(default_factory=dict)  # request header -> its description and schema
    body: type[BaseModel] | None = None
    media_type: str = "application/json"
    errors: tuple[int, ...] = ()
    conflict: str = ""  # when set, a 409 and what it means here
    accepted: tuple[type[BaseModel], str] | None = None  # a 202's answer and what it means, where one is given


_WORKLOAD = {"workload_id": "integer"}
_SCHEDULE = {"schedule_id": "integer"}
_IDEMPOTENCY_KEY = {"Idempotency-Key": {
    "description": "Names this submission, the same on every try of it: a try whose first was stored answers with "
                   "the workload stored then, not a second one. Keys are the submitter's own.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[!-~]+$"},
}}

ROUTES: tuple[Route, ...] = (
    Route("/version", "get", "getVersion", "Server version, mode and backend", r.Version,
          answer_description="The version"),
    Route("/scheduler/ticks", "get", "getSchedulerTicks",
          "The scheduling loop's ticks, wake-ups and last tick timings per phase (platform admins)",
          r.SchedulerStats, answer_description="The loop's figures", errors=(FORBIDDEN,)),
    Route("/openapi.json", "get", "getOpenAPI", "This document", None, answer_description="The OpenAPI document"),
    Route("/templates", "get", "listTemplates", "List task templates", [r.Template], query=ListTemplatesQuery,
          answer_description="Templates in catalog order", errors=(BAD_REQUEST,)),
    Route("/templates/{name}", "get", "getTemplate", "One template", r.Template, path_parameters={"name": "string"},
          answer_description="The template", errors=(NOT_FOUND,)),
    Route("/queues", "get", "listQueues",
          "Queues with their rules, pending and running counts, and the caller's tenant quota use in each",
          [r.QueueStatus], answer_description="Queues, highest priority first"),
    Route("/tenants/me", "get", "getMyTenant", "The caller's tenant, role, and quota and use per flavor", r.MyTenant,
          answer_description="The tenant", errors=(FORBIDDEN,)),
    Route("/tenants", "get", "listTenants",
          "Tenants with members, quota and use per flavor (platform admins all; tenant-admins their own)",
          [r.TenantSummary], answer_description="Tenants", errors=(FORBIDDEN,)),
    Route("/audit", "get", "listAudit", "The audit log: admin actions, denials, preemptions (platform admins)",
          a.AuditPage, query=AuditQuery, answer_description="A page of entries, oldest first",
          description="Reading it is itself recorded. An action or target ending in '.' or '/' is a prefix.",
          errors=(BAD_REQUEST, FORBIDDEN)),
    Route("/audit/verify", "get", "verifyAudit", "Whether the audit log's hash chain is intact (platform admins)",
          a.AuditVerdict, answer_description="The verdict, naming the first entry that breaks the chain",
          errors=(FORBIDDEN,)),
    Route("/alerts", "get", "listAlerts", "Alerts, newest first: the platform's and the caller's tenant's "
          "(every one for platform admins)", [a.Alert], query=AlertsQuery, answer_description="Alerts",
          errors=(BAD_REQUEST,)),
    Route("/usage", "get", "getUsage", "Device-hours, normalised accelerator-hours, idle time and cost over a period, "
          "grouped by tenant, user, queue, template, cost centre or flavor", a.Usage, query=UsageQuery,
          answer_description="Everyone's for platform admins, the tenant's for its admins, one's own for members",
          errors=(BAD_REQUEST,)),
    Route("/capacity", "get", "getCapacityAdvice",
          "Capacity advice: more nodes where recorded waits exceed a queue's max wait, release where devices sit "
          "unused, each checked by replaying the recorded workload through the engine (platform admins)",
          a.CapacityAdvice, query=CapacityQuery, answer_description="The advice with the waits it rests on",
          errors=(BAD_REQUEST, FORBIDDEN)),
    Route("/report", "get", "getReport",
          "The acceptance report: per task type the evidence chain and its checkpoints, each met, failed or not "
          "measured by its own evidence (platform admins)",
          None, query=ReportQuery, answer_description="JSON (format=json) or one self-contained HTML file "
          "(format=html)", description="See docs/governance.md#acceptance-report for its sections.",
          errors=(BAD_REQUEST, FORBIDDEN)),
    Route("/onboarding", "get", "listOnboarding", "Every node's and tenant's onboarding checklist (platform admins)",
          [a.Onboarding], answer_description="Checklists with their evidence", errors=(FORBIDDEN,)),
    Route("/onboarding/nodes/{name}", "post", "onboardNode",
          "Run a node's onboarding checklist now: capability, driver, a sample and a failing job on it, its metrics "
          "(platform admins)", a.Onboarding, path_parameters={"name": "string"},
          answer_description="admitted, or rejected with the failed step", errors=(FORBIDDEN, NOT_FOUND)),
    Route("/onboarding/tenants/{name}", "post", "onboardTenant",
          "Run a tenant's onboarding checklist: quota, permissions, a member may submit, a non-member may not "
          "(platform admins)", a.Onboarding, path_parameters={"name": "string"},
          answer_description="admitted, or rejected with the failed step", errors=(FORBIDDEN, NOT_FOUND)),
    Route("/onboarding/chips/{model}", "post", "onboardChip",
          "Run a chip model's onboarding checklist: nodes of it with their facts, a flavor that maps it, one of them "
          "onboarded (platform admins)", a.Onboarding, path_parameters={"model": "string"},
          answer_description="admitted, or rejected with the failed step", errors=(FORBIDDEN, NOT_FOUND)),
    Route("/onboarding/models/{name}", "post", "onboardModel",
          "Run a catalog model's checklist: on a node of its template, its outputs against the reference within the "
          "tolerance, its p95 latency and peak memory within bounds (platform admins)", a.Onboarding,
          path_parameters={"name": "string"}, answer_description="admitted, or rejected with the failed step",
          errors=(FORBIDDEN, NOT_FOUND)),
    Route("/onboarding/frameworks/{template}/{family}", "post", "onboardFramework",
          "Run a template variant's framework checklist: a node it runs on, its frameworks imported there "
          "(platform admins)", a.Onboarding, path_parameters={"template": "string", "family": "string"},
          answer_description="admitted, or rejected with the failed step", errors=(FORBIDDEN, NOT_FOUND)),
    Route("/catalog/reload", "post", "reloadCatalog",
          "Read the catalog file again: onboarding and alerts apply at once; tenants, quotas, queues, templates and "
          "flavors at the next tick, each change audited (platform admins)", a.CatalogReload,
          answer_description="The changes, each as audited, and what is said rather than done",
          errors=(BAD_REQUEST, FORBIDDEN)),
    Route("/metrics", "get", "getMetrics", "The platform's metrics in Prometheus' text format (platform admins)",
          None, answer_description="Resource, task and governance families (see docs/governance.md)",
          media_type="text/plain", errors=(FORBIDDEN,)),
    Route("/nodes", "get", "listNodes", "The inventory", [r.Node], query=ListNodesQuery,
          answer_description="Nodes by name", errors=(BAD_REQUEST,)),
    Route("/nodes/{name}", "delete", "removeNode", "Remove an emulated node, as if the machine died (platform admins)",
          r.NodeRecord, path_parameters={"name": "string"}, answer_description="The node, now lost",
          description="Work on it is stopped and follows its queue's node-loss policy (requeue or fail).",
          errors=(FORBIDDEN, NOT_FOUND)),
    Route("/workloads", "get", "listWorkloads",
          "Workloads the caller may see (their tenant's; everything for platform admins)", [w.Workload],
          query=ListWorkloadsQuery, answer_description="Newest first", errors=(BAD_REQUEST, FORBIDDEN)),
    Route("/workloads", "post", "submitWorkload", "Submit a job, or with array one job per index; it is stored "
          "before this answers", w.Workload,
          status=201, body=SubmitWorkload, answer_description="Accepted and stored; state is queued (an array's first "
                                                               "task, whose id is the array's)",
          headers=_IDEMPOTENCY_KEY, errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND),
          conflict="The Idempotency-Key was used before for a submission that asked for other work"),
    Route("/workloads/{workload_id}", "get", "getWorkload",
          "One workload with request, placement, attempts, position in queue, ETA and blockers", w.Workload,
          query=ExplainQuery, path_parameters=_WORKLOAD, answer_description="The workload",
          errors=(FORBIDDEN, NOT_FOUND)),
    Route("/workloads/{workload_id}", "delete", "cancelWorkload",
          "Cancel (SIGTERM, the queue's grace period, then SIGKILL; capacity released); with array, every unfinished "
          "task of its array", w.Workload, query=CancelQuery,
          path_parameters=_WORKLOAD, answer_description="The workload, cancelled or cancelling",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/workloads/{workload_id}/events", "get", "listWorkloadEvents", "Every transition of the workload, oldest first",
          [w.Event], path_parameters=_WORKLOAD, answer_description="Events", errors=(FORBIDDEN, NOT_FOUND)),
    Route("/workloads/{workload_id}/logs", "get", "getWorkloadLogs",
          "The log of an attempt (the latest by default); with follow, streamed until the attempt ends", None,
          query=LogsQuery, path_parameters=_WORKLOAD, media_type="text/plain",
          answer_description="Plain text, chunked when followed", errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/workloads/{workload_id}/explain", "get", "explainWorkload",
          "Why the workload waits (ranked blockers in plain words), or what it is doing", w.Explanation,
          query=ExplainQuery, path_parameters=_WORKLOAD, answer_description="The explanation",
          errors=(FORBIDDEN, NOT_FOUND)),
    Route("/workloads/{workload_id}/evidence", "get", "getWorkloadEvidence",
          "One workload's evidence chain: its request, attempts (with each node's labels at placement), waits and "
          "blockers, utilisation, alerts, preemptions, release, events and audit entries with the chain's "
          "verification", ev.WorkloadEvidence, query=EvidenceQuery, path_parameters=_WORKLOAD,
          answer_description="JSON (format=json) or one self-contained HTML page (format=html)",
          description="Whoever may describe the workload may read it. See docs/governance.md#one-workloads-evidence.",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/workloads/{workload_id}/metrics", "get", "getWorkloadMetrics",
          "A workload's figures over time: measured from the machine (CPU, memory, storage IO, its processes' device "
          "use) and reported by the workload, with each declared metric that has none and why", m.WorkloadMetrics,
          query=ExplainQuery, path_parameters=_WORKLOAD, answer_description="Its series, oldest point first",
          description="Whoever may describe the workload may read it. See docs/governance.md#what-is-measured.",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/workloads/{workload_id}/metrics", "post", "reportWorkloadMetrics",
          "Figures a workload reports of itself (loss, throughput...): by its own credential or its owner",
          m.ReportedMetrics, body=ReportMetrics, path_parameters=_WORKLOAD, answer_description="What was stored",
          description="At most 50 names a call; one point per name and second (a later one replaces it); at most "
                      "10,000 points per name, past which the oldest half is thinned to every other point. "
                      "jupyter_hetero.report(loss=0.31) sends one from inside a workload. Each workload may report "
                      "c.HeteroApp.metric_reports_per_s times a second after a burst of metric_report_burst (5 and "
                      "20 by default); past that, a 429 with Retry-After before anything is stored.",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND, TOO_MANY_REQUESTS), conflict="The workload is not running"),
    Route("/workloads/{workload_id}/files", "get", "getWorkloadFile",
          "A file an attempt archived (its outputs, an executed notebook)", None, query=FilesQuery,
          path_parameters=_WORKLOAD, media_type="application/octet-stream", answer_description="The file's bytes",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/workloads/{workload_id}/resubmit", "post", "resubmitWorkload",
          "Submit a new job with the same template, queue, parameters and payload", w.Workload, status=201,
          path_parameters=_WORKLOAD, answer_description="The new workload", errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/workloads/{workload_id}/preempt", "post", "preemptWorkload",
          "Platform admins - evict a running workload, or with dry_run show what a waiting one would evict",
          w.PreemptOutcome, query=PreemptQuery, path_parameters=_WORKLOAD,
          answer_description="The eviction, or the dry run's victims", errors=(FORBIDDEN, NOT_FOUND, ENGINE_RESTARTING),
          conflict="Not in a state this applies to"),
    Route("/previews", "post", "previewWorkload",
          "What would happen to a submission, per eligible flavor (free capacity, starts now or why not and when); "
          "nothing is stored", w.Preview, body=PreviewWorkload, answer_description="The preview",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND, ENGINE_RESTARTING)),
    Route("/kernels", "post", "startKernel",
          "Start a kernel from a template and advanced parameters; it is placed by the scheduler first",
          w.StartedKernel, status=201, body=StartKernel, answer_description="The kernel runs; attach a session to kernel_id",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND),
          accepted=(w.WaitingKernel, "No placement yet after a few seconds, and the caller did not ask to wait: the "
                                     "kernel's workload waits in its queue (its blockers and ETA here) and the kernel "
                                     "starts once placed, within wait_timeout; follow it with getWorkload"),
          conflict="No placement within wait_timeout (the message names the blockers and the ETA), or at once when no "
                   "node of the inventory could ever hold the request (the message gives the reason); always from the "
                   "hub's service, which runs no kernels (reason kernels-run-in-user-servers)"),
    Route("/servers", "post", "requestServer",
          "A hub spawner asks, as its user, for a server from an interactive template; it waits in the queue like "
          "any workload (follow it with getWorkload) and counts against the tenant's quota once placed", w.Workload,
          status=201, body=RequestServer, answer_description="Stored; state is queued",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/servers/{workload_id}/started", "post", "reportServerStarted",
          "The spawner started the placed server (its owner only); the answer carries the variables its process "
          "needs, device visibility included", w.Started, body=Launched, path_parameters=_WORKLOAD,
          answer_description="The server's workload, running, and its environment",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND), conflict="The server's workload is not placed (waiting or ended)"),
    Route("/servers/{workload_id}", "delete", "releaseServer",
          "The server stopped, or its start was abandoned: its devices are given back at once", w.Workload,
          query=ReleaseQuery, path_parameters=_WORKLOAD, answer_description="The server's workload, ended",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/kernels/placements", "post", "requestKernelPlacement",
          "A hub user's server asks, as its user, for a hub kernel's placement from an interactive template; it waits in "
          "the queue like any workload (follow it with getWorkload), then the server launches the hub kernel", w.Workload,
          status=201, body=RequestKernelPlacement, answer_description="Stored; state is queued",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/kernels/placements/{workload_id}/started", "post", "reportKernelStarted",
          "The hub user's server launches the placed hub kernel (its owner only); the answer carries the kernel's "
          "environment: device visibility, placement and its own workload credential. Where the hub service runs "
          "kernels in pods, it sends the kernel's connection and the hub service starts the pod; the answer carries "
          "the pod's IP", w.Started, body=Launched,
          path_parameters=_WORKLOAD, answer_description="The kernel's workload, running, and its environment",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND),
          conflict="The kernel's workload is not placed (waiting, stopping or ended)"),
    Route("/kernels/placements/{workload_id}/pod", "delete", "endKernelPod",
          "Where the hub service runs kernels in pods: end the hub kernel's pod and keep its placement (a restart starts a "
          "new pod); nothing to do elsewhere", None, status=204, path_parameters=_WORKLOAD,
          answer_description="The pod is being deleted", errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/kernels/placements/{workload_id}", "delete", "releaseKernel",
          "The hub kernel ended, or its start was abandoned: its devices are given back at once", w.Workload,
          query=ReleaseQuery, path_parameters=_WORKLOAD, answer_description="The kernel's workload, ended",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/activity", "post", "reportActivity",
          "A hub user's server reports its own activity and its hub kernels' (every few seconds): what the idle "
          "rules read; the answer names the kernels it must shut down (culled, preempted, cancelled, lost) with the "
          "reason. An idle server is stopped through the hub", w.KernelStops, body=ActivityReport,
          answer_description="The kernels to shut down", errors=(BAD_REQUEST, FORBIDDEN)),
    Route("/services", "get", "listServices", "Online services of your tenant (every tenant's, for platform admins)",
          [s.Service], answer_description="The services"),
    Route("/services", "post", "createService",
          "An online service: replicas of a model server placed on matched devices in the template's queue (its "
          "reserved capacity), each told its port in PORT, behind the endpoint /hetero/endpoints/<tenant>/<name>/ once ready",
          s.Service, status=201, body=CreateService, answer_description="Stored; its replicas are queued",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND), conflict="An active service of that name exists already in the tenant"),
    Route("/services/{name}", "get", "getService", "A service: its replicas, which of them are ready, its traffic",
          s.Service, path_parameters={"name": "string"}, query=ServiceQuery, answer_description="The service",
          errors=(FORBIDDEN, NOT_FOUND)),
    Route("/services/{name}/events", "get", "listServiceEvents",
          "Every step of a service, oldest first: rollouts, canary verdicts with the figures they rest on, rollbacks, "
          "scaling", [w.Event], path_parameters={"name": "string"}, query=ServiceQuery, answer_description="Events",
          errors=(FORBIDDEN, NOT_FOUND)),
    Route("/services/{name}", "patch", "scaleService",
          "Scale a service by hand, between its minimum and maximum (its owner, a tenant-admin)", s.Service,
          body=ScaleService, path_parameters={"name": "string"}, query=ServiceQuery, answer_description="The service",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND), conflict="The service was deleted"),
    Route("/services/{name}", "delete", "deleteService",
          "End a service: every replica is cancelled and its devices given back", s.Service,
          path_parameters={"name": "string"}, query=ServiceQuery, answer_description="The service, deleted",
          errors=(FORBIDDEN, NOT_FOUND), conflict="The service was deleted already"),
    Route("/services/{name}/rollouts", "post", "rollOutService",
          "A new revision of a service (what changes of the stable one), tried as a canary on the template's share "
          "of traffic; judged after its window by the template's metric targets against the stable revision, then "
          "promoted or rolled back automatically, with the figures", s.Service, status=201, body=CreateRollout,
          path_parameters={"name": "string"}, query=ServiceQuery, answer_description="The service, its canary under trial",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND), conflict="A canary is under trial already, or the service was "
          "deleted"),
    Route("/services/{name}/rollback", "post", "rollBackService",
          "Back to an earlier revision at once, as a new revision (a canary under trial ends); without a revision, "
          "the canary under trial ends, or with none, back to the revision stable before this one", s.Service, body=RollBack, path_parameters={"name": "string"}, query=ServiceQuery,
          answer_description="The service", errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND),
          conflict="The service was deleted"),
    Route("/schedules", "get", "listSchedules",
          "Recurring schedules: the caller's own (a tenant-admin's, their tenant's; a platform admin's, every one)",
          [sc.Schedule], query=ExplainQuery, answer_description="Schedules, oldest first, each with its latest runs",
          errors=(BAD_REQUEST,)),
    Route("/schedules", "post", "createSchedule",
          "A job submitted as the caller at each due time of a cron expression in a time zone; nothing is submitted "
          "now", sc.Schedule, status=201, body=sc.CreateSchedule, query=ExplainQuery,
          answer_description="Stored, with its next due time",
          description="The job is checked as POST /workloads checks a submission (each problem named job.<field>), "
                      "and again, as its owner, at each run: a refusal then is the schedule's last_error, and it tries "
                      "again at its next due time. See docs/jobs.md#recurring-schedules.",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/schedules/{schedule_id}", "get", "getSchedule", "A schedule, its cron in words and its latest runs",
          sc.Schedule, query=ExplainQuery, path_parameters=_SCHEDULE, answer_description="The schedule",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND)),
    Route("/schedules/{schedule_id}", "patch", "updateSchedule",
          "Edit a schedule (its owner, a tenant-admin): its next due time is worked out again from now", sc.Schedule,
          body=sc.UpdateSchedule, query=ExplainQuery, path_parameters=_SCHEDULE, answer_description="The schedule",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND), conflict="The schedule was deleted"),
    Route("/schedules/{schedule_id}", "delete", "deleteSchedule",
          "End a schedule; the workloads it submitted stay", sc.Schedule, query=ExplainQuery,
          path_parameters=_SCHEDULE, answer_description="The schedule as it was, its state deleted",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND), conflict="The schedule was deleted already"),
    Route("/schedules/{schedule_id}/pause", "post", "pauseSchedule", "Pause a schedule: nothing runs until it resumes",
          sc.Schedule, query=ExplainQuery, path_parameters=_SCHEDULE, answer_description="The schedule, paused",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND), conflict="The schedule was deleted"),
    Route("/schedules/{schedule_id}/resume", "post", "resumeSchedule",
          "Resume a schedule from now on: the due times it spent paused are not made up", sc.Schedule,
          query=ExplainQuery, path_parameters=_SCHEDULE, answer_description="The schedule, active, its next due time",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND), conflict="The schedule was deleted"),
    Route("/schedules/{schedule_id}/run", "post", "runSchedule",
          "Submit a schedule's job now, as its owner and under their quotas, out of cadence (its due times stay)",
          w.Workload, status=201, path_parameters=_SCHEDULE, answer_description="The workload submitted",
          errors=(BAD_REQUEST, FORBIDDEN, NOT_FOUND, TOO_MANY_REQUESTS), conflict="The schedule was deleted"),
    Route("/kernels/{kernel_id}/usage", "get", "getKernelUsage",
          "CPU, memory and (where measurable) device use of exactly this kernel's devices", w.KernelUsage,
          path_parameters={"kernel_id": "string"}, answer_description="Usage", errors=(NOT_FOUND,)),
)
