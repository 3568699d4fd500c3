"""Kernels as workloads: placement before launch, release on shutdown, idle culling, usage.

The kernel provisioner (in this server's process) calls :func:`current_kernels` to reach this
service. A kernel workload is admitted by the same engine cycle as jobs; the provisioner, not the
backend, starts its process once it has a placement.

One culler acts on a kernel. jupyter_server's (``MappingKernelManager.cull_idle_timeout``) goes on
culling plain kernels by its own settings; it leaves hetero kernels to :meth:`KernelService.sweep`,
which culls them by their template's idle timeout (the server's ``cull_idle_timeout`` where the
template has none), with a warning first and a reason on the workload, and by device utilisation.
Dead hetero kernels are still reaped by jupyter_server's culler: that is cleanup, not an idle rule.

A kernel in a hub user's server (see user_kernels.py) is placed here and run there: that server reports
its kernels' activity every few seconds, the same rules decide here, and a stop goes back to it in the
answer to its next report. One it stops reporting (the server ended or cannot reach the service) is
released after a grace period. The same server reports its own activity: a hub user's server (a
``server`` workload) idle past its template's idle timeout, or whose measured devices sit idle, is
stopped through the hub (``stop_server``), whose spawner then gives its devices back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import psutil

from ...backends.base import Placed
from ...backends.local.telemetry import sample_devices
from ...catalog import Catalog, WorkloadKind
from ...engine import render
from ...engine_inputs import placement_from_json
from ...errors import HeteroError, NotFound
from ...i18n import N_, Message
from ...store import ACTIVE_STATES, INADMISSIBLE, PENDING_STATES, QUEUED_STATES, Repository
from ...store.tables import WorkloadRow
from ..access import Access
from ..clock import Clock
from ..workloads.enqueue import Checked, Enqueuer
from ..identity import Identity
from ..scheduling.scheduler import Scheduler

__all__ = ["KernelService", "KernelWaitTimeout", "current_kernels", "is_hetero", "kernel_usage", "take_over_culling",
           "use_kernels"]

log = logging.getLogger(__name__)

# How often a waiting kernel start looks at its workload again.
WAIT_POLL_S = 0.1
# A kernel idle this long counts as idle for preemption (experiment kernels are preemptible only then).
IDLE_FOR_PREEMPTION_S = 60.0
# The interval over which a kernel's CPU use is measured for its usage.
CPU_SAMPLE_S = 0.05

_current: dict[str, Any] = {}


class KernelWaitTimeout(RuntimeError):
    """A kernel could not be placed in time; the message says what blocks it and its ETA."""


@dataclass(frozen=True)
class ReportedKernel:
    """What a hub user's server last said of one of its kernels (read like a kernel of this server's own)."""

    execution_state: str
    last_activity: float | None  # wall time
    heard_at: float  # scheduler time


def in_user_server(row: WorkloadRow) -> bool:
    """Whether a kernel workload runs in a hub user's server rather than in this server."""
    return row.spec.get("launched_by") == "user-server"


def current_kernels():
    """Whoever places this server's hetero kernels: its own KernelService, or in a hub user's server the
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


class KernelService:
    def __init__(self, *, catalog: Catalog, repository: Repository, scheduler: Scheduler,
                 clock: Clock, identify: Callable[[str | None, tuple[str, ...]], Identity],
                 wake: Callable[[], None], server_url: str = "", server_token: str = "",
                 device_idle_pct: float = 5.0, device_idle_after_s: float = 1800.0, report_grace_s: float = 30.0,
                 stop_server: Callable[[str, str], Awaitable[None]] | None = None,
                 refusal: Callable[[HeteroError], Exception] = lambda error: error):
        self.catalog = catalog
        self.repository = repository
        self.scheduler = scheduler
        self.clock = clock
        self.identify = identify
        # A refusal of a kernel's request as the handler that started it answers one: Jupyter's own kernels and
        # sessions handlers take anything but their HTTP error for a fault (a 500).
        self.refusal = refusal
        self.wake = wake
        # Its own, over the same store: the provisioner's requests are checked as every other kind's.
        self.enqueuer = Enqueuer(catalog=catalog, repository=repository, access=Access(repository), wake=wake)
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
                message = f"no {row.template} kernel can be placed: {row.reason}"
                self.start_failed(workload_id, message)
                raise KernelWaitTimeout(message)
            if row.state not in QUEUED_STATES:
                raise KernelWaitTimeout(f"kernel workload {workload_id} ended while waiting: {row.reason}")
            if self.clock.monotonic() >= deadline:
                message = self._why_waiting(row, timeout)
                # Only if still waiting: an admission the tick wrote since the read is taken, not left held by
                # a cancelled row.
                if self.repository.update_workload_if(
                        workload_id, lambda current: current.state in QUEUED_STATES, event="cancelled",
                        reason=message, state="cancelled", finished_at=self.clock.wall()) is None:
                    continue
                raise KernelWaitTimeout(message)
            # Woken at once on admission; the timeout only bounds how stale a missed wake-up can be.
            try:
                await asyncio.wait_for(event.wait(),
                                       min(WAIT_POLL_S * 10, max(deadline - self.clock.monotonic(), 0.01)))
            except asyncio.TimeoutError:
                pass
            event.clear()

    def _why_waiting(self, row: WorkloadRow, timeout: float) -> str:
        pending = self.scheduler.pending.get(row.id)
        blockers = "; ".join(render(b) for b in pending.blockers[:3]) if pending else "not scheduled yet"
        eta = "unknown"
        if pending and pending.eta is not None:
            eta = f"~{max(0, round((pending.eta - self.scheduler.clock()) / 60))} min"
            if pending.eta_because:
                eta += f" (when workload {pending.eta_because} ends)"
        return f"no {row.template} kernel could be placed within {timeout:g} s: {blockers}. ETA {eta}"

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
            raise KernelWaitTimeout(f"kernel workload {workload_id} ended before its kernel started: "
                                    f"{row.reason if row else 'it no longer exists'}")
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

    def sweep(self, now: float) -> None:
        """Mark idle kernels, warn then cull those idle past their timeout, stop preempted ones."""
        # Launched, not yet registered; a start that failed stays among them, done, and counts as gone.
        starting = getattr(self.kernel_manager, "_pending_kernels", {})
        running = [*self.repository.workloads(kind="kernel", states=("running",)),
                   *self.repository.workloads(kind="server", states=("running",))]
        self._sample_devices(running)
        alive = {row.id for row in running}  # what ended another way (a server its spawner released) is forgotten
        for table in (self.reported, self._stop_asked):  # in place: the server service shares the first
            for key in table.keys() - alive:
                del table[key]
        for key in self.remote_pods.keys() - alive:  # its kernel ended another way: its pod goes too
            asyncio.ensure_future(self.remote_pods.pop(key).delete(grace_s=0))
        for row in running:
            task = starting.get(self.kernel_id(row))
            if task is not None and not task.done():
                continue
            if row.kind == "server":
                kernel = self.reported.get(row.id)
                if kernel is None:
                    continue  # a server that does not report (no hetero extension in it) is left to the hub
            elif in_user_server(row):
                kernel = self.reported.get(row.id)
                if now - self._heard_at(row, kernel) > self.report_grace_s:
                    self._end(row, "lost", "lost", f"the kernel's server stopped reporting it for "
                                                   f"{self.report_grace_s:g} s (the server ended, or cannot reach "
                                                   "this service); its devices were released")
                    self.wake()
                    continue
                if kernel is None:
                    continue  # launched since the server's last report
            else:
                kernel = self._kernel(self.kernel_id(row))
                if kernel is None:
                    self.release(row.id, "the kernel is gone")
                    continue
            if row.stopping is not None:
                self._shutdown(row, row.reason or "stopping")
                continue
            busy = getattr(kernel, "execution_state", "idle") == "busy"
            # Jupyter stamps activity in wall time; seen once, it becomes scheduler time (see services/clock.py).
            active_at = self.scheduler.times.steady(row.id, "last_activity",
                                                    _timestamp(getattr(kernel, "last_activity", None), None))
            idle_s = 0.0 if busy or active_at is None else max(0.0, now - active_at)
            idle = idle_s >= IDLE_FOR_PREEMPTION_S
            if idle != row.idle:
                self.repository.update_workload(row.id, event="idle" if idle else "busy",
                                                reason=f"idle for {int(idle_s)} s" if idle else "busy again", idle=idle)
            if self._devices_idle_too_long(row, now):
                self._shutdown(row, f"culled: device utilisation below {self.device_idle_pct:g}% for "
                                    f"{_minutes(self.device_idle_after_s)}")
                continue
            template_timeout = row.spec.get("idle_timeout_s")
            timeout = template_timeout or (self._server_idle_timeout() if row.kind == "kernel" else None)
            if not timeout or busy:
                self._warned.discard(row.id)
                continue
            warn_at = timeout * 0.8
            if idle_s >= timeout:
                whose = f"template {row.template}" if template_timeout else "the server (cull_idle_timeout)"
                self._shutdown(row, f"culled: idle {_minutes(idle_s)}, past the {_minutes(timeout)} idle timeout of {whose}")
            elif idle_s >= warn_at and row.id not in self._warned:
                self._warned.add(row.id)
                self.repository.update_workload(
                    row.id, event="idle-warning",
                    reason=f"idle {_minutes(idle_s)}; will be culled after {_minutes(timeout)} idle",
                )

    def _heard_at(self, row: WorkloadRow, reported: ReportedKernel | None) -> float:
        """When a user's server last spoke of this kernel; before its first report, when the kernel (or this
        service) started: a server has a grace period to report a kernel it has just launched."""
        if reported is not None:
            return reported.heard_at
        started = self.scheduler.times.steady(row.id, "started_at", _timestamp(row.started_at, None))
        return max(self._booted, started or self._booted)

    def _server_idle_timeout(self) -> float | None:
        """jupyter_server's cull_idle_timeout, which hetero kernels follow where their template sets none."""
        seconds = getattr(self.kernel_manager, "cull_idle_timeout", 0)
        return float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else None

    def _devices_idle_too_long(self, row: WorkloadRow, now: float) -> bool:
        """Where utilisation is measured (real devices here through their vendor's tool, devices in pods through an
        exporter), low use for long enough culls."""
        use = self._device_use.get(row.id)
        if use is None or use >= self.device_idle_pct:
            self._low_since.pop(row.id, None)
            return False
        since = self._low_since.setdefault(row.id, now)
        return now - since >= self.device_idle_after_s

    def _sample_devices(self, rows: list[WorkloadRow]) -> None:
        """Measure these kernels' real devices in a worker thread (a vendor's tool waits on the driver; a pod's
        come from the exporters' latest pass); a sweep decides on the latest measurement, at most one sweep old."""
        if self._sampling is not None and not self._sampling.done():
            return
        targets = {row.id: measured for row in rows if (measured := self._measurable_devices(row))}
        if not targets:
            self._device_use = {}
            return
        pods = self.pods

        def measure(workload_id: int, measured: tuple[str, str, list[int]]) -> dict:
            family, node, indexes = measured
            if pods is None:
                return sample_devices(family, indexes)
            return pods.kernel_usage(workload_id, devices=len(indexes), node=node)

        def sample() -> dict[int, float]:
            found = {workload_id: measure(workload_id, measured).get("device_util_pct")
                     for workload_id, measured in targets.items()}
            return {workload_id: use for workload_id, use in found.items() if use is not None}

        self._sampling = asyncio.get_running_loop().run_in_executor(None, sample)
        self._sampling.add_done_callback(self._sampled)

    def _sampled(self, future: asyncio.Future) -> None:
        if not future.cancelled() and future.exception() is None:
            self._device_use = future.result()

    def _measurable_devices(self, row: WorkloadRow) -> tuple[str, str, list[int]] | None:
        """The family, node and device indexes of a kernel whose devices can be measured: real ones, on this
        machine through their vendor's tool or in a pod through the cluster's exporters."""
        placement = placement_from_json(row.placement) if row.placement else None
        view = self.scheduler.inventory.node(placement.slots[0].node) if placement else None
        if view is None or view.capability.emulated or (self.pods is None and not self.scheduler.backend.runs_here):
            return None
        devices = [index for index, _m, _mem in placement.slots[0].devices]
        return (view.capability.family.value, view.name, devices) if devices else None

    def _shutdown(self, row: WorkloadRow, reason: str) -> None:
        kernel_id = self.kernel_id(row)
        if row.kind == "server":
            self._stop_server(row, reason)
            return
        if in_user_server(row):
            # Its server shuts it down when its next report is answered with the stop and this reason.
            self._mark_culling(row, reason)
            return
        if self.kernel_manager is None or kernel_id not in self.kernel_manager:
            self.release(row.id, reason)
            return
        self._mark_culling(row, reason)
        asyncio.ensure_future(self._shutdown_kernel(kernel_id))

    def _mark_culling(self, row: WorkloadRow, reason: str) -> None:
        """Record the stop and why, once: a stop already under way keeps its own."""
        if row.stopping is None:
            self.repository.update_workload(row.id, event="culling", reason=reason, stopping="cancel",
                                            preempting_until=self.clock.wall())

    def _stop_server(self, row: WorkloadRow, reason: str) -> None:
        """Ask the hub to stop a user's server (again after a while if the hub did not); its spawner releases it."""
        self._mark_culling(row, reason)
        asked = self._stop_asked.get(row.id)
        if asked is not None and self.clock.monotonic() - asked < self.report_grace_s:
            return
        self._stop_asked[row.id] = self.clock.monotonic()
        if self.stop_server is None:
            log.warning("jupyter-hetero: server workload %s should stop (%s) but no hub is known here", row.id, reason)
            return
        future = asyncio.ensure_future(self.stop_server(row.user, row.spec.get("server_name") or ""))
        future.add_done_callback(lambda done: done.cancelled() or done.exception() is None or log.warning(
            "jupyter-hetero: the hub did not stop server workload %s: %s", row.id, done.exception()))

    async def _shutdown_kernel(self, kernel_id: str) -> None:
        try:
            await self.kernel_manager.shutdown_kernel(kernel_id)
        except (KeyError, HeteroError):
            pass
        except Exception:  # noqa: BLE001 - a kernel that will not die is logged; the next sweep retries
            log.exception("jupyter-hetero: could not shut down kernel %s", kernel_id)

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


async def kernel_usage(kernel_id: str, kernel, workload: dict[str, Any], *, emulated: bool,
                       family: str, in_pod: dict | None = None) -> dict[str, Any]:
    """What ``GET /kernels/{id}/usage`` answers of a kernel running here, whose ``workload`` (id, placement,
    queue, tenant, idle) holds its devices: its process tree's CPU and memory, and its devices' use, sampled
    by the vendor tool of their ``family`` ("" where none can: a node this server does not know), or for a
    kernel in a pod (``in_pod``) as the cluster's exporters measured them."""
    pid = getattr(getattr(kernel, "provisioner", None), "pid", None)
    placement = placement_from_json(workload["placement"])
    devices = [index for index, _m, _mem in placement.slots[0].devices]
    # CPU use is a rate over a short interval, and vendor tools wait on the driver: not on the event loop.
    here = family if not emulated and in_pod is None else ""
    cpu, memory, gpus = await asyncio.to_thread(_measure, pid, here, devices)
    if in_pod is not None:
        gpus = {name: in_pod[name] for name in ("device_util_pct", "gpu_memory_mib") if name in in_pod}
    return {
        "kernel_id": kernel_id, "workload_id": workload["id"], "pid": pid, "cpu_percent": round(cpu, 1),
        "memory_mib": round(memory / 1024 / 1024, 1), "node": placement.slots[0].node,
        "flavor": placement.flavor, "devices": devices, "emulated": emulated,
        "queue": workload["queue"], "tenant": workload["tenant"],
        "execution_state": getattr(kernel, "execution_state", None), "idle": bool(workload.get("idle")),
        "device_utilisation": gpus or None,
        "device_note": None if gpus else ("emulated devices are not measured" if emulated
                                          else (in_pod.get("device_note") or "no device exporter reports its pod")
                                          if in_pod is not None
                                          else "device utilisation is not measurable here (no vendor tool answered)"),
    }


def _measure(pid: int | None, family: str, devices: list[int]) -> tuple[float, float, dict[str, float]]:
    """(CPU %, resident bytes) of the kernel's process tree over CPU_SAMPLE_S, and its devices' use."""
    cpu = memory = 0.0
    try:
        if pid is None:  # psutil would measure the server itself
            raise psutil.NoSuchProcess(0)
        process = psutil.Process(pid)
        members = [process, *process.children(recursive=True)]
        for member in members:
            member.cpu_percent(interval=None)  # starts each member's measurement
        time.sleep(CPU_SAMPLE_S)  # one interval for the whole tree, in a worker thread
        for member in members:
            try:
                cpu += member.cpu_percent(interval=None)
                memory += member.memory_info().rss
            except psutil.Error:
                continue  # a child that ended meanwhile
    except (psutil.Error, TypeError, ValueError):
        pass
    return cpu, memory, sample_devices(family, devices) if family and devices else {}


def is_hetero(kernel) -> bool:
    """Whether a kernel runs under the hetero provisioner (``HeteroProvisioner.places_workloads``)."""
    return getattr(getattr(kernel, "provisioner", None), "places_workloads", False) is True


def _timestamp(value, default: float | None) -> float | None:
    if value is None:
        return default
    return value.timestamp() if hasattr(value, "timestamp") else float(value)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{int(seconds)} s"
