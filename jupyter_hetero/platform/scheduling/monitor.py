"""The scheduler's watch over running attempts: liveness, stops, time limits, lost nodes, and how each attempt ends.

    monitor.watch(now)                       # each tick, before the cycle: at the cost of the attempts that run
    monitor.lose([(workload_id, reason)], now)  # placements that cannot be kept: released at once
    monitor.finish(workload_id, now, "failed", reason)  # close the attempt, release, apply the failure policy

The scheduler owns the running attempts (``running``) and the workloads' copies; the monitor reads them and
writes each ending to the store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ...backends.base import AdmissionWait, Backend, ProcessHandle
from ...catalog import Catalog
from ...engine_inputs import placement_from_json
from ...store import ACTIVE_STATES, MetricSample, Repository
from ...store.tables import WorkloadRow
from ..clock import SteadyTime
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..workloads.jobfiles import JobPaths, archive_attempt
from .attempts import RunningAttempt
from .inadmissible import InadmissibleWorkloads
from .inventory import Inventory
from .lifecycle import after_attempt, may_lose, may_requeue, may_stop, placement_problem
from .workload_copies import WorkloadCopies

__all__ = ["METRIC_INTERVAL_S", "RUN_BY_BACKEND", "AttemptMonitor"]

log = logging.getLogger(__name__)

# Seconds a stopping workload gets between SIGTERM and SIGKILL when its queue names none.
DEFAULT_GRACE_S = 30
# Seconds between SIGTERM and SIGKILL when a time limit is reached.
TIME_LIMIT_GRACE_S = 10
# Seconds between two stored sets of an attempt's measured figures (HeteroApp.metric_interval_s).
METRIC_INTERVAL_S = 10.0
# Kinds whose processes the backend starts (a job, a service's replica); a kernel or a hub user's server
# is started by whoever asked for it, once placed.
RUN_BY_BACKEND = ("job", "service")


class AttemptMonitor(ReadsLiveCatalog):
    """Watches the attempts the backend runs and records how they end; one per scheduler."""

    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, inventory: Inventory,
                 backend: Backend,
                 times: SteadyTime, wall: Callable[[], float], paths: Callable[[int], JobPaths],
                 running: dict[int, RunningAttempt], workloads: WorkloadCopies,
                 inadmissible: InadmissibleWorkloads, on_kernel_lost: Callable[[int, str], None],
                 metric_interval_s: float = METRIC_INTERVAL_S):
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self.inventory = inventory
        self.backend = backend
        self.times = times
        self.wall = wall
        self.paths = paths
        self._running = running  # the scheduler's: a launch adds to it, an ending takes from it
        self._workloads = workloads
        self.inadmissible = inadmissible
        # A kernel whose node is gone: its service ends the workload and shuts the kernel down.
        self.on_kernel_lost = on_kernel_lost
        # Running workloads whose replicas the cluster's own admission (Kueue) still holds, as of the last watch.
        self.held: dict[int, AdmissionWait] = {}
        self._inventory_checked: int | None = None  # the inventory version placements were last checked against
        self._lost_nodes: tuple[int | None, set[str]] = (None, set())  # (inventory version, lost nodes)
        self._times_limit = 1000  # remembered workloads before the ended ones are forgotten
        self.metric_interval_s = metric_interval_s
        self._samples: list[MetricSample] = []  # this tick's metric samples, stored in one write at its end

    def signal_stop(self, workload_id: int) -> None:
        running = self._running.get(workload_id)
        if running is not None:
            running.signal_stop(self.backend)


    def watch(self, now: float) -> None:
        """Watch the jobs whose attempts run: at the cost of those jobs, not of every scheduled
        workload or node (the lost nodes are computed again only when the inventory changes)."""
        self._housekeep(now)
        if self._lost_nodes[0] != self.inventory.version:
            self._lost_nodes = (self.inventory.version,
                                {view.name for view in self.inventory.nodes() if view.state == "lost"})
        lost_nodes = self._lost_nodes[1]
        watched = [(row, self._running[workload_id]) for workload_id in sorted(self._running)
                   if (row := self._workloads.row(workload_id)) is not None and row.state in ACTIVE_STATES]
        # One scan for every replica (liveness each tick, usage every few seconds), not one per replica.
        live = self.backend.scan(handle for _row, running in watched for handle in running.handles)
        held: dict[int, AdmissionWait] = {}
        for row, running in watched:
            alive = [h for h in running.handles if h in live]
            if alive:
                if (wait := self._held(row, alive)) is not None:
                    held[row.id] = wait
                self._watch_attempt(row, running, alive, now, lost_nodes, held=wait is not None)
                continue
            self._judge(row, running, now)
        self.held = held
        self._store_samples()

    def _store_samples(self) -> None:
        """Every attempt's due samples of this tick in one write: its cost is one transaction, not one per workload."""
        samples, self._samples = self._samples, []
        if samples:
            self.repository.record_metric_samples(samples)


    def _held(self, row: WorkloadRow, alive: list[ProcessHandle]) -> AdmissionWait | None:
        """What holds the workload's replicas when the cluster's own admission (Kueue) decides when they run. When
        it lets them go, the workload starts then: its time limit and run time count from that moment."""
        wait = next(filter(None, map(self.backend.admission_wait, alive)), None)
        was = self.held.get(row.id)
        if wait is None and was is not None:
            started = self.wall()
            waited = started - (row.started_at or started)
            self.repository.update_workload(row.id, event=f"admitted-by-{was.by}", started_at=started,
                                            reason=f"{was.by} admitted its pods after {waited:.0f} s; it runs from now")
            self.times.steady(row.id, "started_at", started)
        return wait


    def _watch_attempt(self, row: WorkloadRow, running: RunningAttempt, alive: list[ProcessHandle], now: float,
               lost_nodes: set[str], *, held: bool = False) -> None:
        if row.stopping is None and any(h.node in lost_nodes for h in running.handles):
            row = self.repository.update_workload_if(row.id, may_lose, event="node-lost", reason="its node was lost",
                                                     stopping="node-lost", preempting_until=self.wall()) \
                or self.repository.workload(row.id)
        started = self.times.steady(row.id, "started_at", row.started_at)
        if row.stopping is None and not held and row.time_limit_s and started is not None \
                and now >= started + row.time_limit_s:
            row = self._stop(row, "time-limit", f"time limit of {int(row.time_limit_s)} s reached", now + TIME_LIMIT_GRACE_S)
        if row.stopping is None and (problem := next(filter(None, map(self.backend.problem, alive)), None)):
            row = self._stop(row, "replica-failed", f"{problem}; the attempt was stopped", now)
        if row.stopping is None and len(alive) < len(running.handles):
            failed = running.failed_replica(self.backend, alive)
            if failed is not None:
                row = self._stop(row, "replica-failed", f"{failed}; the other replicas were stopped",
                                 now + self.grace(row))
        if row.stopping is not None:
            self.signal_stop(row.id)  # a stop recorded elsewhere (a cancel) or before a restart
        deadline = self.times.steady(row.id, "preempting_until", row.preempting_until)
        if row.stopping is not None and deadline is not None and now >= deadline and not running.killed:
            running.kill(self.backend, alive)
        note = running.sample(self.backend, alive)
        self._samples += running.metric_samples(row.id, row.attempts, at=self.wall(), interval_s=self.metric_interval_s)
        if note is not None:  # once an attempt: an exporter that stays down is not an event per tick
            self.repository.update_workload(row.id, event="unmeasured", reason=f"device use not measured: {note}")
        checkpoint = self.paths(row.id).newest_checkpoint()
        if checkpoint and (row.checkpoint_at is None or checkpoint[1] > row.checkpoint_at):
            self.repository.update_workload(row.id, event="checkpoint", reason=f"new checkpoint {checkpoint[0].name}",
                                            checkpoint_at=checkpoint[1])


    def _stop(self, row: WorkloadRow, stopping: str, reason: str, deadline: float) -> WorkloadRow:
        """Record a stop the scheduler decided (SIGTERM now, SIGKILL at ``deadline``, scheduler time)."""
        until = self.times.to_wall(deadline)
        stopped = self.repository.update_workload_if(row.id, may_stop, event=stopping, reason=reason,
                                                     stopping=stopping, preempting_until=until)
        if stopped is None:  # a cancel came since the tick read the row: it stands, with its own deadline
            return self.repository.workload(row.id)
        self.times.steady(row.id, "preempting_until", until)
        self.signal_stop(row.id)
        return stopped


    def grace(self, row: WorkloadRow) -> float:
        queue = self.catalog.queue(row.queue)
        return queue.preemption.grace_s if queue else DEFAULT_GRACE_S


    # -- node and device loss ----------------------------------------------------------------

    def _housekeep(self, now: float) -> None:
        """Before processes are watched and a snapshot is taken: running work whose node left the
        inventory, was lost or lost devices is handled as lost; ended workloads' times are forgotten."""
        if self._inventory_checked != self.inventory.version:
            # Placements are made against the inventory; only a change to it can break them.
            self._inventory_checked = self.inventory.version
            self.lose([(row.id, problem) for row in self.repository.workloads(states=ACTIVE_STATES)
                       if row.placement and (problem := placement_problem(row.placement, self.inventory))], now)
        if self.times.remembered > self._times_limit:
            # The live workloads are the scheduled ones, which the workload copies hold, and the inadmissible
            # ones: reading them all from the store again took the tick thread half a second at 10,000.
            live = {row.id for row, _workload in self._workloads.entries()} | self.inadmissible.known()
            self.times.retain(live)
            self._times_limit = max(1000, 2 * len(live))

    def lose(self, lost: list[tuple[int, str]], now: float) -> None:
        """Workloads that cannot keep their placement: recorded `node-lost`, their capacity released at
        once (the node is gone), jobs' processes killed and their queue's failure policy applied,
        kernels shut down by their service."""
        for workload_id, reason in lost:
            row = self.repository.workload(workload_id)
            if row is None or row.state not in ACTIVE_STATES:
                continue
            log.warning("jupyter-hetero: workload %s lost: %s", workload_id, reason)
            if row.kind not in RUN_BY_BACKEND:
                self.on_kernel_lost(workload_id, reason)
                continue
            marked = self.repository.update_workload_if(workload_id, may_lose, event="node-lost", reason=reason,
                                                        stopping="node-lost", preempting_until=self.wall())
            running = self._running.get(workload_id)
            if running is not None:
                running.kill(self.backend)  # no grace: the devices it ran on are gone
            metrics = running.metrics([]) if running else None
            if marked is None:
                current = self.repository.workload(workload_id)
                if current.state in ACTIVE_STATES:  # a cancel came first and wins: it ends cancelled, not requeued
                    self.finish(workload_id, now, "cancelled", current.reason or "cancelled", metrics)
                continue
            self.finish(workload_id, now, "lost", reason, metrics)

    # -- endings ------------------------------------------------------------------------------

    def _judge(self, row: WorkloadRow, running: RunningAttempt, now: float) -> None:
        """Every replica has exited: decide the outcome and what the queue's policy does next."""
        exits = [running.exit_of(self.backend, handle) for handle in running.handles]
        codes = [e.code for e in exits]
        metrics = running.metrics(exits)
        # The attempt's last figures, from its exit records: exact, whenever it ended since the last sample.
        self._samples += running.metric_samples(row.id, row.attempts, at=self.wall(), interval_s=0, exits=exits)
        stopping = row.stopping
        if stopping == "cancel":
            self.finish(row.id, now, "cancelled", row.reason or "cancelled", metrics)
        elif stopping == "preempt":
            self.finish(row.id, now, "preempted", "preempted; requeued", metrics)
        elif stopping == "time-limit":
            self.finish(row.id, now, "failed", f"time limit of {int(row.time_limit_s or 0)} s reached", metrics,
                         retryable=False)
        elif stopping == "replica-failed":
            self.finish(row.id, now, "failed", row.reason or "a replica failed", metrics, exit_code=running.failed_code)
        elif stopping == "node-lost" or any(code is None for code in codes):
            vanished = next((e.reason for e in exits if e.code is None and e.reason), "the process vanished")
            self.finish(row.id, now, "lost", "its node was lost" if stopping else vanished, metrics)
        elif all(code == 0 for code in codes):
            self.finish(row.id, now, "succeeded", "exit code 0", metrics)
        else:
            bad = next(e for e in exits if e.code != 0)
            self.finish(row.id, now, "failed", f"exit code {bad.code}" + (f": {bad.reason}" if bad.reason else ""),
                         metrics)

    def finish(self, workload_id: int, now: float, outcome: str, reason: str, metrics: dict | None = None, *,
                retryable: bool = True, exit_code: int | None = None) -> None:
        """Close the attempt, archive its outputs, release capacity and apply the failure policy."""
        row = self.repository.workload(workload_id)
        running = self._running.pop(workload_id, None)
        paths = self.paths(workload_id)
        archive = paths.archive(row.attempts)
        try:
            archive_attempt(paths, row.attempts, archive)
        except OSError as exc:  # the outcome and the release matter more than the copy
            log.warning("jupyter-hetero: could not archive attempt %s of workload %s: %s", row.attempts, workload_id, exc)
        ended = None
        if running is not None:
            ended = (running.attempt_id, dict(
                ended_at=self.wall(), outcome=outcome, reason=reason, archive_path=str(archive),
                exit_code=exit_code if exit_code is not None
                else next((c for c in (metrics or {}).get("exit_codes", []) if c not in (None, 0)), 0)
                if outcome in ("succeeded", "failed") else None,
                metrics=metrics or {},
            ))
        queue = self.catalog.queue(row.queue)
        step = after_attempt(row, outcome, reason, queue.failure if queue else None, retryable=retryable,
                             now_wall=self.wall())
        self.release(row, step.state, step.event, step.reason, final=step.final, said_first=step.said_first,
                      counts=step.counts, ended=ended,
                      not_before=None if step.retry_in_s is None else self.times.to_wall(now + step.retry_in_s))

    def release(self, row: WorkloadRow, state: str, event: str, reason: str, *, final: bool = False,
                 not_before: float | None = None, said_first: tuple[tuple[str, str], ...] = (),
                 counts: dict | None = None, ended: tuple[int, dict[str, Any]] | None = None) -> None:
        """Free what the attempt held and record what follows, in one write: the attempt's end (``ended``: its
        id and fields) and the workload's counts are written together, so no reader sees an attempt's outcome
        beside the workload's old counts; what ended the attempt (``said_first``: preempted, lost) is said in
        that same write, so no reader sees a row that says it was preempted still holding its devices."""
        wall = self.wall()
        with self.repository.workload_transaction(row.id) as transaction:
            if ended is not None:
                transaction.update_attempt(ended[0], **ended[1])
            # Back to the queue only if no cancel came while the attempt ended; an ending is written as is. A
            # backoff's end goes in the event too: the history then says from when the workload waited to be
            # admitted.
            released = transaction.update_if(
                None if final else may_requeue, event=event, reason=reason, said_first=said_first,
                data={"not_before": not_before} if not_before is not None else None,
                **_freed(row, state, final=final, not_before=not_before, wall=wall), **(counts or {}),
            )
            if released is None:  # the cancel wins: the workload ends cancelled, in this same write
                current = transaction.row
                transaction.update_if(None, event="cancelled", reason=current.reason or "cancelled",
                                      said_first=said_first, **_freed(current, "cancelled", final=True, wall=wall))
                final = True
        if final:
            self.times.forget(row.id)


    # -- what running attempts show ----------------------------------------------------------

    def address(self, workload_id: int) -> str | None:
        """Where a running service replica is reached, as its backend says; None until it has an address."""
        running = self._running.get(workload_id)
        return self.backend.address(running.handles[0]) if running is not None and running.handles else None

    def usage(self, workload_id: int) -> dict:
        """A running replica's latest usage sample (memory, device use where measured); {} when none."""
        running = self._running.get(workload_id)
        return dict(running.latest) if running is not None else {}

    def device_memory(self) -> list[tuple[int, str, float, float]]:
        """(workload, tenant, device memory used, its devices' memory) of each running attempt whose devices are
        measured; MiB."""
        found = []
        for workload_id, running in list(self._running.items()):
            used = running.latest.get("device_memory_used_mib")
            row = self._workloads.row(workload_id)
            if used is None or row is None or not row.placement:
                continue
            placement = placement_from_json(row.placement)
            view = self.inventory.node(placement.slots[0].node)
            whole = view.capability.accelerator.memory_mib if view and view.capability.accelerator else 0
            limit = sum(mem or whole for slot in placement.slots for _index, _milli, mem in slot.devices)
            found.append((workload_id, row.tenant, used, limit))
        return found


def _freed(row: WorkloadRow, state: str, *, final: bool, wall: float, not_before: float | None = None) -> dict:
    """A released workload's fields: nothing held; requeued, its admission's marks cleared; final, kept."""
    return dict(state=state, placement=None, node=None, flavor=None, held_cpu_milli=0, held_memory_mib=0,
                held_device_milli=0, stopping=None, preempting_until=None, preempted_for=None, not_before=not_before,
                finished_at=wall if final else None, started_at=row.started_at if final else None,
                admitted_at=row.admitted_at if final else None, escalated=row.escalated if final else False,
                priority_boost=row.priority_boost if final else 0)
