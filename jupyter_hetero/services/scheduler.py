"""The scheduler loop: watch what runs, ask the engine, record its decisions, then act on them.

    scheduler.reconcile()   # once, at start: re-adopt live processes, requeue what never started
    scheduler.tick()        # on a timer and on every change: monitor -> cycle -> apply

Order matters for restart safety: a decision is written (with its event) before the backend is
told, so a crash between the two leaves a record the next start can act on, never a process
the store does not know about.
"""

from __future__ import annotations

import logging
import os
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..backends.base import Backend, Launch, ProcessHandle
from ..catalog import Catalog
from ..engine import Decisions, Engine, Pending, Snapshot, Workload, free_capacity
from ..store import ACTIVE_STATES, Repository
from ..store.tables import AttemptRow, WorkloadRow
from .environment import device_environment
from .jobfiles import JobPaths, archive_attempt
from .inventory import Inventory
from .snapshot import engine_workload, node_state, placement_from_json, placement_to_json, queue_policies, tenant_quotas
from .reflector import NodeStates, WorkloadReflector
from .ticks import TickLog, TickTiming

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)

# Seconds a stopping workload gets between SIGTERM and SIGKILL when its queue names none.
DEFAULT_GRACE_S = 30
# Seconds between SIGTERM and SIGKILL when a time limit is reached.
TIME_LIMIT_GRACE_S = 10
# Workloads the engine sees: waiting ones and those holding capacity.
SCHEDULED_STATES = ("queued", "preempted", *ACTIVE_STATES)


@dataclass
class _Running:
    handles: list[ProcessHandle]
    attempt_id: int
    peak_rss_mib: float = 0.0
    gpu_utils: list[float] = field(default_factory=list)
    peak_gpu_mib: float = 0.0
    signalled: bool = False  # SIGTERM sent for the current stop
    killed: bool = False


class Scheduler:
    """Drives the engine over the store and a backend; one instance per server."""

    def __init__(self, *, catalog: Catalog, repository: Repository, inventory: Inventory, backend: Backend,
                 engine: Engine, clock: Callable[[], float], work_dir: Path):
        self.catalog = catalog
        self.repository = repository
        self.inventory = inventory
        self.backend = backend
        self.engine = engine
        self.clock = clock
        self.work_dir = work_dir
        self.pending: dict[int, Pending] = {}
        self.last_decisions: Decisions | None = None
        self._running: dict[int, _Running] = {}
        self.on_kernel_admitted: Callable[[int], None] = lambda workload_id: None
        # Ticks run in a worker thread; hooks that reach asyncio objects go through this (see loop.py).
        self.call_on_loop: Callable[..., None] = lambda callback, *args: callback(*args)
        self._queues = queue_policies(catalog)
        self._tenants = tenant_quotas(catalog)
        self.ticks = TickLog()
        # What the engine sees, kept current at the cost of what changed (see reflector.py).
        self._workloads = WorkloadReflector(repository, SCHEDULED_STATES, self._engine_workload)
        self._node_states = NodeStates(node_state)

    def paths(self, workload_id: int) -> JobPaths:
        return JobPaths(self.work_dir / "jobs" / str(workload_id))

    # -- start-up ----------------------------------------------------------------------------

    def reconcile(self) -> None:
        """Bring the store in line with reality after a (possibly unclean) stop of the server."""
        for row in self.repository.workloads(states=ACTIVE_STATES, kind="job"):
            attempts = self.repository.attempts(row.id)
            current = attempts[-1] if attempts and attempts[-1].ended_at is None else None
            if row.state == "admitted" or current is None:
                self._release(row, "queued", "requeued", "the server restarted before the workload started")
                continue
            handles = [ProcessHandle.from_json(p) for p in current.processes]
            self._running[row.id] = _Running(handles, current.id)
            alive = [h for h in handles if self.backend.running(h)]
            self.repository.append_event(
                type="adopted" if alive else "reconciling", workload_id=row.id,
                reason=f"server restarted; {len(alive)}/{len(handles)} processes still alive",
            )

    # -- the loop body -----------------------------------------------------------------------

    def tick(self) -> Decisions:
        now = self.clock()
        at, started = time.time(), time.perf_counter()  # for the tick log only; decisions use ``now``
        changed = self._workloads.sync()
        synced = time.perf_counter()
        self._monitor(now)
        monitored = time.perf_counter()
        changed += self._workloads.sync()  # what the monitor just recorded (exits, stops)
        snapshot = self._snapshot(now, sync=False)
        snapshotted = time.perf_counter()
        decisions = self.engine.cycle(snapshot)
        decided = time.perf_counter()
        self._apply(decisions, now)
        self.pending = dict(decisions.pending)
        self.last_decisions = decisions
        ended = time.perf_counter()
        self.ticks.record(TickTiming(
            at=at, monitor_s=monitored - synced, snapshot_s=(synced - started) + (snapshotted - monitored),
            engine_s=decided - snapshotted, apply_s=ended - decided, total_s=ended - started,
            running=len(snapshot.running), pending=len(snapshot.pending), admitted=len(decisions.admissions),
            changed=changed,
        ))
        return decisions

    def _engine_workload(self, row: WorkloadRow) -> Workload:
        return engine_workload(row, self.catalog.template(row.template), 3600.0)

    def _snapshot(self, now: float, extra_pending: list | None = None, *, sync: bool = True) -> Snapshot:
        """A complete snapshot for one cycle, from copies refreshed only where the store changed."""
        if sync:
            self._workloads.sync()
        running, pending = [], []
        for row, workload in self._workloads.entries():
            if row.state in ACTIVE_STATES:
                running.append(workload)
            elif row.not_before is None or row.not_before <= now:
                pending.append(workload)
        return Snapshot(
            now=now,
            nodes=self._node_states.of([view for view in self.inventory.nodes() if view.flavor is not None]),
            queues=self._queues,
            tenants=self._tenants,
            running=running,
            pending=pending + list(extra_pending or ()),
        )

    def dry_run(self, now: float, extra_pending: list | None = None) -> Decisions:
        """A cycle over the current state (plus hypothetical workloads) that changes nothing."""
        return self.engine.cycle(self._snapshot(now, extra_pending))

    def capacity(self, now: float) -> dict:
        """Per flavor, (total, free) capacity right now."""
        return free_capacity(self._snapshot(now))

    # -- apply decisions ---------------------------------------------------------------------

    def _apply(self, decisions: Decisions, now: float) -> None:
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
            self.repository.update_workload(
                victim.id, event="preempting", reason=f"{why[preemption.reason]} (grace {grace} s), will be requeued",
                data={"preemptor": preemptor.id, "reason": preemption.reason, "grace_deadline": preemption.grace_deadline},
                stopping="preempt", preempting_until=preemption.grace_deadline, preempted_for=preemptor.id,
            )
            self._signal_stop(victim.id)
        for admission in decisions.admissions:
            placement = admission.placement
            row = self.repository.workload(admission.workload)
            total = engine_workload(row, None, 0).request.total
            row = self.repository.update_workload(
                row.id, event="admitted",
                reason=f"placed on {', '.join(sorted(set(placement.nodes)))} ({placement.flavor})"
                + (", borrowing quota" if placement.borrowing else "")
                + (", on reserved capacity (preemptible)" if placement.on_reservation else ""),
                data=placement_to_json(placement),
                state="admitted", flavor=placement.flavor, node=placement.slots[0].node,
                placement=placement_to_json(placement), held_cpu_milli=total.cpu, held_memory_mib=total.mem,
                held_device_milli=total.dev, admitted_at=now, not_before=None, preempting_until=None,
                preempted_for=None, stopping=None,
            )
            if row.kind == "job":
                self._start(row, now)
            else:
                self.on_kernel_admitted(row.id)  # its provisioner, waiting for this placement, starts it

    def preempt_by_admin(self, workload_id: int, admin: str) -> dict:
        """Evict a running workload by hand; its queue's grace period and requeue rules apply."""
        now = self.clock()
        row = self.repository.workload(workload_id)
        queue = self.catalog.queue(row.queue)
        grace = queue.preemption.grace_s if queue else DEFAULT_GRACE_S
        self.repository.update_workload(
            workload_id, event="preempting", reason=f"preempted by platform admin {admin} (grace {grace} s), will be requeued",
            stopping="preempt", preempting_until=now + grace,
        )
        self._signal_stop(workload_id)
        return {"id": workload_id, "stopping": "preempt", "grace_deadline": now + grace}

    # -- start -------------------------------------------------------------------------------

    def _start(self, row: WorkloadRow, now: float) -> None:
        template = self.catalog.template(row.template)
        placement = placement_from_json(row.placement)
        number = row.attempts + 1
        paths = self.paths(row.id)
        attempt_dir = paths.attempt(number)
        for folder in (attempt_dir, paths.checkpoints, paths.outputs):
            folder.mkdir(parents=True, exist_ok=True)
        queue = self.catalog.queue(row.queue)
        checkpoint = paths.newest_checkpoint() if queue and queue.failure.resume_from_checkpoint else None
        attempt = self.repository.add_attempt(AttemptRow(
            workload_id=row.id, number=number, node=placement.slots[0].node, placement=row.placement, processes=[],
            started_at=now, log_path=str(attempt_dir / "log.txt"), metrics={},
        ))
        self.repository.update_workload(row.id, event="starting", reason=f"attempt {number}", state="starting",
                                        attempts=number)
        handles: list[ProcessHandle] = []
        try:
            argv = self._argv(row, attempt_dir)
            for replica, slot in enumerate(placement.slots):
                env, measurable = self.replica_environment(row, placement.flavor, slot, replica, len(placement.slots),
                                                           attempt=number, checkpoint=checkpoint)
                handles.append(self.backend.launch(Launch(
                    workload_id=row.id, attempt=number, replica=replica, node=slot.node, argv=argv,
                    env={**os.environ, **env}, cwd=Path(row.spec.get("cwd") or attempt_dir),
                    log_path=attempt_dir / "log.txt", exit_path=attempt_dir / f"exit-{replica}.json",
                    devices=tuple(index for index, _milli, _mem in slot.devices), measurable=measurable,
                )))
        except OSError as exc:
            for handle in handles:
                self.backend.kill(handle)
            self.repository.update_attempt(attempt.id, processes=[h.to_json() for h in handles])
            self._running[row.id] = _Running(handles, attempt.id, killed=True)
            self._finish(row.id, now, outcome="failed", reason=f"could not start: {exc}")
            return
        self.repository.update_attempt(attempt.id, processes=[h.to_json() for h in handles])
        self._running[row.id] = _Running(handles, attempt.id)
        image = template.variant_for(self.inventory.node(placement.slots[0].node).capability.family).image \
            if template and self.inventory.node(placement.slots[0].node) else None
        self.repository.update_workload(
            row.id, event="started",
            reason=f"attempt {number} running as pid {', '.join(str(h.pid) for h in handles)}"
            + (f", resuming from {checkpoint[0].name}" if checkpoint else ""),
            data={"attempt": number, "pids": [h.pid for h in handles], "image": image,
                  "resume_from": str(checkpoint[0]) if checkpoint else None},
            state="running", started_at=now,
        )

    def _argv(self, row: WorkloadRow, attempt_dir: Path) -> list[str]:
        spec = row.spec
        if "command" in spec:
            return ["command", "--", *spec["command"]]
        if "script" in spec:
            return ["script", spec["script"]["path"], *spec["script"]["args"]]
        if "code" in spec:
            source = attempt_dir / "cell.py"
            source.write_text(spec["code"], encoding="utf-8")
            return ["code", str(source)]
        notebook = spec["notebook"]
        return ["notebook", notebook["path"], "--output", str(attempt_dir / Path(notebook["path"]).name),
                "--parameters", json.dumps(notebook["parameters"])]

    def replica_environment(self, row: WorkloadRow, flavor: str, slot, replica: int, replicas: int, *,
                            attempt: int, checkpoint: tuple[Path, float] | None = None) -> tuple[dict[str, str], bool]:
        """One replica's environment (variant env, the job's env, device pinning, HETERO_*), and
        whether its devices can be measured (a real NVIDIA node rather than an emulated one)."""
        template = self.catalog.template(row.template)
        view = self.inventory.node(slot.node)
        family = view.capability.family if view else None
        variant = template.variant_for(family) if (template and family) else None
        paths = self.paths(row.id)
        env = {
            **(variant.env if variant else {}),
            **row.spec.get("env", {}),
            **device_environment(family.value if family else "cpu", slot.devices),
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
            "HETERO_IMAGE": variant.image if variant else "",
            "PYTHONUNBUFFERED": "1",
        }
        measurable = bool(view and not view.capability.emulated and family is not None and family.value == "nvidia")
        return env, measurable

    # -- monitor -----------------------------------------------------------------------------

    def _signal_stop(self, workload_id: int) -> None:
        running = self._running.get(workload_id)
        if running is not None and not running.signalled:
            running.signalled = True
            for handle in running.handles:
                self.backend.signal_stop(handle)

    def _monitor(self, now: float) -> None:
        lost_nodes = {view.name for view in self.inventory.nodes() if view.state == "lost"}
        watched = [(row, running) for row, _workload in self._workloads.entries()
                   if row.state in ACTIVE_STATES and (running := self._running.get(row.id)) is not None]
        # One look at the process table for every replica (liveness and usage), not one per replica.
        live = self.backend.scan(handle for _row, running in watched for handle in running.handles)
        for row, running in watched:
            alive = [h for h in running.handles if h in live]
            if alive:
                self._watch(row, running, alive, now, lost_nodes)
                continue
            self._judge(row, running, now)

    def _watch(self, row: WorkloadRow, running: _Running, alive: list[ProcessHandle], now: float,
               lost_nodes: set[str]) -> None:
        if row.stopping is None and any(h.node in lost_nodes for h in running.handles):
            row = self.repository.update_workload(row.id, event="node-lost", reason="its node was lost",
                                                  stopping="node-lost", preempting_until=now)
        if row.stopping is None and row.time_limit_s and row.started_at and now >= row.started_at + row.time_limit_s:
            row = self.repository.update_workload(
                row.id, event="time-limit", reason=f"time limit of {int(row.time_limit_s)} s reached",
                stopping="time-limit", preempting_until=now + TIME_LIMIT_GRACE_S,
            )
            self._signal_stop(row.id)
        if row.stopping is not None:
            self._signal_stop(row.id)  # a stop recorded elsewhere (a cancel) or before a restart
        if row.stopping is not None and row.preempting_until is not None and now >= row.preempting_until \
                and not running.killed:
            for handle in alive:
                self.backend.kill(handle)
            running.killed = True
        for handle in alive:
            sample = self.backend.sample(handle)
            running.peak_rss_mib = max(running.peak_rss_mib, sample.get("rss_mib", 0.0))
            if "gpu_util_pct" in sample:
                running.gpu_utils.append(sample["gpu_util_pct"])
                running.peak_gpu_mib = max(running.peak_gpu_mib, sample["gpu_memory_mib"])
        checkpoint = self.paths(row.id).newest_checkpoint()
        if checkpoint and (row.checkpoint_at is None or checkpoint[1] > row.checkpoint_at):
            self.repository.update_workload(row.id, event="checkpoint", reason=f"new checkpoint {checkpoint[0].name}",
                                            checkpoint_at=checkpoint[1])

    def _judge(self, row: WorkloadRow, running: _Running, now: float) -> None:
        """Every replica has exited: decide the outcome and what the queue's policy does next."""
        exits = [self.backend.exit(handle) for handle in running.handles]
        codes = [e.code for e in exits]
        metrics = {"peak_rss_mib": max([running.peak_rss_mib] + [e.metrics.get("peak_rss_mib") or 0 for e in exits]),
                   "exit_codes": codes}
        if running.gpu_utils:  # only real NVIDIA devices are measured; emulated ones are not
            metrics["gpu_util_pct_mean"] = round(sum(running.gpu_utils) / len(running.gpu_utils), 1)
            metrics["gpu_memory_peak_mib"] = running.peak_gpu_mib
        stopping = row.stopping
        if stopping == "cancel":
            self._finish(row.id, now, "cancelled", row.reason or "cancelled", metrics)
        elif stopping == "preempt":
            self._finish(row.id, now, "preempted", "preempted; requeued", metrics)
        elif stopping == "time-limit":
            self._finish(row.id, now, "failed", f"time limit of {int(row.time_limit_s or 0)} s reached", metrics)
        elif stopping == "node-lost" or any(code is None for code in codes):
            self._finish(row.id, now, "lost", "its node was lost" if stopping else "the process vanished", metrics)
        elif all(code == 0 for code in codes):
            self._finish(row.id, now, "succeeded", "exit code 0", metrics)
        else:
            bad = next(code for code in codes if code != 0)
            self._finish(row.id, now, "failed", f"exit code {bad}", metrics)

    def _finish(self, workload_id: int, now: float, outcome: str, reason: str, metrics: dict | None = None) -> None:
        """Close the attempt, archive its outputs, release capacity and apply the failure policy."""
        row = self.repository.workload(workload_id)
        running = self._running.pop(workload_id, None)
        paths = self.paths(workload_id)
        archive = paths.archive(row.attempts)
        archive_attempt(paths, row.attempts, archive)
        if running is not None:
            self.repository.update_attempt(
                running.attempt_id, ended_at=now, outcome=outcome, reason=reason, archive_path=str(archive),
                exit_code=next((c for c in (metrics or {}).get("exit_codes", []) if c not in (None, 0)), 0)
                if outcome in ("succeeded", "failed") else None,
                metrics=metrics or {},
            )
        policy = self.catalog.queue(row.queue).failure if self.catalog.queue(row.queue) else None
        if outcome == "succeeded":
            self._release(row, "succeeded", "succeeded", reason, final=True)
        elif outcome == "cancelled":
            self._release(row, "cancelled", "cancelled", reason, final=True)
        elif outcome == "preempted":
            self._release(row, "queued", "requeued", f"{row.reason or 'preempted'}; back in queue {row.queue}",
                          preempted=True)
        elif outcome == "lost":
            if policy and policy.requeue_on_node_loss:
                self._release(row, "queued", "requeued", f"lost ({reason}); requeued by queue {row.queue}'s policy",
                              lost=True)
            else:
                self._release(row, "lost", "lost", reason, final=True)
        elif policy and row.attempts <= policy.retries and "time limit" not in reason:
            delay = policy.backoff_s * policy.backoff_factor ** (row.attempts - 1)
            self._release(row, "queued", "retrying",
                          f"attempt {row.attempts} failed ({reason}); retry {row.attempts} of {policy.retries} "
                          f"in {delay:g} s", not_before=now + delay)
        else:
            tries = f" after {row.attempts} attempt(s)" if row.attempts > 1 else ""
            self._release(row, "failed", "failed", f"{reason}{tries}", final=True)

    def _release(self, row: WorkloadRow, state: str, event: str, reason: str, *, final: bool = False,
                 not_before: float | None = None, preempted: bool = False, lost: bool = False) -> None:
        now = self.clock()
        if preempted:
            self.repository.update_workload(row.id, event="preempted", reason=row.reason or "preempted",
                                            state="preempted")
        if lost:
            self.repository.update_workload(row.id, event="lost", reason=reason, state="lost")
        self.repository.update_workload(
            row.id, event=event, reason=reason, state=state, placement=None, node=None, flavor=None,
            held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, stopping=None, preempting_until=None,
            preempted_for=None, not_before=not_before, finished_at=now if final else None,
            started_at=None if not final else row.started_at, admitted_at=None if not final else row.admitted_at,
            escalated=False if not final else row.escalated, priority_boost=0 if not final else row.priority_boost,
        )
