"""Request DTOs of the REST API, named by verb; the handlers validate input through these."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from .capability import AcceleratorFamily
from .metric_names import REPORTED_NAME
from .catalog import TaskType, WorkloadKind
from .units import DurationS

__all__ = [
    "MAX_STORED_INT",
    "AfterWorkload",
    "CancelQuery",
    "EvidenceQuery",
    "ExplainQuery",
    "ListNodesQuery",
    "ListTemplatesQuery",
    "ListWorkloadsQuery",
    "LogsQuery",
    "NotebookSpec",
    "FilesQuery",
    "PreemptQuery",
    "ActivityReport",
    "AlertsQuery",
    "AuditQuery",
    "CapacityQuery",
    "ReportQuery",
    "ReportMetrics",
    "UsageQuery",
    "CreateRollout",
    "CreateService",
    "KernelActivity",
    "KernelConnection",
    "Launched",
    "PreviewWorkload",
    "RequestKernelPlacement",
    "ReleaseQuery",
    "RollBack",
    "RequestServer",
    "ScaleService",
    "ScriptSpec",
    "ServerActivity",
    "StartKernel",
    "SubmitWorkload",
]


# The largest integer the store keeps (a 64-bit column in SQLite and PostgreSQL): an id, offset or attempt past it
# names no row, and the database driver refuses it outright (an OverflowError, which was a 500).
MAX_STORED_INT = 2**63 - 1

# One command-line argument: Linux takes none longer (MAX_ARG_STRLEN); a longer one would fail at start, not here.
Argument = Annotated[str, Field(max_length=131_072)]


class _Query(BaseModel):
    # Unknown query parameters are errors, so a typo is reported instead of silently ignored; "nan" and "inf" are no
    # times or amounts.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ListTemplatesQuery(_Query):
    kind: WorkloadKind | None = None
    task_type: TaskType | None = None
    mine: bool = Field(default=False, description="Only templates the caller's tenant may use.")


class ListNodesQuery(_Query):
    flavor: str | None = None
    family: AcceleratorFamily | None = None
    emulated: bool | None = None
    state: Literal["ready", "onboarding", "cordoned", "lost"] | None = None


class ScriptSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, description="A .py file under the server's root.")
    args: list[Argument] = Field(default_factory=list)


class AfterWorkload(BaseModel):
    """One workload a job waits for, and how it must end (Slurm's afterok, afterany, afternotok)."""

    model_config = ConfigDict(extra="forbid")
    workload: int = Field(ge=1, le=MAX_STORED_INT, description="The awaited workload's id.")
    condition: Literal["ok", "any", "failed"] = Field(default="ok", description=(
        "ok: it must succeed; any: it must end, however; failed: it must fail (or be lost). A condition that can "
        "no longer hold fails the waiting job with the reason."))


class NotebookSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, description="An .ipynb file under the server's root.")
    parameters: dict[str, Any] = Field(default_factory=dict, description=(
        "Python variable names and JSON values, set by a cell injected right after the cell tagged 'parameters' "
        "(first, when none is tagged), as papermill does."))


class SubmitWorkload(BaseModel):
    """``POST /workloads``: one job, from exactly one of a command, a script, a code cell or a notebook."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["job"] = "job"
    template: str = Field(min_length=1)
    queue: str | None = Field(default=None, description="Defaults to the template's queue.")
    name: str | None = Field(default=None, max_length=253)
    command: list[Argument] | None = Field(default=None, min_length=1)
    script: ScriptSpec | None = None
    code: str | None = Field(default=None, min_length=1, description="Python source run as a script.")
    notebook: NotebookSpec | None = None
    parameters: dict[str, Any] = Field(default_factory=dict, description="Advanced parameters of the template.")
    env: dict[str, str] = Field(default_factory=dict)
    runtime: str | int | None = Field(default=None, description="Expected run time, for ETAs ('2h', seconds).")
    cwd: str | None = Field(default=None, max_length=4096, description=(
        "Working directory: relative to the submitter's root (the server's, or theirs on a hub), or an absolute path "
        "inside it; it must resolve there, links followed (else a 400 naming cwd). Default: the root."))
    python: str | None = Field(default=None, min_length=1, max_length=4096, description=(
        "The interpreter `python` means in the job, an absolute path: its folder goes first on the job's PATH. The "
        "CLI sends its own (sys.executable), the magics their kernel's."))
    after: list[AfterWorkload] = Field(default_factory=list, max_length=64, description=(
        "Workloads this job waits for, each with its condition; it is not admitted until all hold."))
    array: str | None = Field(default=None, min_length=1, max_length=1024, description=(
        "Slurm's --array: one job per index, '0-99', '0-99:2', '1,3,7-9', with '%N' last at most N at once."))

    @model_validator(mode="after")
    def _one_payload(self) -> SubmitWorkload:
        given = [name for name in ("command", "script", "code", "notebook") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of command, script, code or notebook" + (f" (got {', '.join(given)})" if given else "")
            )
        if self.command is not None and not all(part for part in self.command):
            raise ValueError("command parts must not be empty")
        return self

    @property
    def payload(self) -> str:
        return next(name for name in ("command", "script", "code", "notebook") if getattr(self, name) is not None)


class StartKernel(BaseModel):
    """``POST /kernels``: a kernel from a template, with advanced parameters, placed by the scheduler."""

    model_config = ConfigDict(extra="forbid")

    template: str = Field(default="interactive", min_length=1)
    parameters: dict[str, Any] = Field(default_factory=dict)
    queue: str | None = None
    wait_timeout: float = Field(default=60, gt=0, le=3600, description="Seconds the kernel may wait for a placement; "
                                "after them its workload is cancelled with the blockers and the ETA.")
    # The request holds its connection only when asked: on a full inventory it would be held for wait_timeout.
    wait: bool = Field(default=False, description="Hold the request until the kernel runs or wait_timeout passes (then "
                       "409 with the blockers and the ETA). Without it, a kernel not placed within a few seconds is "
                       "answered 202 with its waiting workload, and starts once placed.")
    kernel_name: str | None = Field(default=None, description="A hetero kernelspec; the generic one by default.")
    path: str | None = Field(default=None, description="Working directory of the kernel, under the server root.")


class RequestServer(BaseModel):
    """``POST /servers``: a hub user's server from an interactive template, placed by the scheduler first."""

    model_config = ConfigDict(extra="forbid")

    template: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=dict, description="Advanced parameters (devices, cpu...).")
    flavor: str | None = Field(default=None, description="One of the template's flavors (a profile's); any by default.")
    queue: str | None = Field(default=None, description="Defaults to the template's queue.")
    name: str | None = Field(default=None, max_length=253)
    server_name: str = Field(default="", max_length=255, pattern=r"^[^/]*$",
                             description="The hub's name of the server ('' for the user's default server).")


class KernelConnection(BaseModel):
    """A kernel's connection (Jupyter's connection file): the launching server chose the key and the ports."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1, max_length=256)
    signature_scheme: Literal["hmac-sha256"] = "hmac-sha256"
    transport: Literal["tcp"] = "tcp"
    ip: str = Field(default="127.0.0.1", max_length=64)
    kernel_name: str = Field(default="", max_length=128)
    shell_port: int = Field(ge=1, le=65535)
    iopub_port: int = Field(ge=1, le=65535)
    stdin_port: int = Field(ge=1, le=65535)
    control_port: int = Field(ge=1, le=65535)
    hb_port: int = Field(ge=1, le=65535)


class Launched(BaseModel):
    """``POST /servers/{id}/started``, ``POST /kernels/placements/{id}/started``: the caller launches the placed
    workload (a hub spawner its server, a user's server its kernel)."""

    model_config = ConfigDict(extra="forbid")

    where: str | None = Field(default=None, max_length=253, description="What runs it (a pid, a pod).")
    connection: KernelConnection | None = Field(
        default=None, description="A hub kernel's, where the hub service runs kernels in pods: the pod serves it there.")


class RequestKernelPlacement(BaseModel):
    """``POST /kernels/placements``: a hub user's server asks for a hub kernel's placement; it launches the kernel."""

    model_config = ConfigDict(extra="forbid")

    template: str = Field(default="interactive", min_length=1)
    parameters: dict[str, Any] = Field(default_factory=dict, description="Advanced parameters (devices, cpu...).")
    queue: str | None = Field(default=None, description="Defaults to the template's queue.")
    kernel_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$",
                           description="The kernel's id in the user's server.")
    idle_timeout: float | None = Field(default=None, gt=0, description="Seconds idle before the kernel is culled "
                                                                       "(the kernelspec's); the template's by default.")


class KernelActivity(BaseModel):
    """One kernel, as its user's server last saw it."""

    model_config = ConfigDict(extra="forbid")

    workload_id: int = Field(ge=-MAX_STORED_INT, le=MAX_STORED_INT)
    execution_state: str = Field(max_length=32, description="idle, busy, starting ... (Jupyter's word).")
    last_activity: float | None = Field(default=None, description="When it last did anything (Unix time).")


class ServerActivity(BaseModel):
    """A hub user's server, as it sees itself."""

    model_config = ConfigDict(extra="forbid")

    workload_id: int = Field(ge=-MAX_STORED_INT, le=MAX_STORED_INT, description="The server's own workload (its HETERO_WORKLOAD_ID).")
    last_activity: float | None = Field(default=None, description="When it last served a request or ran code "
                                                                  "(Unix time; jupyter_server's last activity).")


class ActivityReport(BaseModel):
    """``POST /activity``: a hub user's server, every few seconds: itself and its hub kernels."""

    model_config = ConfigDict(extra="forbid")

    server: ServerActivity | None = None
    kernels: list[KernelActivity] = Field(default_factory=list, max_length=1000)


# At most this many figures in one report: a training step's loss, accuracy, throughput and the like.
MAX_REPORTED_PER_CALL = 50


class ReportMetrics(BaseModel):
    """``POST /workloads/{id}/metrics``: figures a workload reports of itself (``jupyter_hetero.report()``)."""

    model_config = ConfigDict(extra="forbid")

    metrics: dict[Annotated[str, StringConstraints(pattern=REPORTED_NAME.pattern)],
                  Annotated[float, Field(strict=True, allow_inf_nan=False)]] = Field(
        min_length=1, max_length=MAX_REPORTED_PER_CALL,
        description="Name -> finite number; names are lower-case letters, digits and _, at most 63 characters, "
                    "starting with a letter.", examples=[{"loss": 0.31, "step": 120}])
    at: Annotated[float, Field(allow_inf_nan=False)] | None = Field(
        default=None, description="When the figures were true (Unix time); now when left out.")


class PreviewWorkload(BaseModel):
    """``POST /previews``: what would happen to a submission, per eligible flavor; nothing is stored."""

    model_config = ConfigDict(extra="forbid")

    template: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=dict)
    queue: str | None = None
    kind: Literal["job", "kernel"] = "job"
    lang: str = "en"


class FilesQuery(_Query):
    path: str = Field(min_length=1, description="A file under the attempt's archive, e.g. outputs/result.csv.")
    attempt: int | None = Field(default=None, ge=1, le=MAX_STORED_INT)


class ListWorkloadsQuery(_Query):
    mine: bool = False
    tenant: str | None = None
    queue: str | None = None
    state: Literal["queued", "inadmissible", "admitted", "starting", "running", "succeeded", "failed", "cancelled",
                   "preempted", "lost"] | None = None
    kind: WorkloadKind | None = None
    array: int | None = Field(default=None, ge=1, le=MAX_STORED_INT, description="Only that array's tasks (its id).")
    limit: int = Field(default=200, ge=1, le=5000)


class LogsQuery(_Query):
    attempt: int | None = Field(default=None, ge=1, le=MAX_STORED_INT)
    follow: bool = False
    tail: int | None = Field(default=None, ge=1, le=100000, description="Only the last N lines.")


class ExplainQuery(_Query):
    lang: str = Field(default="en", description="en or zh, for blocker messages.")


class CancelQuery(_Query):
    array: bool = Field(default=False, description="Cancel every unfinished task of the workload's array.")


class PreemptQuery(_Query):
    dry_run: bool = False


class UsageQuery(_Query):
    """``GET /usage``: what was held over the last ``since`` (a duration: 30d, 12h, 3600), grouped ``by``."""

    since: DurationS = Field(default=30 * 86400, ge=1)
    by: Literal["tenant", "user", "queue", "template", "cost_centre", "flavor"] = "tenant"


class ReportQuery(_Query):
    """``GET /report``: the acceptance report over the last ``since`` (a duration), as JSON or one HTML file."""

    since: DurationS = Field(default=30 * 86400, ge=1)
    format: Literal["json", "html"] = "json"
    lang: Literal["en", "zh"] = "en"


class EvidenceQuery(_Query):
    """``GET /workloads/{id}/evidence``: one workload's evidence chain, as JSON or one HTML page."""

    format: Literal["json", "html"] = "json"
    lang: Literal["en", "zh"] = "en"


class CapacityQuery(_Query):
    """``GET /capacity``: advice from what was recorded over the last ``since`` (a duration)."""

    since: DurationS = Field(default=7 * 86400, ge=1)


class AlertsQuery(_Query):
    state: Literal["firing", "resolved"] | None = None


class AuditQuery(_Query):
    """``GET /audit``: entries oldest first, filtered; ``after`` an entry's id, for the next page."""

    actor: str | None = None
    action: str | None = Field(default=None, description="An action (workload.preempt) or its prefix (workload.).")
    outcome: Literal["allowed", "denied", "done"] | None = None
    target: str | None = Field(default=None, description="A target (workload/7) or its prefix (workload/).")
    since: float | None = Field(default=None, description="Epoch seconds.")
    until: float | None = Field(default=None, description="Epoch seconds.")
    after: int = Field(default=0, ge=0, le=MAX_STORED_INT)
    limit: int = Field(default=200, ge=1, le=5000)


class ReleaseQuery(_Query):
    """``DELETE /servers/{id}``, ``DELETE /kernels/placements/{id}``: why, when the launch itself failed."""

    failed: str | None = Field(default=None, min_length=1, max_length=1000,
                               description="The launch failed, for this reason: the workload ends failed, not done.")


class ServiceQuery(_Query):
    """``/services/{name}...``: a service's name is looked up in the caller's tenant unless ``tenant`` says."""

    tenant: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=63,
                               description="The tenant whose service of that name is meant (default: the caller's "
                                           "own); only a platform admin may name another tenant.")


class CreateService(BaseModel):
    """``POST /services``: an online service of ``replicas`` copies of a model server, behind one endpoint."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
                      description="Unique among the tenant's active services (a deleted service's name is free "
                                  "again); its endpoint is /hetero/endpoints/<tenant>/<name>/ (lower-case letters, "
                                  "digits, '-').")
    template: str = Field(default="online-inference", min_length=1)
    command: list[Argument] | None = Field(default=None, min_length=1,
                                           description="The model server; it listens on $PORT.")
    code: str | None = Field(default=None, min_length=1, description="Python source that serves on $PORT (run as a "
                                                                     "job's code cell is), instead of a command.")
    env: dict[str, str] = Field(default_factory=dict)
    parameters: dict[str, Any] = Field(default_factory=dict, description="The template's advanced parameters, "
                                                                         "per replica (devices, memory...).")
    queue: str | None = Field(default=None, description="Defaults to the template's queue (inference).")
    replicas: int = Field(default=1, ge=1, le=64)
    min_replicas: int = Field(default=1, ge=0, le=64, description="Never scaled below this.")
    max_replicas: int | None = Field(default=None, ge=1, le=64, description="Never scaled above this; replicas by "
                                                                           "default.")
    readiness_path: str = Field(default="/health", pattern=r"^/[^\s]*$", max_length=253,
                                description="A replica takes traffic once a GET of this path answers 2xx or 3xx.")
    target_in_flight: float | None = Field(default=None, gt=0, le=10_000,
                                           description="Scale by policy: keep about this many requests in flight per "
                                                       "replica, between min_replicas and max_replicas.")
    scale_down_delay_s: float = Field(default=60, ge=0, le=3600,
                                      description="Load must stay low this long before a replica is taken away.")

    @model_validator(mode="after")
    def _counts(self) -> CreateService:
        if (self.command is None) == (self.code is None):
            raise ValueError("give exactly one of command or code")
        if self.command is not None and not all(part for part in self.command):
            raise ValueError("command parts must not be empty")
        if self.min_replicas > self.replicas:
            raise ValueError(f"min_replicas {self.min_replicas} is more than replicas {self.replicas}")
        if self.max_replicas is not None and self.max_replicas < self.replicas:
            raise ValueError(f"max_replicas {self.max_replicas} is less than replicas {self.replicas}")
        return self


class ScaleService(BaseModel):
    """``PATCH /services/{name}``: how many replicas run."""

    model_config = ConfigDict(extra="forbid")

    replicas: int = Field(ge=0, le=64)


class CreateRollout(BaseModel):
    """``POST /services/{name}/rollouts``: a new revision, what changes of the stable one; tried as a canary."""

    model_config = ConfigDict(extra="forbid")

    command: list[Argument] | None = Field(default=None, min_length=1)
    code: str | None = Field(default=None, min_length=1)
    env: dict[str, str] | None = None
    parameters: dict[str, Any] | None = None
    readiness_path: str | None = Field(default=None, pattern=r"^/[^\s]*$", max_length=253)

    @model_validator(mode="after")
    def _changes_something(self) -> CreateRollout:
        if not self.model_dump(exclude_none=True):
            raise ValueError("give what the new revision changes: command, code, env, parameters or readiness_path")
        if self.command is not None and self.code is not None:
            raise ValueError("give command or code, not both")
        return self


class RollBack(BaseModel):
    """``POST /services/{name}/rollback``: back to an earlier revision at once (the previous stable one by default)."""

    model_config = ConfigDict(extra="forbid")

    revision: int | None = Field(default=None, ge=1, le=MAX_STORED_INT)
