"""Kernels as workloads: placement before launch, release on shutdown, idle culling (culling.py), usage.

The kernel provisioner (in this server's process) calls :func:`current_kernels` to reach this
service. A kernel workload is admitted by the same engine cycle as jobs; the provisioner, not the
backend, starts its process once it has a placement.

One culler acts on a kernel. jupyter_server's (``MappingKernelManager.cull_idle_timeout``) goes on
culling plain kernels by its own settings; it leaves hetero kernels to :meth:`Kernels.sweep`
(the idle rules, culling.py), which culls them by their template's idle timeout (the server's
``cull_idle_timeout`` where the template has none), with a warning first and a reason on the workload,
and by device utilisation. Dead hetero kernels are still reaped by jupyter_server's culler: that is
cleanup, not an idle rule.

A kernel in a hub user's server (see hub_kernels.py) is placed here and run there: that server reports
its kernels' activity every few seconds, the same rules decide here, and a stop goes back to it in the
answer to its next report. One it stops reporting (the server ended or cannot reach the service) is
released after a grace period. The same server reports its own activity: a hub user's server (a
``server`` workload) idle past its template's idle timeout, or whose measured devices sit idle, is
stopped through the hub (``stop_server``), whose spawner then gives its devices back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ...backends.base import Placed
from ...catalog import Catalog, WorkloadKind
from ...engine import render
from ...engine_inputs import placement_from_json
from ...errors import HeteroError, NotFound
from ...i18n import N_, Message
from ...store import ACTIVE_STATES, INADMISSIBLE, PENDING_STATES, QUEUED_STATES, Repository
from ...store.tables import WorkloadRow
from ..access import Access
from ..clock import Clock
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..scheduling.scheduler import Scheduler
from ..workloads.enqueue import Checked, Enqueuer
from .culling import IdleRules, ReportedKernel, in_user_server
from .usage import kernel_usage

__all__ = ["Kernels", "KernelWaitTimeout", "current_kernels", "is_hetero", "take_over_culling", "use_kernels"]

log = logging.getLogger(__name__)

# How often a waiting kernel start looks at its workload again.
WAIT_POLL_S = 0.1

_current: dict[str, Any] = {}


class KernelWaitTimeout(RuntimeError):
    """A kernel could not be placed in time; the message says what blocks it and its ETA, in English (``str``) or in
    any language (``message.text("zh")``): the route that started the kernel answers it in the caller's."""

    def __init__(self, message: Message):
        super().__init__(message.text("en"))
        self.message = message


class _Blockers(Message):
    """The first blockers of a waiting workload, in the reader's language."""

    def __init__(self, blockers):
        super().__init__(N_("not scheduled yet"))
        self.blockers = blockers

    def text(self, language: str = "en") -> str:
        return "; ".join(render(b, language) for b in self.blockers) if self.blockers else super().text(language)


def current_kernels():
    """Whoever places this server's hetero kernels: its own Kernels, or in a hub user's server the
    hub's service (kernel/hub_kernels.py)."""
    try:
        return _current["service"]
    except KeyError:
        raise RuntimeError(
            "the hetero kernel provisioner needs the jupyter_hetero server extension, which is not loaded here"
        ) from None


def use_kernels(placer) -> None:
    _current["service"] = placer


def take_over_culling(kernel_manager) -> None:
    """Leave idle hetero kernels to the hetero rules; jupyter_server's culler keeps the others (and the dead)."""
    standard = kernel_manager.cull_kernel_if_idle

    # On the instance, not a subclass: the server's kernel_manager_class stays the site's choice.
    async def cull_kernel_if_idle(kernel_id: str) -> None:
        kernel = kernel_manager.get_kernel(kernel_id) if kernel_id in kernel_manager else None
        if is_hetero(kernel) and getattr(kernel, "execution_state", None) != "dead":
            return  # the hetero sweep decides for this one
        await standard(kernel_id)

    kernel_manager.cull_kernel_if_idle = cull_kernel_if_idle


class Kernels(ReadsLiveCatalog, IdleRules):
    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, scheduler: Scheduler,
                 clock: Clock, identify: Callable[[str | None, tuple[str, ...]], Identity],
                 wake: Callable[[], None], server_url: str = "", server_token: str = "",
                 device_idle_pct: float = 5.0, device_idle_after_s: float = 1800.0, report_grace_s: float = 30.0,
                 stop_server: Callable[[str, str], Awaitable[None]] | None = None,
                 refusal: Callable[[HeteroError], Exception] = lambda error: error):
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self.scheduler = scheduler
        self.clock = clock
        self.identify = identify
        # A refusal of a kernel's request as the handler that started it answers one: Jupyter's own kernels and
        # sessions handlers take anything but their HTTP error for a fault (a 500).
        self.refusal = refusal
        self.wake = wake
        # Its own, over the same store: the provisioner's requests are checked as every other kind's.
        self.enqueuer = Enqueuer(catalog=self.live_catalog, repository=repository, access=Access(repository), wake=wake)
        self.server_url = server_url
        self.server_token = server_token
        self.kernel_manager = None  # set by the app: the server's MultiKernelManager
        self.booted_at = clock.wall()
        self.device_idle_pct = device_idle_pct
        self.device_idle_after_s = device_idle_after_s
        # A kernel in a user's server not reported for this long is taken as gone (servers report every few seconds).
        self.report_grace_s = report_grace_s
        self.stop_server = stop_server  # (user, server name): the hub stops a user's server; None outside a hub
        self._stop_asked: dict[int, float] = {}  # servers whose stop was asked of the hub, and when
        self._low_since: dict[int, float] = {}  # kernels whose measured devices sit below the threshold
        self._device_use: dict[int, float] = {}  # each kernel's latest measured device utilisation, %
        self._sampling: asyncio.Future | None = None
        self._warned: set[int] = set()
        self._admitted: dict[int, asyncio.Event] = {}  # kernel starts waiting for their placement
        self.reported: dict[int, ReportedKernel] = {}  # kernels in users' servers and those servers, by workload id
        self.remote_pods: dict[int, Any] = {}  # the pods of kernels in users' servers (a PodKernel each), on pods
        self._booted = scheduler.times.now()
        scheduler.on_kernel_admitted = lambda workload_id: scheduler.call_on_loop(self._wake_waiter, workload_id)
        scheduler.on_kernel_inadmissible = scheduler.on_kernel_admitted  # its waiter ends the start with the reason
        # Ticks run in a worker thread; shutting a kernel down is the event loop's work.
        scheduler.on_kernel_lost = lambda workload_id, reason: scheduler.call_on_loop(self.lose, workload_id, reason)
        # Set by the platform: the kernel's full environment (a minimal base and its credential), never the server's.
        self.seal_environment: Callable[[WorkloadRow, dict[str, str]], dict[str, str]] = lambda row, env: env

    def register(self) -> None:
        use_kernels(self)

    def attach(self, kernel_manager) -> None:
        """Use the server's kernel manager, and take culling of hetero kernels over from its culler."""
        self.kernel_manager = kernel_manager
        take_over_culling(kernel_manager)

    def reconcile(self) -> None:
        """Kernels do not outlive the server that started them: end what a restart left behind."""
        left: list[str] = []
        for row in self.repository.workloads(kind="kernel", states=(*PENDING_STATES, *ACTIVE_STATES)):
            if in_user_server(row) and self.pods is not None and row.state == "running":
                # Its pod was this service's, and a restart deletes every pod no workload of its own holds.
                self._end(row, "lost", "lost", "the hub's hetero service restarted; the kernel's pod ended with it")
                continue
            if row.created_at >= self.booted_at or in_user_server(row):
                continue  # asked for by this server while the loop was starting, or running in a user's server
            self.repository.update_workload(
                row.id, event="released", reason="the server restarted; its kernels ended with it", state="cancelled",
                placement=None, held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, stopping=None,
                preempting_until=None, finished_at=self.clock.wall(),
            )
            if row.spec.get("kernel_id"):
                left.append(row.spec["kernel_id"])
        if left:
            self.scheduler.backend.stop_left_kernels(left)  # one pass over the processes, however many

    # -- the provisioner's side (kernel/provisioner.py: what it needs of whoever places its kernels) -----

    async def holds(self, workload_id: int) -> bool:
        row = self.repository.workload(workload_id)
        return row is not None and row.state in ACTIVE_STATES

    def check(self, identity: Identity, template: str, parameters: dict[str, Any], queue: str | None) -> Checked:
        """What :meth:`request` will refuse, answered before a kernel is started for it."""
        return self.enqueuer.check(identity, WorkloadKind.KERNEL, template, parameters, queue)

    async def request(self, *, kernel_id: str | None, user: str | None, groups: tuple[str, ...] = (), template: str,
                parameters: dict[str, Any], queue: str | None, idle_timeout: float | None) -> int:
        """Create the kernel's workload (queued) and wake the scheduler; returns its id.

        ``user`` is None for kernels started through Jupyter's own kernels API: the server's owner."""
        try:
            identity = self.identify(user, groups)
            checked = self.check(identity, template, parameters, queue)
        except HeteroError as error:
            raise self.refusal(error) from None
        row = self.enqueuer.enqueue(
            checked, name=f"kernel {kernel_id}",
            spec={"payload": "kernel", "kernel_id": kernel_id, "env": {},
                  "idle_timeout_s": idle_timeout or checked.template.idle_timeout_s},
            reason=f"{identity.user} started a {checked.template.name} kernel",
            data={"kernel_id": kernel_id, "parameters": parameters})
        return row.id

    def _wake_waiter(self, workload_id: int) -> None:
        event = self._admitted.get(workload_id)
        if event is not None:
            event.set()

    async def wait_for_placement(self, workload_id: int, timeout: float) -> dict[str, str]:
        """The kernel's environment once placed; after ``timeout`` the start fails with the blockers."""
        deadline = self.clock.monotonic() + timeout  # a duration: a wall-clock step must not cut it short
        event = self._admitted.setdefault(workload_id, asyncio.Event())
        try:
            return await self._wait(workload_id, timeout, deadline, event)
        except KernelWaitTimeout:
            raise
        except BaseException as exc:  # cancelled or broken: a waiting start must not stay queued
            self.start_failed(workload_id, f"the kernel start was abandoned while waiting for a placement "
                                           f"({type(exc).__name__}{': ' + str(exc) if str(exc) else ''})",
                              state="cancelled")
            raise
        finally:
            self._admitted.pop(workload_id, None)

    async def _wait(self, workload_id: int, timeout: float, deadline: float, event: asyncio.Event) -> dict[str, str]:
        while True:
            row = self.repository.workload(workload_id)
            if row.state in ACTIVE_STATES and row.placement:
                return self._environment(row)
            if row.state == INADMISSIBLE:
                # No node could ever hold it: waiting out the timeout would tell the user nothing more.
                # Its reason is stored in English, as every event's is, and quoted so in any language.
                message = Message(N_("no {template} kernel can be placed: {reason}"), template=row.template,
                                  reason=row.reason)
                self.start_failed(workload_id, str(message))
                raise KernelWaitTimeout(message)
            if row.state not in QUEUED_STATES:
                raise KernelWaitTimeout(Message(N_("kernel workload {workload} ended while waiting: {reason}"),
                                                workload=workload_id, reason=row.reason))
            if self.clock.monotonic() >= deadline:
                message = self._why_waiting(row, timeout)
                # Only if still waiting: an admission the tick wrote since the read is taken, not left held by
                # a cancelled row.
                if self.repository.update_workload_if(
                        workload_id, lambda current: current.state in QUEUED_STATES, event="cancelled",
                        reason=str(message), state="cancelled", finished_at=self.clock.wall()) is None:
                    continue
                raise KernelWaitTimeout(message)
            # Woken at once on admission; the timeout only bounds how stale a missed wake-up can be.
            try:
                await asyncio.wait_for(event.wait(),
                                       min(WAIT_POLL_S * 10, max(deadline - self.clock.monotonic(), 0.01)))
            except asyncio.TimeoutError:
                pass
            event.clear()

    def _why_waiting(self, row: WorkloadRow, timeout: float) -> Message:
        pending = self.scheduler.pending.get(row.id)
        eta = Message(N_("unknown"))
        if pending and pending.eta is not None:
            minutes = max(0, round((pending.eta - self.scheduler.clock()) / 60))
            eta = (Message(N_("~{minutes} min (when workload {workload} ends)"), minutes=minutes,
                           workload=pending.eta_because) if pending.eta_because else
                   Message(N_("~{minutes} min"), minutes=minutes))
        return Message(N_("no {template} kernel could be placed within {timeout} s: {blockers}. ETA {eta}"),
                       template=row.template, timeout=f"{timeout:g}",
                       blockers=_Blockers(pending.blockers[:3] if pending else ()), eta=eta)

    def _environment(self, row: WorkloadRow) -> dict[str, str]:
        return self.seal_environment(row, self.scheduler.placed_environment(row))

    @property
    def pods(self):
        """The backend that runs kernels in pods (the Kubernetes one), or None: kernels run here."""
        backend = self.scheduler.backend
        return None if backend.runs_here else backend

    @property
    def isolation(self):
        """The sandbox kernels run in here (the local backend's ``WorkloadIsolation``), or None."""
        return getattr(self.scheduler.backend, "isolation", None)

    async def launch_pod(self, workload_id: int, *, attempt: int, env: dict[str, str], connection: dict):
        """The kernel's pod on its placed node, Ready (see kernel_pod.py); the connection's key and ports are the
        launching server's."""
        from ...backends.kubernetes.kernel_pod import PodKernel  # the Kubernetes client loads only when used

        node, placed = self.placed(workload_id)
        return await PodKernel.launch(self.pods, workload_id=workload_id, attempt=attempt, node=node, placed=placed,
                                      env=env, connection=connection, timeout=self.pods.config.kernel_start_timeout)

    def placed(self, workload_id: int) -> tuple[str, Placed]:
        """The node a kernel's workload was placed on, and what its pod needs to know."""
        row = self.repository.workload(workload_id)
        placement = placement_from_json(row.placement)
        slot = placement.slots[0]
        return slot.node, self.scheduler.placed(row, placement.flavor, slot, 1)

    async def started(self, workload_id: int, pid: int | None, where: str | None = None) -> None:
        row = self.repository.workload(workload_id)
        if row is None or row.state not in ACTIVE_STATES:
            # Lost or cancelled between placement and launch: the new kernel must not run unaccounted.
            raise KernelWaitTimeout(Message(N_("kernel workload {workload} ended before its kernel started: {reason}"),
                                            workload=workload_id,
                                            reason=row.reason if row else Message(N_("it no longer exists"))))
        started = self.clock.wall()
        self.repository.update_workload(
            workload_id, event="started", reason=f"kernel {row.spec.get('kernel_id')} running as {where or f'pid {pid}'}",
            data={"pid": pid, **({"pod": where.removeprefix("pod ")} if where else {})}, state="running", started_at=started, attempts=(row.attempts or 0) + 1,
        )
        self.scheduler.times.steady(workload_id, "started_at", started)

    def start_failed(self, workload_id: int | None, reason: str, state: str = "failed") -> None:
        """The kernel could not be started (or its start was abandoned): end the workload and give
        back anything it holds, with the reason."""
        row = self.repository.workload(workload_id) if workload_id is not None else None
        if row is None or row.state not in (*ACTIVE_STATES, *PENDING_STATES):
            return
        self._end(row, state, "start-failed", reason)

    async def abandon(self, workload_id: int | None, reason: str) -> None:
        """The kernel could not be launched: its workload ends failed with the reason, its devices back."""
        self.start_failed(workload_id, reason)

    async def ended(self, workload_id: int) -> None:
        """The kernel is gone (shut down, culled, died): its devices back."""
        self.release(workload_id)

    def lose(self, workload_id: int, reason: str) -> None:
        """The kernel's node is gone: the workload ends lost with the reason, its devices are given
        back at once and the kernel is shut down (its notebook sees it end; the panel, the reason)."""
        row = self.repository.workload(workload_id)
        if row is None or row.state not in ACTIVE_STATES:
            return
        self.repository.update_workload(workload_id, event="node-lost", reason=reason, stopping="node-lost")
        message = f"kernel lost: {reason}; it was shut down and its devices released"
        self._end(row, "lost", "lost", message, counts={"node_losses": (row.node_losses or 0) + 1})
        kernel = self._kernel(self.kernel_id(row))
        if kernel is not None:
            kernel.reason = message  # shown by Jupyter's kernels API until the kernel is gone
            asyncio.ensure_future(self._shutdown_kernel(self.kernel_id(row)))

    def _end(self, row: WorkloadRow, state: str, event: str, reason: str, counts: dict | None = None) -> None:
        self.repository.update_workload(
            row.id, event=event, reason=reason, state=state, placement=None, node=None, flavor=None,
            held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, stopping=None, preempting_until=None,
            finished_at=self.clock.wall(), **(counts or {}),
        )
        self._forget(row.id)

    def release(self, workload_id: int, reason: str | None = None) -> None:
        """The kernel is gone: end its workload and give its devices back."""
        row = self.repository.workload(workload_id)
        if row is None or row.state not in (*ACTIVE_STATES, "queued"):
            return
        stopped = {"preempt": ("cancelled", row.reason), "cancel": ("cancelled", row.reason)}.get(row.stopping or "")
        state, why = stopped or ("succeeded", reason or "kernel shut down")
        self._end(row, state, "released", why or "kernel shut down")
        self.wake()

    def _forget(self, workload_id: int) -> None:
        self._warned.discard(workload_id)
        self._low_since.pop(workload_id, None)
        self.reported.pop(workload_id, None)
        self._stop_asked.pop(workload_id, None)
        self.scheduler.times.forget(workload_id)

    def workload_of(self, kernel_id: str, *, waiting: bool = False) -> WorkloadRow | None:
        """The workload of this server's kernel ``kernel_id`` once placed (or while it waits, with ``waiting``)."""
        states = (*PENDING_STATES, *ACTIVE_STATES) if waiting else ACTIVE_STATES
        return next((r for r in self.repository.workloads(kind="kernel", states=states)
                     if self.kernel_id(r) == kernel_id and not in_user_server(r)), None)

    # -- culling and preemption --------------------------------------------------------------

    def kernel_id(self, row: WorkloadRow) -> str | None:
        return row.spec.get("kernel_id")

    def _kernel(self, kernel_id: str | None):
        if self.kernel_manager is None or kernel_id is None or kernel_id not in self.kernel_manager:
            return None
        return self.kernel_manager.get_kernel(kernel_id)

    # -- usage -------------------------------------------------------------------------------

    async def usage(self, kernel_id: str) -> dict[str, Any]:
        """CPU, memory and, where measurable, the GPU use of exactly this kernel's devices."""
        row = self.workload_of(kernel_id)
        kernel = self._kernel(kernel_id)
        if row is None or kernel is None:
            raise NotFound(Message(N_("no running hetero kernel {kernel!r}"), kernel=kernel_id))
        slot = placement_from_json(row.placement).slots[0]
        view = self.scheduler.inventory.node(slot.node)
        in_pod = None
        if self.pods is not None:  # its pod's devices, as the cluster's exporters last read them
            in_pod = self.pods.kernel_usage(row.id, devices=len(slot.devices), node=slot.node)
        return await kernel_usage(kernel_id, kernel, {"id": row.id, "placement": row.placement, "queue": row.queue,
                                                      "tenant": row.tenant, "idle": row.idle},
                                  emulated=bool(view and view.capability.emulated),
                                  family=view.capability.family.value if view is not None else "", in_pod=in_pod)


def is_hetero(kernel) -> bool:
    """Whether a kernel runs under the hetero provisioner (``HeteroProvisioner.places_workloads``)."""
    return getattr(getattr(kernel, "provisioner", None), "places_workloads", False) is True
