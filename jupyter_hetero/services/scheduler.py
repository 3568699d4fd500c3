"""The scheduler loop: watch what runs, ask the engine, record its decisions, then act on them.

    scheduler.reconcile()   # once, at start: re-adopt live processes, requeue what never started
    scheduler.tick()        # on a timer and on every change: monitor -> cycle -> apply

Order matters for restart safety: a decision is written (with its event) before the backend is
told, so a crash between the two leaves a record the next start can act on, never a process
the store does not know about.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..backends.base import AdmissionWait, Backend, Launch, LaunchUnavailable, Placed, ProcessHandle, Serving
from ..catalog import Catalog
from ..engine import Decisions, Engine, Pending, Snapshot, Workload, free_capacity
from ..engine_inputs import (
    engine_workload,
    node_state,
    placement_from_json,
    placement_to_json,
    queue_policies,
    tenant_quotas,
)
from ..store import ACTIVE_STATES, INADMISSIBLE, QUEUED_STATES, Repository
from ..store.tables import AttemptRow, WorkloadRow
from ..export.kueue import pod_admission
from .attempts import RunningAttempt
from .clock import Clock, SteadyTime
from .engine_mirror import MirroredWorkload, SnapshotDelta
from .engine_process import Cycle, DryRuns, EngineProcess, only_pending_of
from .environment import device_environment
from .inadmissible import InadmissibleWorkloads
from .inventory import Inventory
from .jobfiles import JobPaths, archive_attempt, runner_argv
from .lifecycle import after_attempt, may_lose, may_requeue, may_stop, placement_problem
from .queue_status import WAIT_WINDOW_S, QueueStatus
from .reflector import NodeStates, WorkloadReflector
from .ticks import TickLog, TickTiming

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)

# Seconds a stopping workload gets between SIGTERM and SIGKILL when its queue names none.
DEFAULT_GRACE_S = 30
# Seconds between SIGTERM and SIGKILL when a time limit is reached.
TIME_LIMIT_GRACE_S = 10
# Seconds between reads of the last day's queue waits when no tick admits anything (a tick that admits
# reads them again at once).
WAITS_REFRESH_S = 30.0
# Workloads the engine sees every cycle: waiting ones and those holding capacity. Inadmissible ones are
# not among them; they join a cycle only after the inventory changed (see inadmissible.py).
SCHEDULED_STATES = (*QUEUED_STATES, *ACTIVE_STATES)


# Kinds whose processes the backend starts (a job, a service's replica); a kernel or a hub user's server
# is started by whoever asked for it, once placed.
RUN_BY_BACKEND = ("job", "service")


class Scheduler:
    """Drives the engine over the store and a backend; one instance per server."""

    def __init__(self, *, catalog: Catalog, repository: Repository, inventory: Inventory, backend: Backend,
                 engine: Engine, clock: Clock, work_dir: Path, engine_process: EngineProcess | None = None):
        self.catalog = catalog
        self.repository = repository
        self.inventory = inventory
        self.backend = backend
        self.engine = engine
        # Where cycles run: in this process (None), or in a child fed deltas (see engine_process.py).
        self.engine_process = engine_process
        self._nodes_sent: int | None = None  # the node states' version the engine process holds
        # Stored timestamps are wall time; every comparison and the engine's `now` are scheduler
        # time, which a step of the wall clock does not move (see services/clock.py).
        self.times = SteadyTime(clock)
        self.clock = self.times.now
        self.wall = clock.wall
        self.work_dir = work_dir
        self.pending: dict[int, Pending] = {}
        # Running workloads whose replicas the cluster's own admission (Kueue) still holds, as of the last tick.
        self.held: dict[int, AdmissionWait] = {}
        self.last_decisions: Decisions | None = None
        self._running: dict[int, RunningAttempt] = {}
        self.on_kernel_admitted: Callable[[int], None] = lambda workload_id: None
        # A kernel no node could ever hold: its start, waiting for a placement, fails at once with the reason.
        self.on_kernel_inadmissible: Callable[[int], None] = lambda workload_id: None
        # Set by the platform: a replica's full environment (a minimal base and its credential), never the server's.
        self.seal_environment: Callable[[WorkloadRow, dict[str, str]], dict[str, str]] = lambda row, env: env
        # A kernel whose node is gone: its service ends the workload and shuts the kernel down.
        self.on_kernel_lost: Callable[[int, str], None] = lambda workload_id, reason: None
        self._inventory_checked: int | None = None  # the inventory version placements were last checked against
        self._lost_nodes: tuple[int | None, set[str]] = (None, set())  # (inventory version, lost nodes)
        self._times_limit = 1000  # remembered workloads before the ended ones are forgotten
        # Ticks run in a worker thread; hooks that reach asyncio objects go through this (see loop.py).
        self.call_on_loop: Callable[..., None] = lambda callback, *args: callback(*args)
        self._queues = queue_policies(catalog)
        self._tenants = tenant_quotas(catalog)
        self.ticks = TickLog()
        # What the engine sees, kept current at the cost of what changed (see reflector.py).
        self._workloads = WorkloadReflector(repository, SCHEDULED_STATES, self._engine_workload,
                                            track_changes=engine_process is not None)
        self._node_states = NodeStates(node_state)
        self._status: QueueStatus | None = None
        self._waits: dict[str, list[float]] = {}
        self._waits_read_at = float("-inf")
        self.inadmissible = InadmissibleWorkloads(repository)
        self._exposed: frozenset[tuple[str, str]] | None = None  # (tenant, service) given a network name

    def waiting(self, workload_id: int) -> Pending | None:
        """A waiting workload's place, blockers and ETA, the ETA as wall time (for people)."""
        pending = self.pending.get(workload_id) or self.inadmissible.waiting(workload_id)
        if pending is None and (held := self.held.get(workload_id)) is not None:
            return Pending(workload_id, held.position, held.blockers, held_by=held.by)
        if pending is None or pending.eta is None:
            return pending
        return replace(pending, eta=self.times.to_wall(pending.eta))

    def paths(self, workload_id: int) -> JobPaths:
        return JobPaths(self.work_dir / "jobs" / str(workload_id))

    # -- start-up ----------------------------------------------------------------------------

    def reconcile(self) -> None:
        """Bring the store in line with reality after a (possibly unclean) stop of the server."""
        if self.engine_process is not None:
            self.engine_process.start()  # it loads the engine meanwhile; the first tick sends it everything
        for row in [r for kind in RUN_BY_BACKEND for r in self.repository.workloads(states=ACTIVE_STATES, kind=kind)]:
            attempts = self.repository.attempts(row.id)
            current = attempts[-1] if attempts and attempts[-1].ended_at is None else None
            if current is not None and row.state == "starting":
                # The server died during the launch, before its `started` record: some of a gang's replicas may
                # run, recorded or not, and the rest never will. Every one is stopped and the attempt starts again
                # whole (a part of a gang adopted would run alone; one of no processes would read as ended well).
                stopped = self.backend.stop_cut_off(Path(current.log_path).parent)
                self.repository.update_attempt(current.id, ended_at=self.wall(), outcome="unlaunched",
                                               reason=f"the server restarted during its launch; {stopped} process "
                                                      "group(s) it had started were stopped")
                current = None
            if row.state == "admitted" or current is None:
                self._release(row, "queued", "requeued", "the server restarted before the workload started")
                continue
            handles = [ProcessHandle.from_json(p) for p in current.processes]
            self._running[row.id] = RunningAttempt(handles, current.id)
            alive = self.backend.adopt(handles, Path(current.log_path))
            self.repository.append_event(
                type="adopted" if alive else "reconciling", workload_id=row.id,
                reason=f"server restarted; {len(alive)}/{len(handles)} processes still alive",
            )
        held = [handle.pod for running in self._running.values() for handle in running.handles if handle.pod]
        for orphan in self.backend.collect_orphans(held):
            self.repository.append_event(type="orphan-deleted", reason=f"pod {orphan} held by no workload was deleted")

    def _refresh_nodes(self) -> None:
        """Nodes the backend discovers (a cluster's) join, change or leave the inventory as they do."""
        # A hub server's pod is made by the hub, not the backend: its placement is the engine's to count.
        placed_servers = frozenset() if self.backend.runs_here else frozenset(
            row.id for row, _workload in self._workloads.entries() if row.kind == "server" and row.state in ACTIVE_STATES)
        seen = self.backend.poll_nodes(placed_servers)
        if seen is not None:
            self.inventory.refresh(seen.capabilities, seen.states, seen.held)

    # -- the loop body -----------------------------------------------------------------------

    def tick(self) -> Decisions:
        now = self.clock()
        at, started = time.time(), time.perf_counter()  # for the tick log only; decisions use ``now``
        changed = self._workloads.sync()
        self._refresh_nodes()
        synced = time.perf_counter()
        self._monitor(now)
        monitored = time.perf_counter()
        changed += self._workloads.sync()  # what the monitor just recorded (exits, stops)
        if not self.backend.runs_here and (changed or self._exposed is None):
            self._expose()  # a cluster's names for services; on this machine the endpoint is the only way in
        # Inadmissible work joins the cycle only after the inventory changed: a tick costs the same
        # however much of it waits.
        examined = self.inadmissible.due(self.inventory.version)
        extra = [self._engine_workload(row) for row in examined]
        if self.engine_process is None:
            snapshot = self._snapshot(now, extra, sync=False)
            snapshotted = time.perf_counter()
            decisions = self.engine.cycle(snapshot)
            running, pending = len(snapshot.running), len(snapshot.pending)
        else:
            reply = self.engine_process.call(self._delta, Cycle(now, extra))
            snapshotted = monitored + reply.delta_s
            decisions, running, pending = reply.value.decisions, reply.value.running, reply.value.pending
        decided = time.perf_counter()
        self._apply(decisions, now, examined)
        self.pending = dict(decisions.pending)
        self.last_decisions = decisions
        # Synced again first: the views then show this cycle's own admissions and releases.
        self._publish_status(refresh_waits=bool(decisions.admissions))
        ended = time.perf_counter()
        self.ticks.record(TickTiming(
            at=at, monitor_s=monitored - synced, snapshot_s=(synced - started) + (snapshotted - monitored),
            engine_s=decided - snapshotted, apply_s=ended - decided, total_s=ended - started,
            running=running, pending=pending, admitted=len(decisions.admissions),
            changed=changed,
        ))
        return decisions

    def queue_status(self) -> QueueStatus:
        """How busy each queue is, as of the last tick (before the first one, as of now)."""
        return self._status or self._publish_status(refresh_waits=True)

    def _publish_status(self, *, refresh_waits: bool) -> QueueStatus:
        wall = self.wall()
        self._workloads.sync()  # what this tick recorded: the sums describe the state it left
        if refresh_waits or wall - self._waits_read_at >= WAITS_REFRESH_S:
            self._waits, self._waits_read_at = self.repository.waits(since=wall - WAIT_WINDOW_S), wall
        self._status = QueueStatus.of((row for row, _workload in self._workloads.entries()), self._waits, at=wall,
                                      also_pending=self.repository.count_by_queue(INADMISSIBLE))
        return self._status

    def _engine_workload(self, row: WorkloadRow) -> Workload:
        return engine_workload(row, self.catalog.template(row.template), 3600.0, self.times)

    def _scheduled(self, row: WorkloadRow, workload: Workload) -> MirroredWorkload:
        """How a scheduled workload enters a snapshot: holding capacity, or waiting (and from when)."""
        if row.state in ACTIVE_STATES:
            return MirroredWorkload(workload, running=True)
        return MirroredWorkload(workload, running=False,
                                not_before=self.times.steady(row.id, "not_before", row.not_before))

    def _snapshot(self, now: float, extra_pending: list | None = None, *, sync: bool = True) -> Snapshot:
        """A complete snapshot for one cycle, from copies refreshed only where the store changed."""
        if sync:
            self._workloads.sync()
        running, pending = [], []
        for row, workload in self._workloads.entries():
            entry = self._scheduled(row, workload)
            if entry.running:
                running.append(workload)
            elif entry.not_before is None or entry.not_before <= now:
                pending.append(workload)
        return Snapshot(
            now=now,
            nodes=self._node_states.of([view for view in self.inventory.nodes() if view.flavor is not None]),
            queues=self._queues,
            tenants=self._tenants,
            running=running,
            pending=pending + list(extra_pending or ()),
        )

    def _delta(self, full: bool) -> SnapshotDelta:
        """What the engine process's mirror lacks: everything when ``full`` (a new child), else the
        workloads re-read since the last delta, and the nodes only when the inventory changed."""
        replaced, changed, gone = self._workloads.take_changes(everything=full)
        nodes = self._node_states.of([view for view in self.inventory.nodes() if view.flavor is not None])
        send_nodes = full or self._node_states.version != self._nodes_sent
        self._nodes_sent = self._node_states.version
        return SnapshotDelta(
            replace_workloads=replaced, workloads=[self._scheduled(row, workload) for row, workload in changed],
            gone=gone, nodes=nodes if send_nodes else None,
            queues=self._queues if full else None, tenants=self._tenants if full else None,
        )

    def dry_run(self, now: float, extra_pending: list | None = None, *,
                pending_of: frozenset[int] | None = None) -> Decisions:
        """A cycle over the current state (plus hypothetical workloads) that changes nothing."""
        return self.dry_runs(now, [list(extra_pending or ())], pending_of=pending_of)[0][0]

    def dry_runs(self, now: float, extra_pending: list[list[Workload]], *, capacity: bool = False,
                 pending_of: frozenset[int] | None = None) -> tuple[list[Decisions], dict | None]:
        """One cycle that changes nothing per set of hypothetical workloads, and with ``capacity`` each
        flavor's (total, free) capacity; ``pending_of``: whose pending entries the decisions keep (None:
        all). Blocks for as long as the cycles take: call it off the event loop."""
        self._workloads.sync()  # the store is read here, not while the engine process is held
        if self.engine_process is None:
            decisions = [only_pending_of(self.engine.cycle(self._snapshot(now, extra, sync=False)), pending_of)
                         for extra in extra_pending]
            return decisions, free_capacity(self._snapshot(now, sync=False)) if capacity else None
        request = DryRuns(now, extra_pending, capacity, None if pending_of is None else frozenset(pending_of))
        reply = self.engine_process.call(self._delta, request).value
        return reply.decisions, reply.capacity

    def capacity(self, now: float) -> dict:
        """Per flavor, (total, free) capacity right now."""
        return self.dry_runs(now, [], capacity=True)[1]

    def close(self) -> None:
        """Stop the engine process, if cycles run in one (after the loop has stopped ticking)."""
        if self.engine_process is not None:
            self.engine_process.close()

    # -- apply decisions ---------------------------------------------------------------------

    def _apply(self, decisions: Decisions, now: float, examined: Sequence[WorkloadRow] = ()) -> None:
        # Running work the engine found on a vanished node or device takes the same path as the
        # service's own check of placements against the inventory.
        self.lose([(lost.workload, lost.reason) for lost in decisions.lost], now)
        # Before admissions: a workload the inventory can hold again goes back to queued first.
        for row in self.inadmissible.apply(decisions, list(examined)):
            if row.kind == "kernel":
                self.on_kernel_inadmissible(row.id)
        for escalation in decisions.escalations:
            self.repository.update_workload(
                escalation.workload, event="escalated",
                reason=f"waited {int(escalation.waited_s)} s, past its queue's max wait: {escalation.action}",
                data={"action": escalation.action, "priority_boost": escalation.priority_boost},
                escalated=True, priority_boost=escalation.priority_boost,
            )
        for preemption in decisions.preemptions:
            victim = self.repository.workload(preemption.victim)
            preemptor = self.repository.workload(preemption.preemptor)
            grace = int(preemption.grace_deadline - now)
            why = {"priority": f"preempted by {preemptor.queue} workload {preemptor.id}",
                   "reservation": f"capacity reserved for queue {preemptor.queue} taken back by workload {preemptor.id}",
                   "reclaim": f"tenant {preemptor.tenant} reclaimed its lent quota for workload {preemptor.id}"}
            deadline = self.times.to_wall(preemption.grace_deadline)
            data = {"preemptor": preemptor.id, "reason": preemption.reason, "grace_deadline": deadline}
            stopped = self.repository.update_workload_if(
                victim.id, may_stop, event="preempting",
                reason=f"{why[preemption.reason]} (grace {grace} s), will be requeued",
                data=data, stopping="preempt", preempting_until=deadline, preempted_for=preemptor.id,
            )
            if stopped is None:
                # Stopping already, by a cancel above all (one may have come after this cycle's snapshot):
                # that stop stands; the victim still makes room for this preemptor.
                current = self.repository.workload(victim.id)
                already = "cancelled" if current.stopping == "cancel" else f"stopped ({current.stopping})"
                self.repository.update_workload_if(
                    victim.id, lambda row: row.state in ACTIVE_STATES, event="preempting",
                    reason=f"{why[preemption.reason]}; it is being {already} already", data=data,
                    preempted_for=preemptor.id,
                )
                continue
            self.times.steady(victim.id, "preempting_until", deadline)
            self._signal_stop(victim.id)
            self.repository.record_audit(actor="scheduler", action="workload.preempt", target=f"workload/{victim.id}",
                                         outcome="done", detail={**data, "tenant": victim.tenant,
                                                                 "why": why[preemption.reason]})
        for admission in decisions.admissions:
            placement = admission.placement
            row = self.repository.workload(admission.workload)
            total = engine_workload(row, None, 0).request.total
            row = self.repository.update_workload_if(
                row.id, lambda current: current.state in QUEUED_STATES, event="admitted",
                reason=f"placed on {', '.join(sorted(set(placement.nodes)))} ({placement.flavor})"
                + (", borrowing quota" if placement.borrowing else "")
                + (", on reserved capacity (preemptible)" if placement.on_reservation else ""),
                data=placement_to_json(placement),
                state="admitted", flavor=placement.flavor, node=placement.slots[0].node,
                placement=placement_to_json(placement), held_cpu_milli=total.cpu, held_memory_mib=total.mem,
                held_device_milli=total.dev, admitted_at=self.wall(), not_before=None, preempting_until=None,
                preempted_for=None, stopping=None,
            )
            if row is None:
                continue  # cancelled since the snapshot: nothing was taken, the next cycle knows
            if row.kind in RUN_BY_BACKEND:
                self._start(row, now)
            else:
                self.on_kernel_admitted(row.id)  # its provisioner, waiting for this placement, starts it

    def preempt_by_admin(self, workload_id: int, admin: str) -> dict:
        """Evict a running workload by hand; its queue's grace period and requeue rules apply."""
        row = self.repository.workload(workload_id)
        grace = self._grace(row)
        deadline = self.wall() + grace
        stopped = self.repository.update_workload_if(
            workload_id, may_stop, event="preempting",
            reason=f"preempted by platform admin {admin} (grace {grace} s), will be requeued",
            stopping="preempt", preempting_until=deadline,
        )
        if stopped is None:  # already stopping (a cancel always wins): that stop stands
            row = self.repository.workload(workload_id)
            return {"id": workload_id, "stopping": row.stopping, "grace_deadline": row.preempting_until}
        self.times.steady(workload_id, "preempting_until", deadline)
        self._signal_stop(workload_id)
        return {"id": workload_id, "stopping": "preempt", "grace_deadline": deadline}

    def _grace(self, row: WorkloadRow) -> float:
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
            # The live workloads are the scheduled ones, which the reflector holds, and the inadmissible
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
                    self._finish(workload_id, now, "cancelled", current.reason or "cancelled", metrics)
                continue
            self._finish(workload_id, now, "lost", reason, metrics)

    # -- start -------------------------------------------------------------------------------

    def _start(self, row: WorkloadRow, now: float) -> None:
        """Launch every replica; whatever goes wrong, the attempt ends failed and the devices are released."""
        try:
            self._launch(row, now)
        except Exception as exc:
            unavailable = isinstance(exc, LaunchUnavailable)
            log.warning("jupyter-hetero: workload %s could not start: %s", row.id, exc,
                        exc_info=not isinstance(exc, (OSError, LaunchUnavailable)))
            running = self._running.get(row.id)
            if running is not None:
                running.kill(self.backend)
            self._finish(row.id, now, "unlaunched" if unavailable else "failed", f"could not start: {exc}")

    def _launch(self, row: WorkloadRow, now: float) -> None:
        template = self.catalog.template(row.template)
        placement = placement_from_json(row.placement)
        number = row.attempts + 1
        paths = self.paths(row.id)
        attempt_dir = paths.attempt(number)
        self.repository.update_workload(row.id, event="starting", reason=f"attempt {number}", state="starting",
                                        attempts=number)
        for folder in (attempt_dir, paths.checkpoints, paths.outputs):
            folder.mkdir(parents=True, exist_ok=True)
        queue = self.catalog.queue(row.queue)
        checkpoint = paths.newest_checkpoint() if queue and queue.failure.resume_from_checkpoint else None
        started = self.wall()
        attempt = self.repository.add_attempt(AttemptRow(
            workload_id=row.id, number=number, node=placement.slots[0].node, placement=row.placement, processes=[],
            started_at=started, log_path=str(attempt_dir / "log.txt"), metrics={},
        ))
        running = self._running[row.id] = RunningAttempt([], attempt.id)
        argv = runner_argv(row.spec, attempt_dir)
        # A service's replica listens where PORT says (serving platforms' convention); its endpoint finds it there.
        port = self.backend.service_port() if row.kind == "service" else None
        for replica, slot in enumerate(placement.slots):
            env, measured = self.replica_environment(row, placement.flavor, slot, replica, len(placement.slots),
                                                     attempt=number, checkpoint=checkpoint)
            if port is not None:
                env["PORT"] = str(port)
            running.handles.append(self.backend.launch(Launch(
                workload_id=row.id, attempt=number, replica=replica, node=slot.node, argv=argv,
                env=self.seal_environment(row, env), cwd=Path(row.spec.get("cwd") or attempt_dir),
                log_path=attempt_dir / "log.txt", exit_path=attempt_dir / f"exit-{replica}.json",
                devices=tuple(index for index, _milli, _mem in slot.devices), measurable=bool(measured), family=measured,
                placed=self.placed(row, placement.flavor, slot, len(placement.slots), port=port),
            )))
        # Recorded once every replica runs: a restart adopts only an attempt whose launch was recorded whole (the
        # `started` below); one cut off before that is found by its folder and stopped (see reconcile).
        handles = running.handles
        self.repository.update_attempt(attempt.id, processes=[h.to_json() for h in handles])
        image = template.variant_for(self.inventory.node(placement.slots[0].node).capability.family).image \
            if template and self.inventory.node(placement.slots[0].node) else None
        self.repository.update_workload(
            row.id, event="started",
            reason=f"attempt {number} running as {', '.join(h.label for h in handles)}"
            + (f", resuming from {checkpoint[0].name}" if checkpoint else ""),
            data={"attempt": number, "pids": [h.pid for h in handles], "image": image,
                  **({"pods": [h.pod for h in handles]} if any(h.pod for h in handles) else {}),
                  "resume_from": str(checkpoint[0]) if checkpoint else None,
                  **({"port": port} if port is not None else {})},
            state="running", started_at=started, **({"spec": {**row.spec, "port": port}} if port is not None else {}),
        )
        self.times.steady(row.id, "started_at", started)

    def replica_environment(self, row: WorkloadRow, flavor: str, slot, replica: int, replicas: int, *,
                            attempt: int, checkpoint: tuple[Path, float] | None = None) -> tuple[dict[str, str], str]:
        """One replica's environment (variant env, the job's env, device pinning, HETERO_*), and the
        family whose vendor tool measures its devices ("" where none can: an emulated or CPU-only node)."""
        template = self.catalog.template(row.template)
        view = self.inventory.node(slot.node)
        family = view.capability.family if view else None
        variant = template.variant_for(family) if (template and family) else None
        paths = self.paths(row.id)
        env = {
            **(variant.env if variant else {}),
            **row.spec.get("env", {}),
            # A device plugin (the Kubernetes backend's) makes a replica's devices visible itself.
            **(device_environment(family.value if family else "cpu", slot.devices) if self.backend.runs_here
               else {}),
            "HETERO_WORKLOAD_ID": str(row.id),
            "HETERO_TENANT": row.tenant,
            "HETERO_USER": row.user,
            "HETERO_QUEUE": row.queue,
            "HETERO_TEMPLATE": row.template,
            "HETERO_FLAVOR": flavor,
            "HETERO_NODE": slot.node,
            "HETERO_ATTEMPT": str(attempt),
            "HETERO_REPLICA": str(replica),
            "HETERO_REPLICAS": str(replicas),
            "HETERO_CHECKPOINT_DIR": str(paths.checkpoints),
            "HETERO_OUTPUT_DIR": str(paths.outputs),
            "HETERO_RESUME_FROM": str(checkpoint[0]) if checkpoint else "",
            "HETERO_EMULATED": "1" if view and view.capability.emulated else "0",
            "HETERO_FAMILY": family.value if family else "cpu",
            "HETERO_IMAGE": variant.image if variant else "",
            "PYTHONUNBUFFERED": "1",
        }
        measurable = view is not None and not view.capability.emulated and family is not None and family.value != "cpu"
        return env, family.value if measurable else ""

    def placed_environment(self, row: WorkloadRow) -> dict[str, str]:
        """The environment of a workload its caller starts once placed (a kernel, a hub user's server):
        its one replica's, and where it was placed."""
        placement = placement_from_json(row.placement)
        env, _measured = self.replica_environment(row, placement.flavor, placement.slots[0], 0, 1,
                                                    attempt=row.attempts or 1)
        env["HETERO_PLACEMENT"] = f"{placement.flavor} x{len(placement.slots[0].devices) or 0}"
        return env

    def placed(self, row: WorkloadRow, flavor: str, slot, replicas: int, *, port: int | None = None) -> Placed:
        """What a backend that sizes and labels its units needs to know of one replica (``port``: a service's)."""
        template = self.catalog.template(row.template)
        view = self.inventory.node(slot.node)
        accelerator = view.capability.accelerator if view else None
        variant = template.variant_for(view.capability.family) if (template and view) else None
        queue = self.catalog.queue(row.queue)
        request = engine_workload(row, None, 0).request
        kueue_queue, kueue_priority_class = pod_admission(queue)
        return Placed(
            kind=row.kind, tenant=row.tenant, user=row.user, queue=row.queue, template=row.template, flavor=flavor,
            replicas=replicas, image=variant.image if variant else "", cpu_milli=request.cpu, memory_mib=request.mem,
            devices=tuple((milli, mem) for _index, milli, mem in slot.devices), accelerator=accelerator,
            priority_class=queue.priority_class if queue else None, kueue_queue=kueue_queue,
            kueue_priority_class=kueue_priority_class,
            serving=Serving(row.spec["service"], row.spec.get("revision", 1), port, row.spec["readiness_path"])
            if port is not None else None,
        )

    # -- services ----------------------------------------------------------------------------

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
            used = running.latest.get("gpu_memory_mib")
            row = self._workloads.row(workload_id)
            if used is None or row is None or not row.placement:
                continue
            placement = placement_from_json(row.placement)
            view = self.inventory.node(placement.slots[0].node)
            whole = view.capability.accelerator.memory_mib if view and view.capability.accelerator else 0
            limit = sum(mem or whole for slot in placement.slots for _index, _milli, mem in slot.devices)
            found.append((workload_id, row.tenant, used, limit))
        return found

    def _expose(self) -> None:
        """Every service with replicas to run keeps its network name in the cluster (a Kubernetes Service)."""
        services = frozenset((row.tenant, row.spec["service"]) for row, _workload in self._workloads.entries()
                             if row.kind == "service")
        if services == self._exposed:
            return
        try:
            self.backend.expose(services)
        except Exception as exc:  # the API server refused or is away: tried again next tick
            log.warning("jupyter-hetero: could not give services their network names: %s", exc)
            self._exposed = None
            return
        self._exposed = services

    # -- monitor -----------------------------------------------------------------------------

    def _signal_stop(self, workload_id: int) -> None:
        running = self._running.get(workload_id)
        if running is not None:
            running.signal_stop(self.backend)

    def _monitor(self, now: float) -> None:
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
                self._watch(row, running, alive, now, lost_nodes, held=wait is not None)
                continue
            self._judge(row, running, now)
        self.held = held

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

    def _watch(self, row: WorkloadRow, running: RunningAttempt, alive: list[ProcessHandle], now: float,
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
                                 now + self._grace(row))
        if row.stopping is not None:
            self._signal_stop(row.id)  # a stop recorded elsewhere (a cancel) or before a restart
        deadline = self.times.steady(row.id, "preempting_until", row.preempting_until)
        if row.stopping is not None and deadline is not None and now >= deadline and not running.killed:
            running.kill(self.backend, alive)
        note = running.sample(self.backend, alive)
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
        self._signal_stop(row.id)
        return stopped

    def _judge(self, row: WorkloadRow, running: RunningAttempt, now: float) -> None:
        """Every replica has exited: decide the outcome and what the queue's policy does next."""
        exits = [running.exit_of(self.backend, handle) for handle in running.handles]
        codes = [e.code for e in exits]
        metrics = running.metrics(exits)
        stopping = row.stopping
        if stopping == "cancel":
            self._finish(row.id, now, "cancelled", row.reason or "cancelled", metrics)
        elif stopping == "preempt":
            self._finish(row.id, now, "preempted", "preempted; requeued", metrics)
        elif stopping == "time-limit":
            self._finish(row.id, now, "failed", f"time limit of {int(row.time_limit_s or 0)} s reached", metrics,
                         retryable=False)
        elif stopping == "replica-failed":
            self._finish(row.id, now, "failed", row.reason or "a replica failed", metrics, exit_code=running.failed_code)
        elif stopping == "node-lost" or any(code is None for code in codes):
            vanished = next((e.reason for e in exits if e.code is None and e.reason), "the process vanished")
            self._finish(row.id, now, "lost", "its node was lost" if stopping else vanished, metrics)
        elif all(code == 0 for code in codes):
            self._finish(row.id, now, "succeeded", "exit code 0", metrics)
        else:
            bad = next(e for e in exits if e.code != 0)
            self._finish(row.id, now, "failed", f"exit code {bad.code}" + (f": {bad.reason}" if bad.reason else ""),
                         metrics)

    def _finish(self, workload_id: int, now: float, outcome: str, reason: str, metrics: dict | None = None, *,
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
        if running is not None:
            self.repository.update_attempt(
                running.attempt_id, ended_at=self.wall(), outcome=outcome, reason=reason, archive_path=str(archive),
                exit_code=exit_code if exit_code is not None
                else next((c for c in (metrics or {}).get("exit_codes", []) if c not in (None, 0)), 0)
                if outcome in ("succeeded", "failed") else None,
                metrics=metrics or {},
            )
        queue = self.catalog.queue(row.queue)
        step = after_attempt(row, outcome, reason, queue.failure if queue else None, retryable=retryable,
                             now_wall=self.wall())
        self._release(row, step.state, step.event, step.reason, final=step.final, said_first=step.said_first,
                      counts=step.counts,
                      not_before=None if step.retry_in_s is None else self.times.to_wall(now + step.retry_in_s))

    def _release(self, row: WorkloadRow, state: str, event: str, reason: str, *, final: bool = False,
                 not_before: float | None = None, said_first: tuple[tuple[str, str], ...] = (),
                 counts: dict | None = None) -> None:
        """Free what the attempt held and record what follows, in one write: what ended the attempt
        (``said_first``: preempted, lost) is said in that same write, so no reader sees a row that says it
        was preempted still holding its devices."""
        wall = self.wall()
        # Back to the queue only if no cancel came while the attempt ended; an ending is written as is. A backoff's
        # end goes in the event too: the history then says from when the workload waited to be admitted.
        released = self.repository.update_workload_if(
            row.id, None if final else may_requeue, event=event, reason=reason, said_first=said_first,
            data={"not_before": not_before} if not_before is not None else None, state=state, placement=None, node=None,
            flavor=None,
            held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, stopping=None, preempting_until=None,
            preempted_for=None, not_before=not_before, finished_at=wall if final else None,
            started_at=None if not final else row.started_at, admitted_at=None if not final else row.admitted_at,
            escalated=False if not final else row.escalated, priority_boost=0 if not final else row.priority_boost,
            **(counts or {}),
        )
        if released is None:
            current = self.repository.workload(row.id)
            self._release(current, "cancelled", "cancelled", current.reason or "cancelled", final=True,
                          said_first=said_first)
            return
        if final:
            self.times.forget(row.id)
