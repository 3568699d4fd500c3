"""HeteroApp: the jupyter-server extension. Traits and wiring only; behaviour lives in services."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from jupyter_core.paths import jupyter_config_dir, jupyter_data_dir
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

from .auth import TeamIdentityProvider, hide_server_token_from_members
from .authorizer import guard_routes
from .backends.base import NodesSeen
from .backends.local import discover_local_node, load_emulated_nodes
from .backends.local.isolation import (
    WorkloadIsolation,
    accelerator_device_nodes,
    find_sandbox,
    interpreter_paths,
    store_files,
)
from .backends.local.processes import LocalBackend
from .capability import NodeCapability
from .catalog import DEFAULT_CATALOG_PATH, Catalog, load_catalog
from .catalog.fit import DEFAULT_SHARE, fit_to_machine
from .engine import Engine, Policy
from .engine.fragmentation import typical_mix
from .engine.scoring import FragmentationScorer, shape_of
from .engine_inputs import engine_request
from .handlers import default_handlers, endpoint_handlers, service_handlers
from .handlers.forward import HubService, find_service_url, forward_handlers
from .handlers.hub_kernels import hub_kernel_handlers
from .kernel.hub_kernels import HubKernels
from .services.clock import Clock
from .services.credentials import DEFAULT_PASSTHROUGH
from .services.hub_api import HubApi
from .services.inventory import Inventory
from .services.platform import Platform
from .services.request_limits import BodyLimits, SubmissionRate
from .store import Repository, default_db_url
from .store.audit_seal import AuditSeal, default_anchor_file, default_key_file, load_key

__all__ = ["HeteroApp"]


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
        LocalBackend, config=True, help="The class of the local backend (tests and embedders may replace it)."
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

    @default("work_dir")
    def _default_work_dir(self) -> str:
        return str(Path(jupyter_data_dir()) / "hetero" / "work")

    def initialize_settings(self) -> None:
        if self.mode == "hub-user":
            self._forward_to_service()
            return
        backend = self._backend()
        if backend.name == "local":
            backend.isolation = self._workload_isolation()
            seen = NodesSeen(self._node_capabilities(), {})
        else:
            backend.start()  # the first lists of the cluster's nodes and our pods
            seen = backend.poll_nodes()
        capabilities = seen.capabilities
        clock = self.clock_class()
        catalog = self._fit_defaults(load_catalog(self.catalog_file), capabilities)
        anchor = None if self.audit_anchor_file.lower() == "none" else Path(self.audit_anchor_file)
        seal = AuditSeal(load_key(Path(self.audit_key_file)), anchor_file=anchor)
        repository = Repository(self.db_url, clock=clock.wall, seal=seal)
        repository.seal_audit_chain()
        if backend.name == "kubernetes" and backend.config.per_tenant:
            backend.namespaces = tuple(sorted({backend.config.namespace_for(t.name) for t in catalog.tenants}))
        inventory = Inventory(catalog, repository)
        inventory.refresh(seen.capabilities, seen.states, seen.held)
        self.settings["hetero_platform"] = Platform(
            catalog=catalog,
            repository=repository,
            inventory=inventory,
            backend=backend,
            mode=self.mode,
            user_root_template=self.user_root_template,
            clock=clock,
            work_dir=Path(self.work_dir),
            root_dir=Path(self.serverapp.root_dir),
            engine=self._engine(catalog),
            engine_process_timeout_s=self.engine_process_timeout if self.engine_process else None,
            engine_process_start_s=self.engine_process_start_timeout,
            interval_s=self.schedule_interval,
            platform_admins=frozenset(self.platform_admins),
            owner_is_platform_admin=self.owner_is_platform_admin,
            owner=self.owner_name,
            # Read at each launch: the port is bound (and moved on when taken) only after extensions load.
            server_url=lambda: getattr(backend, "server_url", "") or self.serverapp.connection_url,
            server_token=self.serverapp.identity_provider.token,
            device_idle_pct=self.cull_device_idle_pct,
            device_idle_after_s=self.cull_device_idle_after,
            kernel_report_grace_s=self.kernel_report_grace,
            alert_interval_s=self.alert_interval,
            catalog_path=self.catalog_file,
            alert_webhook=self.alert_webhook,
            stop_server=self._hub_stop_server(),
            identity_provider=self.serverapp.identity_provider,
            workload_env_passthrough=tuple(self.workload_env_passthrough),
        )
        web_settings = self.serverapp.web_app.settings
        web_settings["page_config_hook"] = hide_server_token_from_members(web_settings.get("page_config_hook"))
        guard_routes(self.serverapp, self.mode)  # members reach what the product gives them; the hub's service its API
        platform = self.settings["hetero_platform"]
        self.settings["hetero_body_limits"] = BodyLimits(body_bytes=self.max_body_bytes,
                                                         field_bytes=self.max_field_bytes)
        self.settings["hetero_submission_rate"] = SubmissionRate(
            per_minute=self.submissions_per_minute, burst=self.submission_burst, clock=clock.monotonic)
        platform.kernels.attach(self.serverapp.kernel_manager)
        platform.kernels.register()
        self.log.info(
            "jupyter-hetero: catalog=%s nodes=%d db=%s", self.catalog_file, len(inventory.nodes()), repository.engine.url
        )

    def _engine(self, catalog) -> Engine:
        damping = {"preemption_limit": self.preemption_limit, "preemption_window_s": self.preemption_window}
        if self.placement_policy != Policy.FRAGMENTATION:
            return Engine(policy=self.placement_policy, **damping)
        # Fragmentation is measured against what the platform's templates ask for by default, each
        # on its eligible flavors; the engine learns the GPU models behind them from the inventory.
        typical = typical_mix(
            shape_of(engine_request(t.request.model_dump()), flavors=t.flavors) for t in catalog.templates
        )
        return Engine(policy=self.placement_policy, node_scorer=FragmentationScorer(typical), **damping)

    def _backend(self):
        if self.backend != "kubernetes":
            return self.backend_class()
        from .backends.kubernetes.backend import KubernetesBackend  # the client loads only when used
        from .backends.kubernetes.config import KubernetesConfig

        if self.emulated_nodes or self.emulated_nodes_file:
            self.log.warning("jupyter-hetero: emulated nodes are ignored by the kubernetes backend")
        return KubernetesBackend(config=KubernetesConfig(parent=self), work_dir=self.work_dir)

    def _workload_isolation(self) -> WorkloadIsolation | None:
        """The local backend's sandbox; a shared server without one refuses to start unless the admin opts out."""
        tools, problem = find_sandbox() if self.sandbox != "none" else (None, "HeteroApp.sandbox is 'none'")
        if tools is None:
            shared = self.mode == "service" or isinstance(self.serverapp.identity_provider, TeamIdentityProvider)
            if self.sandbox == "bwrap" or self.workloads_as_unix_accounts or (shared and not self.allow_unsandboxed_workloads):
                self.log.critical(
                    "jupyter-hetero: refusing to start: workloads cannot be sandboxed (%s). Install bubblewrap "
                    "(make sandbox), or, on a server whose users all trust each other, set "
                    "HeteroApp.allow_unsandboxed_workloads = True", problem)
                raise SystemExit(1)
            self.log.warning(
                "jupyter-hetero: workloads run UNSANDBOXED (%s): each job and kernel runs as this server's own "
                "processes and can read other workloads' credentials, this server's token and store, and every "
                "file this account can%s", problem, "; allowed by HeteroApp.allow_unsandboxed_workloads" if shared else "")
            return None
        if self.workloads_as_unix_accounts and os.geteuid() != 0:
            self.log.critical("jupyter-hetero: refusing to start: HeteroApp.workloads_as_unix_accounts needs the "
                              "server to run as root, to run workloads as their submitters' accounts")
            raise SystemExit(1)
        files = store_files(self.db_url)
        server_dirs = [self.serverapp.runtime_dir, self.serverapp.config_dir, jupyter_config_dir(), self.work_dir,
                       *({str(files[0].parent)} if files else ())]
        return WorkloadIsolation(
            server_dirs=tuple(Path(d).resolve() for d in server_dirs if d), root_dir=Path(self.serverapp.root_dir),
            user_root_template=self.user_root_template, owner=self.owner_name,
            unix_accounts=self.workloads_as_unix_accounts, store_files=files, tools=tools,
            interpreter=interpreter_paths(), devices=accelerator_device_nodes(),
        )

    def _fit_defaults(self, catalog: Catalog, capabilities: list[NodeCapability]) -> Catalog:
        """On this machine alone, template defaults shrink to fit it (see catalog/fit.py)."""
        if (self.backend != "local" or not capabilities or any(c.emulated for c in capabilities)
                or not self.local_default_share):
            return catalog
        largest = max(capabilities, key=lambda c: (c.cpu_milli, c.memory_mib))
        self.log.info("jupyter-hetero: this machine is the whole inventory; template defaults fit %s", largest.name)
        return fit_to_machine(catalog, largest, self.local_default_share)

    def _node_capabilities(self) -> list[NodeCapability]:
        nodes = [discover_local_node(self.local_node_name or None)] if self.discover_local else []
        if self.emulated_nodes_file:
            nodes += load_emulated_nodes(self.emulated_nodes_file)
        if self.emulated_nodes:
            nodes += load_emulated_nodes(list(self.emulated_nodes))
        return nodes

    def _hub_stop_server(self):
        """In the hub's service, how the idle rules stop a user's server: through the hub's API."""
        hub = HubApi.from_environ(os.environ) if self.mode == "service" else None
        return hub.stop_server if hub is not None else None

    def _forward_to_service(self) -> None:
        token = os.environ.get("JUPYTERHUB_API_TOKEN", "")
        if not self.service_url or not token:
            raise TraitError("HeteroApp.mode 'hub-user' needs service_url (or $JUPYTER_HETERO_SERVICE_URL) and the "
                             "server's hub token $JUPYTERHUB_API_TOKEN")
        service = self.settings["hetero_service"] = HubService(self.service_url, token,
                                                                 retry_seconds=self.service_retry_seconds)
        # Its kernels run here, placed by the service; only this server's passthrough variables reach them.
        kernels = self.settings["hetero_hub_kernels"] = HubKernels(
            service, passthrough=self.workload_env_passthrough, environ=os.environ,
            last_activity=self.serverapp.web_app.last_activity)
        kernels.attach(self.serverapp.kernel_manager)
        kernels.register()
        self.log.info("jupyter-hetero: every hetero API call goes to the hub's service at %s", self.service_url)

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


def forget_failed_starts(kernel_manager) -> list[str]:
    """Drop the kernels whose start failed from the manager's pending ones; the ids dropped.

    jupyter_client keeps a kernel whose start raised among its pending kernels for good (it pops one only once
    started), and the server's shutdown then asks to stop it, is told it does not exist, and never finishes: the
    server hangs on SIGTERM. A hetero kernel's start fails whenever it gets no placement, so the server forgets
    them before it stops its kernels (extensions stop first).
    """
    pending = getattr(kernel_manager, "_pending_kernels", None)
    if not isinstance(pending, dict):
        return []
    failed = [kernel_id for kernel_id, task in pending.items()
              if kernel_id not in kernel_manager and getattr(task, "done", lambda: False)()]
    for kernel_id in failed:
        pending.pop(kernel_id, None)
    return failed
