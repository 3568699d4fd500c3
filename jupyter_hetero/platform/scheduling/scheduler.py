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

from ...backends.base import AdmissionWait, Backend, Placed, ProcessHandle
from ...catalog import Catalog
from ...engine import Decisions, Engine, Pending, Snapshot, Workload, free_capacity
from ...engine_inputs import (
    engine_workload,
    node_state,
    placement_to_json,
    queue_policies,
    tenant_quotas,
)
from ...store import ACTIVE_STATES, INADMISSIBLE, QUEUED_STATES, Repository
from ...store.tables import WorkloadRow
from ..clock import Clock, SteadyTime
from ..live_catalog import LiveCatalog
from ..workloads.jobfiles import JobPaths
from .attempts import RunningAttempt
from .engine_mirror import MirroredWorkload, SnapshotDelta
from .catalog_switch import strand_waiting, stranded_by
from .engine_process import Cycle, DryRuns, EngineProcess, only_pending_of
from .holds import Holds
from .inadmissible import InadmissibleWorkloads
from .inventory import Inventory
from .launch import Launcher
from .monitor import METRIC_INTERVAL_S, RUN_BY_BACKEND, AttemptMonitor
from .preempting import Preempter
from .queue_status import WAIT_WINDOW_S, QueueStatus
from .retention import METRIC_RETENTION_S, MetricRetention
from .workload_copies import NodeStates, TemplateLookups, WorkloadCopies
from .ticks import TickLog, TickTiming
from .waiting import BlockerTrail

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)

# Seconds between reads of the last day's queue waits when no tick admits anything (a tick that admits
# reads them again at once).
WAITS_REFRESH_S = 30.0
# Workloads the engine sees every cycle: waiting ones and those holding capacity. Inadmissible ones are
# not among them; they join a cycle only after the inventory changed (see inadmissible.py).
SCHEDULED_STATES = (*QUEUED_STATES, *ACTIVE_STATES)


class Scheduler:
    """Drives the engine over the store and a backend; one instance per server."""

    @property
    def catalog(self) -> Catalog:
        """The catalog as of now: a reload switches it between two ticks (see platform/live_catalog.py)."""
        return self.live_catalog.current

    @catalog.setter
    def catalog(self, catalog: Catalog) -> None:
        """Another catalog at once (a scheduler used on its own); a server's reload stages one for the next tick."""
        self.live_catalog.replace(catalog)

    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, inventory: Inventory,
                 backend: Backend, engine: Engine, clock: Clock, work_dir: Path,
                 engine_process: EngineProcess | None = None, metric_interval_s: float = METRIC_INTERVAL_S,
                 metric_retention_s: float = METRIC_RETENTION_S):
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self.inventory = inventory
        self.backend = backend
        self.engine = engine
        # Where cycles run: in this process (None), or in a child fed deltas (see engine_process.py).
        self.engine_process = engine_process
        self._nodes_sent: int | None = None  # the node states' version the engine process holds
        # Stored timestamps are wall time; every comparison and the engine's `now` are scheduler
        # time, which a step of the wall clock does not move (see platform/clock.py).
        self.times = SteadyTime(clock)
        self.clock = self.times.now
        self.wall = clock.wall
        self.work_dir = work_dir
        self.pending: dict[int, Pending] = {}
        self.last_decisions: Decisions | None = None
        self._running: dict[int, RunningAttempt] = {}
        self.on_kernel_admitted: Callable[[int], None] = lambda workload_id: None
        # A kernel no node could ever hold: its start, waiting for a placement, fails at once with the reason.
        self.on_kernel_inadmissible: Callable[[int], None] = lambda workload_id: None
        # Set by the platform: a replica's full environment (a minimal base and its credential), never the server's.
        self.seal_environment: Callable[[WorkloadRow, dict[str, str]], dict[str, str]] = lambda row, env: env
        # A kernel whose node is gone: its service ends the workload and shuts the kernel down.
        self.on_kernel_lost: Callable[[int, str], None] = lambda workload_id, reason: None
        # Ticks run in a worker thread; hooks that reach asyncio objects go through this (see loop.py).
        self.call_on_loop: Callable[..., None] = lambda callback, *args: callback(*args)
        self._queues = queue_policies(self.catalog)
        self._tenants = tenant_quotas(self.catalog)
        self._catalog_version = self.live_catalog.version  # the catalog the queues and tenants above come from
        self._resync = False  # the engine process's next delta is a full one (its queues and tenants changed)
        self.ticks = TickLog()
        # What the engine sees, kept current at the cost of what changed (see workload_copies.py).
        self._templates = TemplateLookups()
        self._workloads = WorkloadCopies(repository, SCHEDULED_STATES, self._engine_workload,
                                            track_changes=engine_process is not None)
        self._node_states = NodeStates(node_state)
        self._status: QueueStatus | None = None
        self._waits: dict[str, list[float]] = {}
        self._waits_read_at = float("-inf")
        self.inadmissible = InadmissibleWorkloads(repository)
        # Jobs waiting for others to end, and arrays' tasks past their limit: out of every cycle (see holds.py).
        self.holds = Holds(repository, self.inadmissible)
        self._held: dict[int, Pending] = {}
        # Each waiting workload's top blocker over time, as `waiting` events (see waiting.py).
        self.blocker_trail = BlockerTrail(repository)
        self._exposed: frozenset[tuple[str, str]] | None = None  # (tenant, service) given a network name
        # The hooks above are read when called, not here: the platform and the kernels' service set them later.
        self.monitor = AttemptMonitor(
            catalog=self.live_catalog, repository=repository, inventory=inventory, backend=backend, times=self.times,
            wall=self.wall, paths=self.paths, running=self._running, workloads=self._workloads,
            inadmissible=self.inadmissible,
            on_kernel_lost=lambda workload_id, reason: self.on_kernel_lost(workload_id, reason),
            metric_interval_s=metric_interval_s)
        # Ended workloads' old samples go in bounded batches after a tick, in this thread (see retention.py).
        self.retention = MetricRetention(repository, retention_s=metric_retention_s, wall=self.wall, now=self.clock)
        self.launcher = Launcher(
            catalog=self.live_catalog, repository=repository, inventory=inventory, backend=backend, times=self.times,
            wall=self.wall, paths=self.paths, running=self._running,
            seal_environment=lambda row, env: self.seal_environment(row, env), finish=self.monitor.finish)
        self.preempter = Preempter(repository=repository, times=self.times, monitor=self.monitor, wall=self.wall)

    @property
    def held(self) -> dict[int, AdmissionWait]:
        """Running workloads whose replicas the cluster's own admission (Kueue) still holds, as of the last tick."""
        return self.monitor.held

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
            ended = None
            if current is not None and row.state == "starting":
                # The server died during the launch, before its `started` record: some of a gang's replicas may
                # run, recorded or not, and the rest never will. Every one is stopped and the attempt starts again
                # whole (a part of a gang adopted would run alone; one of no processes would read as ended well).
                stopped = self.backend.stop_cut_off(Path(current.log_path).parent)
                ended = (current.id, dict(ended_at=self.wall(), outcome="unlaunched",
                                          reason=f"the server restarted during its launch; {stopped} process "
                                                 "group(s) it had started were stopped"))
                current = None
            if row.state == "admitted" or current is None:
                self.monitor.release(row, "queued", "requeued", "the server restarted before the workload started",
                                     ended=ended)
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
        self._take_up_catalog()  # between two ticks, never during one
        now = self.clock()
        at, started = time.time(), time.perf_counter()  # for the tick log only; decisions use ``now``
        changed = self._workloads.sync()
        self._refresh_nodes()
        synced = time.perf_counter()
        self.monitor.watch(now)
        monitored = time.perf_counter()
        changed += self._workloads.sync()  # what the monitor just recorded (exits, stops)
        # Inadmissible work joins the cycle only after the inventory changed: a tick costs the same
        # however much of it waits.
        examined = [row for row in self.inadmissible.due(self.inventory.version)
                    if stranded_by(self.catalog, row) is None]  # a reload's strays wait for the next reload
        refreshed, examined = self._hold(examined)
        changed += refreshed
        if not self.backend.runs_here and (changed or self._exposed is None):
            self._expose()  # a cluster's names for services; on this machine the endpoint is the only way in
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
        self.holds.after_cycle(decisions)
        self.pending = {**decisions.pending, **self._held}
        self.blocker_trail.observe(self.pending, now)  # one write, only when some top blocker changed
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
        self.retention.after_tick()  # after the timing: a prune's batch is not the cycle's cost
        return decisions

    def _hold(self, examined: list[WorkloadRow]) -> tuple[int, list[WorkloadRow]]:
        """Hold the jobs whose awaited workloads have not ended as asked (fail those whose never will) and the tasks
        past their array's limit; the rows read again (the failed ones leave the copies), and the examined
        inadmissible rows the cycle may take (see holds.py)."""
        held, failed, examined = self.holds.hold((row for row, _workload in self._workloads.entries()), examined,
                                                 self.wall())
        # The engine process's mirror holds each copy with its start time: those whose hold changed are sent again.
        self._workloads.touch(set(held).symmetric_difference(self._held))
        self._held = held
        return self._workloads.sync() if failed else 0, examined

    def _take_up_catalog(self) -> None:
        """A reload's catalog becomes current: the engine's queues and tenants, every workload's engine copy (its
        template's constraints), the nodes' flavors and the engine process's mirror follow it; waiting work whose
        queue, tenant or template it lacks becomes inadmissible (see catalog_switch.py). Running work stays."""
        self.live_catalog.switch()
        if self.live_catalog.version == self._catalog_version:
            return
        self._catalog_version = self.live_catalog.version
        catalog = self.catalog
        self._queues, self._tenants = queue_policies(catalog), tenant_quotas(catalog)
        self.inventory.remap_flavors()
        stranded, back = strand_waiting(self.repository, catalog)
        for row in stranded:
            if row.kind == "kernel":
                self.on_kernel_inadmissible(row.id)
        self._workloads.relist()
        self.inadmissible.examine_again()  # a quota it exceeded may be larger now
        self._resync = True
        log.info("jupyter-hetero: catalog version %d taken up; %d waiting workloads stranded, %d queued again",
                 self._catalog_version, len(stranded), len(back))

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
        families = tuple(row.request.get("variant_families") or ())
        template, constraints = self._templates.resolve(self.catalog, row.template, families)
        return engine_workload(row, template, 3600.0, self.times, constraints=constraints)

    def _scheduled(self, row: WorkloadRow, workload: Workload) -> MirroredWorkload:
        """How a scheduled workload enters a snapshot: holding capacity, or waiting (and from when)."""
        if row.state in ACTIVE_STATES:
            return MirroredWorkload(workload, running=True)
        if row.id in self._held:  # no candidate until what it awaits has ended as asked
            return MirroredWorkload(workload, running=False, not_before=float("inf"))
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
        full, self._resync = full or self._resync, False
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
            self.preempter.by_engine(preemption, now)
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
                self.launcher.start(row, now)
            else:
                self.on_kernel_admitted(row.id)  # its provisioner, waiting for this placement, starts it

    def preempt_by_admin(self, workload_id: int, admin: str) -> dict:
        """Evict a running workload by hand (see Preempter.by_admin)."""
        return self.preempter.by_admin(workload_id, admin)

    def lose(self, lost: list[tuple[int, str]], now: float) -> None:
        """Workloads that cannot keep their placement are released at once (see AttemptMonitor.lose)."""
        self.monitor.lose(lost, now)

    # -- placed workloads --------------------------------------------------------------------

    def replica_environment(self, row: WorkloadRow, flavor: str, slot, replica: int, replicas: int, *,
                            attempt: int, checkpoint: tuple[Path, float] | None = None) -> tuple[dict[str, str], str]:
        """One replica's environment and the family that measures its devices (see Launcher.replica_environment)."""
        return self.launcher.replica_environment(row, flavor, slot, replica, replicas,
                                                 template=self.catalog.template(row.template), attempt=attempt,
                                                 checkpoint=checkpoint)

    def placed_environment(self, row: WorkloadRow) -> dict[str, str]:
        """The environment of a workload its caller starts once placed (a kernel, a hub user's server)."""
        return self.launcher.placed_environment(row)

    def placed(self, row: WorkloadRow, flavor: str, slot, replicas: int, *, port: int | None = None) -> Placed:
        """What a backend that sizes and labels its units needs to know of one replica (``port``: a service's)."""
        return self.launcher.placed(row, flavor, slot, replicas, template=self.catalog.template(row.template),
                                    port=port)

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
