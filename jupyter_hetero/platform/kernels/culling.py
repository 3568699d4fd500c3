"""The idle rules of hetero kernels and hub users' servers: :class:`IdleRules`, the sweep half of Kernels.

One culler acts on a kernel. jupyter_server's (``MappingKernelManager.cull_idle_timeout``) goes on
culling plain kernels by its own settings; it leaves hetero kernels to :meth:`IdleRules.sweep`,
which culls them by their template's idle timeout (the server's ``cull_idle_timeout`` where the
template has none), with a warning first and a reason on the workload, and by device utilisation.
Dead hetero kernels are still reaped by jupyter_server's culler: that is cleanup, not an idle rule.

A kernel in a hub user's server (see hub_kernels.py) reports its activity every few seconds and the
same rules decide here; a stop goes back to it in the answer to its next report, and one it stops
reporting is released after a grace period. An idle hub user's server is stopped through the hub.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from ...backends.local.telemetry import sample_devices
from ...engine_inputs import placement_from_json
from ...errors import HeteroError
from ...store.tables import WorkloadRow

__all__ = ["IDLE_FOR_PREEMPTION_S", "IdleRules", "ReportedKernel", "in_user_server"]

log = logging.getLogger(__name__)

# A kernel idle this long counts as idle for preemption (experiment kernels are preemptible only then).
IDLE_FOR_PREEMPTION_S = 60.0


@dataclass(frozen=True)
class ReportedKernel:
    """What a hub user's server last said of one of its kernels (read like a kernel of this server's own)."""

    execution_state: str
    last_activity: float | None  # wall time
    heard_at: float  # scheduler time


def in_user_server(row: WorkloadRow) -> bool:
    """Whether a kernel workload runs in a hub user's server rather than in this server."""
    return row.spec.get("launched_by") == "user-server"


class IdleRules:
    """The sweep over running kernels and servers and what it decides with; ``Kernels.__init__`` sets
    the state it reads (the store, the scheduler, the kernel manager, what users' servers reported)."""

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
            # Jupyter stamps activity in wall time; seen once, it becomes scheduler time (see platform/clock.py).
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


def _timestamp(value, default: float | None) -> float | None:
    if value is None:
        return default
    return value.timestamp() if hasattr(value, "timestamp") else float(value)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{int(seconds)} s"
