"""HeteroApp: the jupyter-server extension. Its traits and lifecycle; what it builds at start is startup.py's."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from jupyter_core.paths import jupyter_data_dir
from jupyter_server.extension.application import ExtensionApp
from traitlets import (
    Bool,
    CaselessStrEnum,
    Dict,
    Float,
    Int,
    List,
    TraitError,
    Type,
    Unicode,
    default,
    validate,
)

from .auth import hide_server_token_from_members
from .authorizer import guard_routes
from .catalog import DEFAULT_CATALOG_PATH
from .catalog.fit import DEFAULT_SHARE
from .engine import Engine, Policy
from .handlers import default_handlers, endpoint_handlers, service_handlers
from .handlers.forward import find_service_url, forward_handlers
from .handlers.hub_kernels import hub_kernel_handlers
from .platform.clock import Clock
from .platform.request_limits import BodyLimits, SubmissionRate
from .platform.workloads.credentials import DEFAULT_PASSTHROUGH
from .startup import build_platform, forget_failed_starts, forward_to_service
from .store import default_db_url
from .store.audit_seal import default_anchor_file, default_key_file

__all__ = ["BACKEND_CLASSES", "HeteroApp"]

# The class each name of HeteroApp.backend stands for: backend_class's default.
BACKEND_CLASSES = {
    "local": "jupyter_hetero.backends.local.processes.LocalBackend",
    "kubernetes": "jupyter_hetero.backends.kubernetes.backend.KubernetesBackend",
}


class HeteroApp(ExtensionApp):
    """Self-service heterogeneous compute: templates, queues, quotas and a server-side scheduler."""

    name = "jupyter_hetero"
    load_other_extensions = True

    catalog_file = Unicode(
        str(DEFAULT_CATALOG_PATH),
        config=True,
        help="Path of the catalog YAML (flavors, templates, queues, tenants). Defaults to the shipped catalog.",
    )
    db_url = Unicode(
        config=True,
        help="SQLAlchemy URL of the store. Defaults to a SQLite file under the Jupyter data dir; "
        "use postgresql+psycopg://... for a shared database.",
    )
    discover_local = Bool(
        True, config=True, help="Whether this machine is discovered (psutil, NVML, npu-smi, rocm-smi) as a node."
    )
    local_node_name = Unicode(
        "", config=True, help="Name of this machine as a node; empty means its hostname."
    )
    emulated_nodes_file = Unicode(
        "", config=True, help="YAML file of emulated nodes for demos and tests (flagged emulated everywhere)."
    )
    emulated_nodes = List(
        Dict(), config=True, help="Emulated nodes declared inline, in the same shape as emulated_nodes_file entries."
    )
    platform_admins = List(
        Unicode(), config=True, help="Users who are platform admins in addition to the catalog's platform_admins."
    )
    mode = CaselessStrEnum(
        ["single-server", "service", "hub-user"], "single-server", config=True,
        help="'single-server': this server's own scheduler (the embedded default). 'service': the one shared "
        "scheduler of a JupyterHub, run as a hub-managed service by `jupyter hetero service` (hub users are who "
        "the hub says, their groups map to tenants; no one is the server's owner). 'hub-user': a hub user's "
        "server with no scheduler of its own, passing every hetero API call to the service at service_url "
        "(the default when service_url is set).",
    )
    user_root_template = Unicode(
        "", config=True,
        help="The hub service: the directory of each user's files (the scripts, notebooks and working directories "
        "their jobs name), '{username}' replaced, e.g. /home/{username}: their server's root. Empty: the server's "
        "own root directory, for everyone.",
    )
    service_url = Unicode(
        config=True,
        help="URL of the hub's hetero service (e.g. http://127.0.0.1:10101/services/hetero/), for a hub user's "
        "server; defaults to $JUPYTER_HETERO_SERVICE_URL, else to what the hub's API says of its 'hetero' service. "
        "Its calls carry the server's hub token "
        "($JUPYTERHUB_API_TOKEN), which needs the scope access:services!service=hetero (Spawner.server_token_scopes).",
    )
    service_retry_seconds = Float(
        10.0, config=True,
        help="A hub user's server: for how many seconds a call is tried again (with a short backoff) while the hub's "
        "hetero service cannot be reached (restarting, or down), before it answers 502 service-unreachable. Only a "
        "call the service never saw is sent again, and a GET; any other call cut off after it was sent answers 502 "
        "outcome-unknown at once. JupyterHub starts a managed service that died again at its next poll of the "
        "process, up to 30 s later, and the service then takes some seconds to start: 60 outwaits that.",
    )
    owner_is_platform_admin = Bool(
        config=True,
        help="Whether the server's owner (whoever holds its own token or password) is a platform admin "
        "(true by default on a single server, false for the hub service).",
    )
    owner_name = Unicode(
        config=True,
        help="User name of the server's owner (whoever holds its own token or password, under jupyter_server's "
        "identity providers or TeamIdentityProvider). Defaults to the OS user. Users of any other identity "
        "provider go by the names it gives them and are never the owner.",
    )
    workload_env_passthrough = List(
        Unicode(), default_value=list(DEFAULT_PASSTHROUGH), config=True,
        help="Variables of the server's environment that kernels and jobs inherit (names; a trailing * matches a "
        "prefix). Nothing else of it reaches them: a workload starts from these, its template's and its own "
        "variables and its own credential, never the server's token.",
    )
    work_dir = Unicode(
        config=True, help="Directory for job logs, outputs, checkpoints and archives. Defaults to the Jupyter data dir."
    )
    schedule_interval = Float(
        2.0, config=True, help="Seconds between scheduling cycles when nothing changes (changes trigger one at once)."
    )
    max_array_tasks = Int(
        10_000, config=True, min=1,
        help="The most tasks one job array may have (POST /workloads with array, `jupyter hetero submit --array`); "
             "each task is a workload of its own, all stored in one write. A larger array is a 400 naming array.",
    )
    placement_policy = Unicode(
        Policy.FRAGMENTATION, config=True,
        help="How a node and its devices are chosen inside a flavor: binpack, spread or fragmentation-aware "
        "(the default, which scores every eligible node by the fragmentation a placement leaves for the "
        "templates' typical requests).",
    )
    engine_process = Bool(
        True, config=True,
        help="Whether scheduling cycles (each tick's, and the dry runs behind previews and preemption dry runs) "
        "run in a child process of their own, fed only what changed since the last cycle. Their CPU time then "
        "never holds the server's interpreter lock, which requests wait for; off runs them in the server's "
        "process, in the scheduler's worker thread.",
    )
    engine_process_timeout = Float(
        60.0, config=True,
        help="Seconds the engine process may take to answer one request (a tick's cycle, or a preview's dry "
        "runs) before it is taken for stuck: it is killed, that tick or preview fails, and the next request "
        "starts a new engine process from a full snapshot.",
    )
    engine_process_start_timeout = Float(
        30.0, config=True,
        help="Seconds a new engine process may take, on top of engine_process_timeout, for its first answer: "
        "it starts an interpreter, imports the engine and builds its copy of the whole snapshot.",
    )
    cull_device_idle_pct = Float(
        5.0, config=True,
        help="Kernels whose devices are measurably used below this percentage are culled (see cull_device_idle_after).",
    )
    cull_device_idle_after = Float(
        1800.0, config=True,
        help="Seconds of device utilisation below cull_device_idle_pct before a kernel is culled; only where its "
        "devices are measured (NVML here, KubernetesConfig.exporters for kernels in pods).",
    )
    kernel_report_grace = Float(
        30.0, config=True,
        help="Seconds the hub's service waits for a user's server to report one of its kernels before it takes "
        "the kernel as gone and releases its devices (servers report every few seconds).",
    )
    alert_interval = Float(
        10.0, config=True,
        help="Seconds between two evaluations of the catalog's alert rules (see docs/governance.md#alerts).",
    )
    metric_interval_s = Float(
        10.0, config=True, min=1.0,
        help="Seconds between two stored samples of a running workload's measured figures (CPU, memory, storage IO, "
             "its processes' device use); each tick writes every workload's due samples in one transaction "
             "(see docs/governance.md#what-is-measured).",
    )
    metric_retention_s = Float(
        30 * 86400.0, config=True, min=0.0,
        help="Seconds the metric samples of a workload that ended are kept; then the scheduler's thread deletes them "
             "in batches of at most 50,000 rows, one write each, in a pass at most once an hour. The attempts' totals "
             "(CPU seconds, IO bytes, peaks) stay. 0 keeps every sample (see docs/governance.md#what-is-measured).",
    )
    metric_reports_per_s = Float(
        5.0, config=True, min=0.0,
        help="Reports of its own figures (jupyter_hetero.report(), POST /workloads/{id}/metrics) a workload may make "
             "per second, after a burst of metric_report_burst; more are refused (429 with Retry-After) before "
             "anything is written, so that one job reporting in a tight loop cannot hold the store's single writer. "
             "0 for no limit.",
    )
    metric_report_burst = Int(
        20, config=True, min=1, help="Reports a workload may make at once before metric_reports_per_s applies.",
    )
    alert_webhook = Unicode(
        "", config=True,
        help="URL each alert is POSTed to as JSON when it fires and when it resolves; empty: none.",
    )
    preemption_limit = Int(
        3, config=True,
        help="How many times a workload may be preempted within preemption_window seconds; then it is protected "
        "from preemption until the oldest of those preemptions leaves the window (work that would need to evict it "
        "waits, with a 'protected' blocker).",
    )
    preemption_window = Float(
        3600.0, config=True,
        help="Seconds over which preemptions of one workload are counted against preemption_limit.",
    )
    local_default_share = Float(
        DEFAULT_SHARE, config=True,
        help="When this machine is the whole inventory (no emulated nodes), template defaults are capped at this "
        "share of its CPU and memory (and at its devices), so default work fits; 0 keeps the catalog's defaults.",
    )
    backend = CaselessStrEnum(
        ["local", "kubernetes"], "local", config=True,
        help="Where workloads run: 'local' (this machine, and emulated nodes) or 'kubernetes' (the cluster's nodes "
        "as inventory, workloads as pods; see KubernetesConfig).",
    )
    backend_class = Type(
        BACKEND_CLASSES["local"], klass=object, config=True,
        help="The class of the backend (the Backend protocol of jupyter_hetero.backends.base). Defaults to the "
        "class HeteroApp.backend names; set it to plug in a backend of your own, e.g. 'my.module.MyBackend'. It is "
        "made as its kind (its 'name' attribute) is: a 'local' one with no arguments, its nodes this machine and the "
        "emulated ones; a 'kubernetes' one with KubernetesConfig; any other with the app as its traitlets parent "
        "when it is configurable and, as the Kubernetes one, started and asked for its nodes.",
    )
    sandbox = CaselessStrEnum(
        ["auto", "bwrap", "none"], "auto", config=True,
        help="How each workload of the local backend (job and service replicas, kernels) is kept apart from the "
        "server and from other workloads: 'bwrap' runs it in a bubblewrap sandbox (its own process namespace; "
        "the host read-only; the server's runtime, configuration, store and work directories, /home, /root and "
        "other users' directories hidden; only its own folders, working directory and submitter's directory "
        "writable; see docs/jobs.md) and refuses to start without one; 'auto' does so where bubblewrap works, "
        "else runs workloads unsandboxed with a warning (a team or hub service then refuses to start unless "
        "allow_unsandboxed_workloads); 'none' never sandboxes.",
    )
    allow_unsandboxed_workloads = Bool(
        False, config=True,
        help="Let a server shared by several people (TeamIdentityProvider, or the hub's service) run workloads "
        "without a sandbox. RISK: every workload then runs as the server's own processes: any user's job can "
        "read other users' running jobs' credentials from /proc and act as them, read the server's token and "
        "store, and read or change every user's files the server's account can reach. Only for a machine whose "
        "users all trust each other.",
    )
    workloads_as_unix_accounts = Bool(
        False, config=True,
        help="Whether users are this machine's Unix accounts (a hub on one machine, its service running as "
        "root): each sandboxed workload then runs as its submitter's account (as Slurm runs jobs), which sees "
        "its own home; a user with no account, or a system account (uid below 1000), has their work refused "
        "with that reason. Needs the server to run as root and a sandbox.",
    )
    engine_class = Type(
        Engine, klass=Engine, config=True,
        help="The class of the scheduling engine, made with placement_policy and the preemption limits: each cycle's "
        "decisions over a snapshot. A subclass may decide otherwise; it runs in the engine process (engine_process), "
        "so it must be importable there and picklable.",
    )
    clock_class = Type(
        Clock, klass=Clock, config=True,
        help="The clocks the server reads: wall time for timestamps, monotonic time for every duration. "
        "Tests inject one whose wall time steps.",
    )
    audit_key_file = Unicode(
        config=True,
        help="File holding the key the audit chain is sealed with (an HMAC), made with mode 0600 at the first start. "
        "Defaults to jupyter_hetero_audit.key in Jupyter's runtime dir, which workloads cannot see. Keep it with "
        "the database: without it the chain's sealed entries cannot be verified.",
    )
    max_body_bytes = Int(
        4 << 20, config=True,
        help="Bytes a request body to the hetero API may have; a larger one is refused (413) before it is parsed. "
        "0 for no limit. Bodies over 64 KiB are parsed in a worker thread, never on the event loop.",
    )
    max_field_bytes = Int(
        1 << 20, config=True,
        help="Bytes one text value of a request body may have (a job's code, an env value, a parameter); a larger "
        "one is refused (413) naming the field. 0 for no limit.",
    )
    submissions_per_minute = Float(
        300.0, config=True,
        help="Submissions (jobs, kernels, services, resubmissions) a user may make per minute, after a burst of "
        "submission_burst; more are refused (429 with Retry-After), so that one user's loop cannot hold the "
        "server for everyone. The CLI and the Python client wait out a 429 and send again. The server's owner is "
        "not limited. 0 for no limit.",
    )
    submission_burst = Int(
        100, config=True, help="Submissions a user may make at once before submissions_per_minute applies.",
    )
    audit_anchor_file = Unicode(
        config=True,
        help="Append-only file the audit chain's head (entry id and hash) is written to after each entry, so that "
        "`jupyter hetero audit verify` sees entries deleted from the end of the log. Defaults to "
        "jupyter_hetero_audit_anchor.log in Jupyter's runtime dir; 'none' writes no file (the head still goes to "
        "the log and the metrics).",
    )

    @validate("preemption_limit")
    def _valid_preemption_limit(self, proposal) -> int:
        if proposal["value"] < 1:
            raise TraitError(f"preemption_limit must be at least 1, not {proposal['value']}")
        return proposal["value"]

    @validate("preemption_window")
    def _valid_preemption_window(self, proposal) -> float:
        if proposal["value"] < 0:
            raise TraitError(f"preemption_window must not be negative, not {proposal['value']}")
        return proposal["value"]

    @default("service_url")
    def _default_service_url(self) -> str:
        # Configured, or (a hub user's server) asked of the hub once, at start-up.
        return os.environ.get("JUPYTER_HETERO_SERVICE_URL") or find_service_url(os.environ)

    @default("mode")
    def _default_mode(self) -> str:
        return "hub-user" if self.service_url else "single-server"

    @default("owner_is_platform_admin")
    def _default_owner_is_platform_admin(self) -> bool:
        return self.mode != "service"

    @default("db_url")
    def _default_db_url(self) -> str:
        return default_db_url()

    @default("owner_name")
    def _default_owner_name(self) -> str:
        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return "owner"

    @default("audit_key_file")
    def _default_audit_key_file(self) -> str:
        return str(default_key_file())

    @default("audit_anchor_file")
    def _default_audit_anchor_file(self) -> str:
        return str(default_anchor_file())

    @default("backend_class")
    def _default_backend_class(self) -> str:
        return BACKEND_CLASSES[self.backend]

    @default("work_dir")
    def _default_work_dir(self) -> str:
        return str(Path(jupyter_data_dir()) / "hetero" / "work")

    def initialize_settings(self) -> None:
        if self.mode == "hub-user":
            forward_to_service(self)
            return
        platform = self.settings["hetero_platform"] = build_platform(self)
        web_settings = self.serverapp.web_app.settings
        web_settings["page_config_hook"] = hide_server_token_from_members(web_settings.get("page_config_hook"))
        guard_routes(self.serverapp, self.mode)  # members reach what the product gives them; the hub's service its API
        self.settings["hetero_body_limits"] = BodyLimits(body_bytes=self.max_body_bytes,
                                                         field_bytes=self.max_field_bytes)
        self.settings["hetero_submission_rate"] = SubmissionRate(
            per_minute=self.submissions_per_minute, burst=self.submission_burst, clock=platform.clock.monotonic)
        platform.kernels.attach(self.serverapp.kernel_manager)
        platform.kernels.register()
        self.log.info("jupyter-hetero: catalog=%s nodes=%d db=%s", self.catalog_file, len(platform.inventory.nodes()),
                      platform.repository.engine.url)

    def initialize_handlers(self) -> None:
        self.handlers.extend([*hub_kernel_handlers, *forward_handlers] if self.mode == "hub-user"
                             else [*default_handlers, *endpoint_handlers])
        if self.mode == "service":
            self.handlers.extend(service_handlers)  # where a browser signs in to the service

    async def _start_jupyter_server_extension(self, serverapp) -> None:
        # Reconcile with what survived a restart, and schedule, as soon as the server runs.
        if "hetero_platform" in self.settings:
            self.settings["hetero_platform"].loop.start()
        if "hetero_hub_kernels" in self.settings:
            self.settings["hetero_hub_kernels"].start_reporting()

    async def stop_extension(self) -> None:
        forget_failed_starts(self.serverapp.kernel_manager)
        platform = self.settings.get("hetero_platform")
        if platform is not None:
            await platform.close()
        if "hetero_hub_kernels" in self.settings:
            await self.settings["hetero_hub_kernels"].stop_reporting()

