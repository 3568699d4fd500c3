"""What HeteroApp builds when the server starts, from its traits: the backend, the platform and what it is given.

    platform = build_platform(app)        # a server with its own scheduler (single-server, or the hub's service)
    forward_to_service(app)               # a hub user's server: every hetero call goes to the hub's service
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from jupyter_core.paths import jupyter_config_dir
from tornado import web
from traitlets import TraitError
from traitlets.config import Configurable

from .auth import TeamIdentityProvider
from .backends.base import Backend, NodesSeen
from .backends.local import discover_local_node, load_emulated_nodes
from .backends.local.isolation import (
    WorkloadIsolation,
    accelerator_device_nodes,
    find_sandbox,
    interpreter_paths,
    store_files,
)
from .capability import NodeCapability
from .catalog import Catalog, load_catalog
from .catalog.fit import fit_to_machine
from .engine import Engine, Policy
from .engine.fragmentation import typical_mix
from .engine.scoring import FragmentationScorer, shape_of
from .engine_inputs import engine_request
from .errors import HeteroError
from .handlers.forward import HubService
from .kernel.hub_kernels import HubKernels
from .platform.kernels.hub_api import HubApi
from .platform.wiring import Platform, PlatformSettings
from .platform.scheduling.inventory import Inventory
from .store import Repository
from .store.audit_seal import AuditSeal, load_key

if TYPE_CHECKING:
    from .app import HeteroApp

__all__ = ["build_engine", "build_platform", "forget_failed_starts", "forward_to_service", "platform_settings"]


def build_platform(app: HeteroApp) -> Platform:
    """Every service of a server with a scheduler, over the backend, catalog and store its traits name."""
    backend = _make_backend(app)
    if backend.name == "local":
        backend.isolation = _workload_isolation(app)
        seen = NodesSeen(_local_nodes(app), {})
    else:
        backend.start()  # the first lists of the nodes it discovers (the cluster's) and of what it runs there
        seen = backend.poll_nodes() or NodesSeen([], {})
    clock = app.clock_class()
    catalog = _fit_defaults(app, backend, load_catalog(app.catalog_file), seen.capabilities)
    anchor = None if app.audit_anchor_file.lower() == "none" else Path(app.audit_anchor_file)
    seal = AuditSeal(load_key(Path(app.audit_key_file)), anchor_file=anchor)
    repository = Repository(app.db_url, clock=clock.wall, seal=seal)
    repository.seal_audit_chain()
    if backend.name == "kubernetes" and backend.config.per_tenant:
        backend.namespaces = tuple(sorted({backend.config.namespace_for(t.name) for t in catalog.tenants}))
    inventory = Inventory(catalog, repository)
    inventory.refresh(seen.capabilities, seen.states, seen.held)
    return Platform(
        platform_settings(app, backend), catalog=catalog, repository=repository, inventory=inventory,
        backend=backend, clock=clock, engine=build_engine(app, catalog),
        identity_provider=app.serverapp.identity_provider, stop_server=_hub_stop_server(app),
        jupyter_error=_http_error,
        # A reload's catalog is prepared as the start's was: on this machine alone, its defaults fit the machine.
        fit_catalog=lambda fresh: _fit_defaults(app, backend, fresh, seen.capabilities),
    )


def platform_settings(app: HeteroApp, backend: Backend) -> PlatformSettings:
    """The platform's plain settings from the app's traits (and the server's): the one place they are read."""
    serverapp = app.serverapp
    return PlatformSettings(
        work_dir=Path(app.work_dir),
        root_dir=Path(serverapp.root_dir),
        mode=app.mode,
        user_root_template=app.user_root_template,
        platform_admins=frozenset(app.platform_admins),
        owner_is_platform_admin=app.owner_is_platform_admin,
        owner=app.owner_name,
        # Read at each launch: the port is bound (and moved on when taken) only after extensions load.
        server_url=lambda: getattr(backend, "server_url", "") or serverapp.connection_url,
        server_token=serverapp.identity_provider.token,
        workload_env_passthrough=tuple(app.workload_env_passthrough),
        interval_s=app.schedule_interval,
        max_array_tasks=app.max_array_tasks,
        engine_process_timeout_s=app.engine_process_timeout if app.engine_process else None,
        engine_process_start_s=app.engine_process_start_timeout,
        device_idle_pct=app.cull_device_idle_pct,
        device_idle_after_s=app.cull_device_idle_after,
        kernel_report_grace_s=app.kernel_report_grace,
        alert_interval_s=app.alert_interval,
        metric_interval_s=app.metric_interval_s,
        metric_retention_s=app.metric_retention_s,
        metric_reports_per_s=app.metric_reports_per_s,
        metric_report_burst=app.metric_report_burst,
        alert_webhook=app.alert_webhook,
        catalog_path=app.catalog_file,
    )


def build_engine(app: HeteroApp, catalog: Catalog) -> Engine:
    """The app's ``engine_class`` with its placement policy and preemption damping."""
    damping = {"preemption_limit": app.preemption_limit, "preemption_window_s": app.preemption_window}
    if app.placement_policy != Policy.FRAGMENTATION:
        return app.engine_class(policy=app.placement_policy, **damping)
    # Fragmentation is measured against what the platform's templates ask for by default, each
    # on its eligible flavors; the engine learns the GPU models behind them from the inventory.
    typical = typical_mix(
        shape_of(engine_request(t.request.model_dump()), flavors=t.flavors) for t in catalog.templates
    )
    return app.engine_class(policy=app.placement_policy, node_scorer=FragmentationScorer(typical), **damping)


def _make_backend(app: HeteroApp) -> Backend:
    """An instance of ``backend_class``, made as its kind (its ``name``) is: a Kubernetes backend from
    KubernetesConfig; this machine's with no arguments; any other with the app as its traitlets parent
    when it is configurable (``c.MyBackend.x = ...``)."""
    cls = app.backend_class
    kind = getattr(cls, "name", None)
    if kind != "local" and (app.emulated_nodes or app.emulated_nodes_file):
        app.log.warning("jupyter-hetero: emulated nodes are ignored by the %s backend", kind)
    if kind == "kubernetes":
        from .backends.kubernetes.config import KubernetesConfig  # the client loads only when used

        return cls(config=KubernetesConfig(parent=app), work_dir=app.work_dir)
    if kind != "local" and issubclass(cls, Configurable):
        return cls(parent=app)
    return cls()


def _workload_isolation(app: HeteroApp) -> WorkloadIsolation | None:
    """The local backend's sandbox; a shared server without one refuses to start unless the admin opts out."""
    tools, problem = find_sandbox() if app.sandbox != "none" else (None, "HeteroApp.sandbox is 'none'")
    if tools is None:
        shared = app.mode == "service" or isinstance(app.serverapp.identity_provider, TeamIdentityProvider)
        if app.sandbox == "bwrap" or app.workloads_as_unix_accounts or (shared and not app.allow_unsandboxed_workloads):
            app.log.critical(
                "jupyter-hetero: refusing to start: workloads cannot be sandboxed (%s). Install bubblewrap "
                "(make sandbox), or, on a server whose users all trust each other, set "
                "HeteroApp.allow_unsandboxed_workloads = True", problem)
            raise SystemExit(1)
        app.log.warning(
            "jupyter-hetero: workloads run UNSANDBOXED (%s): each job and kernel runs as this server's own "
            "processes and can read other workloads' credentials, this server's token and store, and every "
            "file this account can%s", problem, "; allowed by HeteroApp.allow_unsandboxed_workloads" if shared else "")
        return None
    if app.workloads_as_unix_accounts and os.geteuid() != 0:
        app.log.critical("jupyter-hetero: refusing to start: HeteroApp.workloads_as_unix_accounts needs the "
                         "server to run as root, to run workloads as their submitters' accounts")
        raise SystemExit(1)
    serverapp = app.serverapp
    files = store_files(app.db_url)
    server_dirs = [serverapp.runtime_dir, serverapp.config_dir, jupyter_config_dir(), app.work_dir,
                   *({str(files[0].parent)} if files else ())]
    return WorkloadIsolation(
        server_dirs=tuple(Path(d).resolve() for d in server_dirs if d), root_dir=Path(serverapp.root_dir),
        user_root_template=app.user_root_template, owner=app.owner_name,
        unix_accounts=app.workloads_as_unix_accounts, store_files=files, tools=tools,
        interpreter=interpreter_paths(), devices=accelerator_device_nodes(),
    )


def _fit_defaults(app: HeteroApp, backend: Backend, catalog: Catalog,
                  capabilities: list[NodeCapability]) -> Catalog:
    """On this machine alone, template defaults shrink to fit it (see catalog/fit.py)."""
    if (backend.name != "local" or not capabilities or any(c.emulated for c in capabilities)
            or not app.local_default_share):
        return catalog
    largest = max(capabilities, key=lambda c: (c.cpu_milli, c.memory_mib))
    app.log.info("jupyter-hetero: this machine is the whole inventory; template defaults fit %s", largest.name)
    return fit_to_machine(catalog, largest, app.local_default_share)


def _local_nodes(app: HeteroApp) -> list[NodeCapability]:
    """This machine (unless not discovered) and the emulated nodes: the local backend's inventory."""
    nodes = [discover_local_node(app.local_node_name or None)] if app.discover_local else []
    if app.emulated_nodes_file:
        nodes += load_emulated_nodes(app.emulated_nodes_file)
    if app.emulated_nodes:
        nodes += load_emulated_nodes(list(app.emulated_nodes))
    return nodes


def _hub_stop_server(app: HeteroApp):
    """In the hub's service, how the idle rules stop a user's server: through the hub's API."""
    hub = HubApi.from_environ(os.environ) if app.mode == "service" else None
    return hub.stop_server if hub is not None else None


def _http_error(error: HeteroError) -> web.HTTPError:
    """A refusal as Jupyter's own kernels and sessions handlers answer it (they know no domain errors)."""
    return web.HTTPError(error.status, error.message)


def forward_to_service(app: HeteroApp) -> None:
    """A hub user's server: no platform, every hetero call passed to the hub's service, its kernels placed there."""
    token = os.environ.get("JUPYTERHUB_API_TOKEN", "")
    if not app.service_url or not token:
        raise TraitError("HeteroApp.mode 'hub-user' needs service_url (or $JUPYTER_HETERO_SERVICE_URL) and the "
                         "server's hub token $JUPYTERHUB_API_TOKEN")
    service = app.settings["hetero_service"] = HubService(app.service_url, token,
                                                            retry_seconds=app.service_retry_seconds)
    # Its kernels run here, placed by the service; only this server's passthrough variables reach them.
    kernels = app.settings["hetero_hub_kernels"] = HubKernels(
        service, passthrough=app.workload_env_passthrough, environ=os.environ,
        last_activity=app.serverapp.web_app.last_activity)
    kernels.attach(app.serverapp.kernel_manager)
    kernels.register()
    app.log.info("jupyter-hetero: every hetero API call goes to the hub's service at %s", app.service_url)


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
