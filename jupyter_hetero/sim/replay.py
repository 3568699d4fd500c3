"""Event-driven replay of a job trace against any scheduler that turns a snapshot into decisions.

    result = replay(jobs, nodes, queues, tenants, Engine(eta=False))
    result.records[7].end  # when job 7 finished, in simulated seconds

Time is simulated: the loop jumps from event to event (arrivals, completions, grace deadlines,
escalation deadlines), applies every event of one timestamp, then runs one scheduling cycle.
Admissions start jobs; a preemption lets the victim run until its grace deadline, then requeues
it with the work it has left (checkpointed at the deadline: the grace period is there for that).
A job's work is counted in seconds on a reference flavor; on flavor ``f`` it advances ``speed[f]``
reference seconds per second.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Protocol

from ..engine import Decisions, NodeState, QueuePolicy, Request, Snapshot, TenantQuota, Workload

__all__ = ["JobRecord", "ReplayResult", "Scheduler", "SimJob", "replay"]


@dataclass(frozen=True, slots=True, eq=False)
class SimJob:
    """One job of a trace: who submits it, when, what it asks for and how fast it runs where."""

    id: int
    tenant: str
    queue: str
    arrival: float
    work: float  # seconds of work on the reference flavor
    request: Request
    flavors: tuple[str, ...]  # flavors offered to the scheduler, in order of preference
    speed: dict[str, float]  # reference seconds of work done per second on each flavor

    def runtime_on(self, flavor: str) -> float:
        return self.work / self.speed[flavor]

    @property
    def best_runtime(self) -> float:
        """Run time alone on the fastest flavor offered: the floor of its completion time."""
        return min(self.runtime_on(f) for f in self.flavors)


@dataclass(slots=True)
class JobRecord:
    """What happened to one job: when it first started, when it finished, where it ran."""

    job: SimJob
    first_start: float | None = None
    end: float | None = None
    preemptions: int = 0
    intervals: list[tuple[str, float, float]] = field(default_factory=list)  # (flavor, start, stop)

    @property
    def jct(self) -> float | None:
        return None if self.end is None else self.end - self.job.arrival

    @property
    def running_s(self) -> float:
        return sum(stop - start for _flavor, start, stop in self.intervals)

    @property
    def queued_s(self) -> float | None:
        """Time spent waiting, including waits after each preemption."""
        return None if self.end is None else self.end - self.job.arrival - self.running_s


@dataclass(slots=True)
class ReplayResult:
    records: dict[int, JobRecord]
    cycles: int
    cycle_s: float  # wall seconds spent inside the scheduler's cycles
    wall_s: float  # wall seconds for the whole replay


class Scheduler(Protocol):
    """Anything with the engine's interface: decisions for one snapshot, no state kept between cycles."""

    def cycle(self, snapshot: Snapshot) -> Decisions: ...


# Event kinds, in the order they apply at one timestamp: a job that ends exactly at its grace
# deadline has finished, not been evicted; capacity freed at t is visible to arrivals at t.
_FINISH, _EVICT, _ARRIVE, _WAKE = range(4)


class _Replay:
    def __init__(self, jobs: list[SimJob], nodes: list[NodeState], queues: dict[str, QueuePolicy],
                 tenants: dict[str, TenantQuota], scheduler: Scheduler):
        self.jobs = {job.id: job for job in jobs}
        self.nodes, self.queues, self.tenants, self.scheduler = nodes, queues, tenants, scheduler
        self.records = {job.id: JobRecord(job) for job in jobs}
        self.left = {job.id: job.work for job in jobs}  # reference seconds of work still to do
        self.pending: dict[int, Workload] = {}
        self.running: dict[int, Workload] = {}
        self.tokens: dict[int, int] = {}  # job -> its live finish event; finish events of earlier runs are stale
        self.events: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.cycles, self.cycle_s = 0, 0.0
        for job in jobs:
            self._push(job.arrival, _ARRIVE, job.id)

    def _push(self, at: float, kind: int, job_id: int) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, kind, self.seq, job_id))

    def run(self) -> None:
        while self.events:
            now = self.events[0][0]
            changed = False
            while self.events and self.events[0][0] == now:
                _at, kind, seq, job_id = heapq.heappop(self.events)
                changed = self._apply(now, kind, seq, job_id) or changed
            if changed and self.pending:
                self._cycle(now)

    def _apply(self, now: float, kind: int, seq: int, job_id: int) -> bool:
        """Apply one event; False when it turned out stale (the job moved on since it was planned)."""
        if kind == _ARRIVE:
            self._enqueue(now, job_id)
            return True
        if kind == _WAKE:
            workload = self.pending.get(job_id)
            policy = self.queues[self.jobs[job_id].queue]
            return workload is not None and workload.submitted_at + policy.max_wait_s == now
        workload = self.running.get(job_id)
        if kind == _FINISH and workload is not None and self.tokens[job_id] == seq:
            self._stop(now, workload)
            self.left[job_id] = 0.0
            self.records[job_id].end = now
            return True
        if kind == _EVICT and workload is not None and workload.preempting_until == now:
            self._stop(now, workload)
            self.records[job_id].preemptions += 1
            self._enqueue(now, job_id)
            return True
        return False

    def _enqueue(self, now: float, job_id: int) -> None:
        job = self.jobs[job_id]
        first = job.flavors[0]
        # Requeued work keeps its place in history (JCT counts from the first arrival) but queues
        # from the eviction, as Kueue does by default; its run time shrinks with the work done.
        self.pending[job_id] = Workload(
            id=job_id, tenant=job.tenant, queue=job.queue, request=job.request, flavors=job.flavors,
            submitted_at=now, runtime_s=self.left[job_id] / job.speed[first],
        )
        policy = self.queues.get(job.queue)
        if policy is not None:
            # A real controller requeues on a timer; without this a starving job would only be
            # noticed at the next unrelated event.
            self._push(now + policy.max_wait_s, _WAKE, job_id)

    def _stop(self, now: float, workload: Workload) -> None:
        del self.running[workload.id]
        job = self.jobs[workload.id]
        flavor, started = workload.placement.flavor, workload.started_at
        self.left[workload.id] = max(0.0, self.left[workload.id] - (now - started) * job.speed[flavor])
        self.records[workload.id].intervals.append((flavor, started, now))

    def _cycle(self, now: float) -> None:
        snapshot = Snapshot(now, self.nodes, self.queues, self.tenants, list(self.running.values()),
                            list(self.pending.values()))
        began = time.perf_counter()
        decisions = self.scheduler.cycle(snapshot)
        self.cycle_s += time.perf_counter() - began
        self.cycles += 1
        for escalation in decisions.escalations:
            workload = self.pending.get(escalation.workload)
            if workload is not None:
                workload.escalated, workload.priority_boost = True, escalation.priority_boost
        for admission in decisions.admissions:
            workload = self.pending.pop(admission.workload)
            job = self.jobs[workload.id]
            flavor = admission.placement.flavor
            workload.placement, workload.started_at = admission.placement, now
            workload.expected_end = now + self.left[job.id] / job.speed[flavor]
            self.running[job.id] = workload
            record = self.records[job.id]
            if record.first_start is None:
                record.first_start = now
            self._push(workload.expected_end, _FINISH, job.id)
            self.tokens[job.id] = self.seq
        # After admissions: the engine may pick as a victim a workload it admitted in the same
        # cycle; applied literally, that one starts and is evicted at its grace deadline.
        for preemption in decisions.preemptions:
            victim = self.running[preemption.victim]
            victim.preempting_until = preemption.grace_deadline
            self._push(preemption.grace_deadline, _EVICT, victim.id)


def replay(jobs: list[SimJob], nodes: list[NodeState], queues: dict[str, QueuePolicy],
           tenants: dict[str, TenantQuota], scheduler: Scheduler) -> ReplayResult:
    """Run ``jobs`` to completion on ``nodes`` under ``scheduler``; jobs that can never start stay unfinished."""
    began = time.perf_counter()
    state = _Replay(jobs, nodes, queues, tenants, scheduler)
    state.run()
    return ReplayResult(state.records, state.cycles, state.cycle_s, time.perf_counter() - began)
