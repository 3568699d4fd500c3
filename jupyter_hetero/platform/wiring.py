"""The platform: every service of one server, wired once and shared by the handlers."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from jupyter_server.base.call_context import CallContext

from ..__about__ import __version__
from ..auth import WorkloadUser, groups_of, hub_service_of, is_server_owner
from ..backends.base import Backend
from ..catalog import Catalog
from ..engine import Engine
from ..errors import Forbidden, HeteroError, InvalidRequest
from ..i18n import N_, Message
from ..store import SCHEMA_VERSION, Repository
from .access import Access
from .clock import Clock
from .governance.alerts import Alerts
from .governance.audit import AuditLog
from .governance.capacity_advice import CapacityPlanning
from .governance.catalog import CatalogViews
from .governance.evidence import EvidenceChains
from .governance.metrics import PlatformMetrics
from .governance.onboarding import OnboardingChecklist
from .governance.reload import CatalogReloads, record_catalog
from .governance.report import Reports
from .governance.usage import UsageLedger
from .identity import Identity, resolve_identity
from .kernels.servers import Servers
from .request_limits import ReportRate
from .live_catalog import LiveCatalog, ReadsLiveCatalog
from .kernels.service import Kernels
from .kernels.hub_kernels import HubKernelPlacements
from .scheduling.engine_process import EngineProcess
from .scheduling.inventory import Inventory
from .scheduling.loop import SchedulerLoop
from .scheduling.nodes import Nodes
from .scheduling.preview import Previews
from .scheduling.scheduler import Scheduler
from .serving.service import Services
from .workloads.credentials import DEFAULT_PASSTHROUGH, Credentials
from .workloads.interpreter import with_interpreter
from .workloads.metrics import WorkloadMetrics
from .workloads.schedules import Schedules
from .workloads.service import MAX_ARRAY_TASKS, Workloads

__all__ = ["Platform", "PlatformSettings"]


log = logging.getLogger(__name__)

@dataclass(frozen=True)
class PlatformSettings:
    """One server's plain settings, built from HeteroApp's traits in one place (``startup.platform_settings``)."""

    work_dir: Path  # job logs, outputs, checkpoints and archives
    root_dir: Path  # the server's root: where jobs' scripts and working directories are read
    mode: str = "single-server"
    user_root_template: str = ""  # the hub service: where each user's files are ("/home/{username}")
    platform_admins: frozenset[str] = frozenset()
    owner_is_platform_admin: bool = True
    owner: str = "owner"
    server_url: str | Callable[[], str] = ""  # a callable is read at each launch (see Credentials)
    server_token: str = ""
    workload_env_passthrough: tuple[str, ...] = DEFAULT_PASSTHROUGH
    interval_s: float = 2.0
    max_array_tasks: int = MAX_ARRAY_TASKS  # the most tasks one job array may have
    # Cycles run in a child process that must answer within this many seconds (see engine_process.py);
    # None runs them in this process, in the scheduler's thread.
    engine_process_timeout_s: float | None = None
    engine_process_start_s: float = 30.0  # a new child's allowance for its first answer, on top
    device_idle_pct: float = 5.0
    device_idle_after_s: float = 1800.0
    kernel_report_grace_s: float = 30.0
    alert_interval_s: float = 10.0
    metric_interval_s: float = 10.0  # between two stored samples of a running workload's measured figures
    metric_retention_s: float = 30 * 86400.0  # ended workloads' samples are kept this long; 0 keeps them all
    metric_reports_per_s: float = 5.0  # a workload's reports of its own figures, after a burst; 0: no limit
    metric_report_burst: int = 20
    alert_webhook: str = ""
    catalog_path: str = ""  # the file the catalog was read from, read again by a reload


def _as_is(error: HeteroError) -> Exception:
    """A refusal left as the domain error: a platform outside a server's Jupyter handlers (a test's)."""
    return error


class Platform(ReadsLiveCatalog):
    """What the handlers reach through ``self.platform``.

        platform = Platform(PlatformSettings(work_dir=work, root_dir=root), catalog=catalog,
                            repository=repository, inventory=inventory, backend=LocalBackend(), clock=Clock())
    """

    def __init__(self, settings: PlatformSettings, *, catalog: Catalog, repository: Repository,
                 inventory: Inventory, backend: Backend, clock: Clock, engine: Engine | None = None,
                 identity_provider: Any = None, stop_server: Callable[[str, str], Awaitable[None]] | None = None,
                 jupyter_error: Callable[[HeteroError], Exception] = _as_is,
                 inherited_environment: Mapping[str, str] | None = None,
                 fit_catalog: Callable[[Catalog], Catalog] | None = None) -> None:
        self.settings = settings
        # The one holder of the catalog the server runs with: every part reads it there (see live_catalog.py).
        self.live_catalog = LiveCatalog(catalog)
        catalog = self.live_catalog
        self.repository = repository
        self.inventory = inventory
        self.backend = backend
        self.clock = clock  # wall time for timestamps, monotonic time for durations
        self.engine = engine if engine is not None else Engine()
        # The server's identity provider: it decides who counts as the owner (see auth.is_server_owner).
        self.identity_provider = identity_provider
        self.access = Access(self.repository)
        self.audit = AuditLog(self.repository, self.access)
        inherited = os.environ if inherited_environment is None else inherited_environment
        self.credentials = Credentials(
            catalog=catalog, repository=self.repository, server_url=settings.server_url,
            inherited=inherited if self.backend.runs_here else {},
            passthrough=settings.workload_env_passthrough,
            server_secrets=(settings.server_token,),
        )
        self.scheduler = Scheduler(
            catalog=catalog, repository=self.repository, inventory=self.inventory, backend=self.backend,
            engine=self.engine, clock=self.clock, work_dir=settings.work_dir,
            metric_interval_s=settings.metric_interval_s, metric_retention_s=settings.metric_retention_s,
            engine_process=None if settings.engine_process_timeout_s is None
            else EngineProcess(self.engine, timeout_s=settings.engine_process_timeout_s,
                               start_s=settings.engine_process_start_s),
        )
        self.catalog_service = CatalogViews(catalog, self.scheduler.queue_status)
        self.metrics = PlatformMetrics(catalog=catalog, repository=self.repository, inventory=self.inventory,
                                       backend=self.backend, clock=self.clock,
                                       quota_use=self.catalog_service.tenant_usage)
        # In the hub's service, stop_server is how the hub stops a user's server (the idle rules cull it).
        self.kernels = Kernels(
            catalog=catalog, repository=self.repository, scheduler=self.scheduler, clock=self.clock,
            identify=self._kernel_requester, refusal=jupyter_error, wake=lambda: self.loop.wake(),
            server_url=settings.server_url,
            device_idle_pct=settings.device_idle_pct, device_idle_after_s=settings.device_idle_after_s,
            report_grace_s=settings.kernel_report_grace_s, stop_server=stop_server,
        )
        # Every process of a workload starts from this environment, which carries its own credential.
        self.scheduler.seal_environment = self.kernels.seal_environment = self._workload_environment
        self.loop = SchedulerLoop(self.scheduler, settings.interval_s, on_start=self.kernels.reconcile,
                                  after_tick=self._after_tick)
        self.backend.start(wake=self.loop.wake)  # a change in what the backend watches asks for a tick
        self.nodes = Nodes(inventory=self.inventory, backend=self.backend, access=self.access, wake=self.loop.wake)
        self.workloads = Workloads(
            catalog, self.repository, self.access, settings.root_dir,
            pending_info=self.scheduler.waiting, wake=self.loop.wake, user_root_template=settings.user_root_template,
            max_array_tasks=settings.max_array_tasks,
        )
        self.workload_metrics = WorkloadMetrics(catalog=self.live_catalog, repository=self.repository,
                                                access=self.access, clock=self.clock.wall,
                                                interval_s=settings.metric_interval_s,
                                                unmeasured=getattr(self.backend, "unmeasured", None),
                                                rate=ReportRate(per_second=settings.metric_reports_per_s,
                                                                burst=settings.metric_report_burst,
                                                                clock=self.clock.monotonic))
        self.previews = Previews(catalog=catalog, scheduler=self.scheduler, workloads=self.workloads,
                                 access=self.access)
        launched = {"catalog": catalog, "repository": self.repository, "workloads": self.workloads,
                    "clock": self.clock, "wake": self.loop.wake, "now": self.scheduler.times.now}
        # A server gets its credential from the hub; a kernel in a user's server, one for this server's API.
        self.servers = Servers(environment_of=self.scheduler.placed_environment,
                               reported=self.kernels.reported, **launched)
        self.hub_kernels = HubKernelPlacements(kernels=self.kernels, environment_of=self._hub_kernel_environment,
                                               **launched)
        self.usage = UsageLedger(catalog, self.repository, self.clock)
        self.capacity = CapacityPlanning(catalog=catalog, repository=self.repository, inventory=self.inventory,
                                         access=self.access, clock=self.clock)
        self.reports = Reports(catalog=catalog, repository=self.repository, inventory=self.inventory,
                               access=self.access, clock=self.clock, capacity=self.capacity.advise)
        self.evidence = EvidenceChains(repository=self.repository, access=self.access, clock=self.clock)
        self.alerts = Alerts(catalog=catalog, repository=self.repository, inventory=self.inventory,
                             clock=self.clock, quota_use=self.catalog_service.tenant_usage,
                             device_memory=self.scheduler.monitor.device_memory, webhook=settings.alert_webhook,
                             interval_s=settings.alert_interval_s)
        self.onboarding = OnboardingChecklist(
            catalog=catalog, repository=self.repository, inventory=self.inventory, backend=self.backend,
            access=self.access, identify=lambda user, groups, owner=False: self.identify(user, groups, owner=owner),
            may_submit=self.workloads.check_access, metrics_nodes=self._metric_nodes, work_dir=settings.work_dir,
            wake=self.loop.wake)
        self.onboarding.attach()
        record_catalog(self.repository, self.catalog, settings.catalog_path)
        self.reloads = CatalogReloads(
            live=self.live_catalog, repository=self.repository, inventory=self.inventory,
            held=lambda: self.scheduler.queue_status().held_by_tenant(),
            set_live={"onboarding": self._set_onboarding, "alerts": self._set_alerts},
            live_now=lambda section: self.onboarding.rules if section == "onboarding" else self.alerts.rules,
            wake=self.loop.wake, ticking=lambda: self.loop.started,
            prepare=fit_catalog or (lambda fresh: fresh), unusable=self._unwatched_tenants)
        self._catalog_stamp: tuple[int, int] | None = None  # the catalog file's (mtime, size) as last read
        self._reloading: asyncio.Future | None = None
        self.serving = Services(catalog=catalog, repository=self.repository, workloads=self.workloads,
                                clock=self.clock, wake=self.loop.wake, address_of=self.scheduler.monitor.address,
                                usage_of=self.scheduler.monitor.usage)
        # Each run of a schedule is submitted as its owner, found as a request of theirs would find them.
        self.schedules = Schedules(catalog=catalog, repository=self.repository, workloads=self.workloads,
                                   access=self.access, clock=self.clock,
                                   person=lambda user, groups: self.identify(user, groups,
                                                                             owner=user == self.owner))

    @property
    def mode(self) -> str:
        return self.settings.mode

    @property
    def owner(self) -> str:
        return self.settings.owner

    @property
    def backend_name(self) -> str:
        return self.backend.name

    def version(self, identity: Identity) -> dict[str, Any]:
        """The server's version, mode, backend and database: a small answer anyone asks first."""
        return {
            "version": __version__,
            "api": "v1",
            "mode": self.mode,
            "backend": self.backend_name,
            "schema_version": SCHEMA_VERSION,
            "database": self.repository.engine.dialect.name,
        }

    def scheduler_ticks(self, identity: Identity) -> dict[str, Any]:
        """The scheduling loop's ticks, wake-ups and recent tick timings (platform admins, like the metrics)."""
        self.access.require_platform_admin(identity, "scheduler.ticks", "scheduler")
        return self.loop.stats()

    def identify(self, user: str, groups: frozenset[str] = frozenset(), *, owner: bool = False) -> Identity:
        admins = self.settings.platform_admins | ({user} if owner and self.settings.owner_is_platform_admin else set())
        return resolve_identity(self.catalog, user, groups, frozenset(admins), owner=owner)

    def identity_of(self, user, handler=None) -> Identity:
        """Who the authenticated user of a request (``handler``) is to the scheduler.

        A workload credential is its submitter with its narrow rights; a JupyterHub service's token is
        no one (403), whatever its name; the server's owner goes by one stable name (``owner``); anyone
        else by the name their identity provider gives them."""
        if isinstance(user, WorkloadUser):
            return self.credentials.identity(user=user.username, tenant=user.tenant, workload_id=user.workload_id)
        if (service := hub_service_of(user)) is not None:
            raise Forbidden(Message(N_("hub service {service!r} is not a user: the hetero API acts for people, each "
                                       "in a tenant; call it with a user's token"), service=service),
                            reason="hub-service")
        owner = is_server_owner(self.identity_provider, user, handler)
        return self._identify_audited(self.owner if owner else user.username, groups_of(user), owner, handler)

    def _identify_audited(self, name: str, groups: frozenset[str], owner: bool, handler) -> Identity:
        """:meth:`identify`, a user in no tenant refused as a denial like any other: in the audit log."""
        try:
            return self.identify(name, groups, owner=owner)
        except Forbidden as refusal:
            if refusal.detail.get("reason") == "no-tenant":
                action, target = _attempt(handler)
                self.access.record_stranger(name, action, target, refusal, read=action.startswith(("GET ", "HEAD ")))
            raise

    def _kernel_requester(self, user: str | None, groups: tuple[str, ...]) -> Identity:
        """Who asked for a kernel: the user of the request that starts it (``/api/kernels``,
        ``/api/sessions`` or the hetero API), which jupyter_server keeps in its call context; a start
        with no request behind it is the server's own, its owner's."""
        handler = CallContext.get(CallContext.JUPYTER_HANDLER)
        current = getattr(handler, "current_user", None)
        if current is not None:
            return self.identity_of(current, handler)  # a refusal is answered as its handler's (Kernels)
        return self._identify_audited(user or self.owner, frozenset(groups), user is None, None)

    def _workload_environment(self, row, env: dict[str, str]) -> dict[str, str]:
        # The submitter's interpreter first on the PATH: `python` in a job is the one they submitted from.
        return with_interpreter(self.credentials.environment(row.id, env), (row.spec or {}).get("python"))

    def _hub_kernel_environment(self, row) -> dict[str, str]:
        # The user's server adds its own base environment; this one's (paths, home) means nothing there.
        return self.credentials.environment(row.id, self.scheduler.placed_environment(row), inherit=False)

    async def close(self) -> None:
        """Stop ticking, end the engine process, close the store: the server's stop."""
        await self.loop.stop()
        await asyncio.get_running_loop().run_in_executor(None, self.scheduler.close)
        await asyncio.get_running_loop().run_in_executor(None, self.backend.close)
        self.repository.close()

    def reload_catalog(self, identity: Identity) -> dict[str, Any]:
        """Read the catalog file again: onboarding and alerts apply at once, the rest at the next tick; each change
        is audited with the reloading admin as its actor (see governance/reload.py)."""
        self.access.require_platform_admin(identity, "catalog.reload", "catalog")
        self._catalog_stamp = _stamp(self.settings.catalog_path)
        answer = self.reloads.reload(self.settings.catalog_path, actor=identity.user)
        self.access.record(identity, "catalog.applied", "catalog",
                           {"applied": answer["applied"], "changes": len(answer["changes"]),
                            "catalog_version": answer["version"]})
        return answer

    def _watch_catalog(self) -> None:
        """A change of the catalog file is a reload, as the API's (one look at its size and time per tick)."""
        if not self.settings.catalog_path or self._reloading is not None and not self._reloading.done():
            return
        stamp = _stamp(self.settings.catalog_path)
        if self._catalog_stamp is None:
            self._catalog_stamp = stamp
        elif stamp is not None and stamp != self._catalog_stamp:
            self._catalog_stamp = stamp
            self._reloading = asyncio.ensure_future(asyncio.to_thread(self._reload_from_file))

    def _reload_from_file(self) -> None:
        """Onboarding and alerts only: a change of who may do what waits for a platform admin's reload, which
        audits who made it."""
        try:
            applied = self.reloads.reload_live_sections(self.settings.catalog_path)
        except InvalidRequest as exc:
            log.warning("jupyter-hetero: the changed catalog file was not applied: %s", exc.message)
            return
        self.repository.record_audit(actor="server", action="catalog.applied", target="catalog", outcome="done",
                                     detail={"applied": applied, "because": "the file changed"})

    def _unwatched_tenants(self, catalog: Catalog) -> list[str]:
        """Tenants whose namespace the backend does not watch (Kubernetes, a namespace per tenant: the watched ones
        are fixed at start), so whose pods it could not see."""
        namespaces = getattr(self.backend, "namespaces", None)
        config = getattr(self.backend, "config", None)
        if self.backend.name != "kubernetes" or not getattr(config, "per_tenant", False) or namespaces is None:
            return []
        return [f"tenant {tenant.name}: its namespace {config.namespace_for(tenant.name)} is not watched by this "
                "server (namespaces per tenant are set at start); add it with a restart"
                for tenant in catalog.tenants if config.namespace_for(tenant.name) not in namespaces]

    def _set_onboarding(self, rules) -> None:
        self.onboarding.set_rules(rules)
        self.loop.wake()

    def _set_alerts(self, rules) -> None:
        self.alerts.rules = rules

    def _metric_nodes(self) -> set[str]:
        return {sample.labels["node"] for family in self.metrics.node_families()
                if family.name == "hetero_node_devices" for sample in family.samples}

    def _after_tick(self, now: float) -> None:
        try:
            self.serving.reconcile()
            self.serving.probe()
            self.kernels.sweep(now)
            self.workloads.end_orphaned_follow_ups(self.clock.wall())  # nothing a credential creates outlives it
            self.schedules.tick()
            self.alerts.tick()
            self.onboarding.tick()
            self._watch_catalog()
        finally:
            self.credentials.revoke_ended()  # explicit revocation; every use also checks the workload's state


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def _attempt(handler) -> tuple[str, str]:
    """What a refused request tried, for the audit: its method and API path (``POST workloads``), and the path."""
    request = getattr(handler, "request", None)
    if request is None:
        return "kernel.start", "kernel"
    path = unquote(request.path)
    if "/hetero/api/v1/" in path:
        path = path.split("/hetero/api/v1/", 1)[1]
    else:  # one of Jupyter's own routes (a hetero kernel started by POST /api/kernels or /api/sessions)
        path = path.removeprefix(unquote(getattr(handler, "base_url", "/")))
    path = path.strip("/") or request.path
    return f"{request.method} {path}", path

