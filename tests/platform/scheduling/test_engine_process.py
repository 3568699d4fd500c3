"""The engine process: its cycles decide exactly what the same cycle decides in the server's process,
it survives a broken, stuck or killed child, and it never outlives its server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from jupyter_hetero.app import HeteroApp
from jupyter_hetero.backends.local import load_emulated_nodes
from jupyter_hetero.backends.local.processes import LocalBackend
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.engine import Engine, Snapshot, Workload, WorkloadKind
from jupyter_hetero.engine_inputs import engine_request
from jupyter_hetero.platform.scheduling.engine_mirror import SnapshotDelta
from jupyter_hetero.platform.scheduling.engine_process import (
    Cycle,
    DryRuns,
    EngineProcess,
    EngineUnavailable,
)
from jupyter_hetero.platform.scheduling.inventory import Inventory
from jupyter_hetero.platform.scheduling.scheduler import Scheduler
from jupyter_hetero.startup import build_engine
from jupyter_hetero.store import Repository

from ...builders import stored_kernel
from ...conftest import DEMO_NODES, REPO
from ...fakes import FixedClock, TroubledEngine


@pytest.fixture
def scheduler(tmp_path):
    """A real scheduler whose cycles run in an engine process, over a SQLite file and the demo's
    emulated nodes, with clocks that stand still; kernels need no processes."""
    catalog = load_catalog(DEFAULT_CATALOG_PATH)
    clock = FixedClock()
    repository = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=clock.wall)
    inventory = Inventory(catalog, repository)
    inventory.refresh(load_emulated_nodes(DEMO_NODES))
    engine = build_engine(HeteroApp(), catalog)  # the server's own: fragmentation-aware, its typical mix
    scheduler = Scheduler(catalog=catalog, repository=repository, inventory=inventory, backend=LocalBackend(),
                          engine=engine, clock=clock, work_dir=tmp_path / "work",
                          engine_process=EngineProcess(engine, timeout_s=60))
    yield scheduler
    scheduler.close()
    repository.close()


def _tick_equals_the_cycle_in_process(scheduler: Scheduler):
    """One tick (its cycle in the engine process) against the server's engine, here, over the
    snapshot the tick is about to take; the clocks stand still, so both see the same ``now``."""
    expected = scheduler.engine.cycle(scheduler._snapshot(scheduler.clock()))
    decided = scheduler.tick()
    assert decided == expected
    return decided


def test_each_tick_in_the_engine_process_decides_what_the_same_cycle_decides_in_process(scheduler):
    repository, clock = scheduler.repository, scheduler.times.clock
    for n in range(8):
        stored_kernel(scheduler, f"cpu{n}", cpu=16)
    for n in range(3):
        stored_kernel(scheduler, f"gpu{n}", template="fine-tuning", devices=1)
    first = _tick_equals_the_cycle_in_process(scheduler)  # a fresh child: the full snapshot
    assert first.admissions and first.pending and not first.escalations
    admitted = repository.workloads(states=("admitted",))
    repository.update_workload(admitted[0].id, event="started", state="running", started_at=clock.wall())
    repository.update_workload(admitted[1].id, event="released", state="succeeded", placement=None,
                               held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, finished_at=clock.wall())
    waiting = repository.workloads(states=("queued",))
    repository.update_workload(waiting[0].id, event="retrying", state="queued", not_before=clock.wall() + 600)
    repository.update_workload(waiting[1].id, event="cancelled", state="cancelled")
    stored_kernel(scheduler, "late", cpu=2)
    _tick_equals_the_cycle_in_process(scheduler)  # a delta: changed, ended, deferred and new workloads
    scheduler.inventory.mark_lost("cpu-0", "gone in a test")
    repository.update_workload(admitted[1].id, event="requeued", state="queued")  # back after leaving: id order
    _tick_equals_the_cycle_in_process(scheduler)  # the inventory changed: the nodes go again
    clock.advance(25 * 3600)  # past the deferral and the batch queue's max wait (a day): nothing re-read
    later = _tick_equals_the_cycle_in_process(scheduler)
    assert later.escalations
    assert scheduler.engine_process.starts == 1


def test_dry_runs_in_the_engine_process_equal_dry_runs_in_process(scheduler):
    for n in range(6):
        stored_kernel(scheduler, f"k{n}", cpu=16)
    scheduler.tick()
    now = scheduler.clock()
    hypothetical = Workload(id=-1, tenant="default", queue="batch",
                            request=engine_request({"cpu_milli": 8000, "memory_mib": 1024}),
                            flavors=("cpu-standard",), submitted_at=now, kind=WorkloadKind.JOB)
    decided, capacity = scheduler.dry_runs(now, [[hypothetical], []], capacity=True)
    assert decided == [scheduler.engine.cycle(scheduler._snapshot(now, [hypothetical])),
                       scheduler.engine.cycle(scheduler._snapshot(now))]
    from jupyter_hetero.engine import free_capacity

    assert capacity == free_capacity(scheduler._snapshot(now))


def _empty(full: bool) -> SnapshotDelta:
    return SnapshotDelta(replace_workloads=full, nodes=[] if full else None, queues={} if full else None,
                         tenants={} if full else None)


def test_a_child_that_stops_answering_is_killed_and_the_next_request_starts_afresh():
    process = EngineProcess(TroubledEngine(stall_at=5.0), timeout_s=0.5)
    try:
        asked = []

        def delta(full: bool) -> SnapshotDelta:
            asked.append(full)
            return _empty(full)

        process.call(delta, Cycle(1.0))
        stuck = process.pid
        started = time.monotonic()
        with pytest.raises(EngineUnavailable, match="did not answer within 0.5 s"):
            process.call(delta, Cycle(5.0))
        assert time.monotonic() - started < 10
        assert process.pid is None and not psutil.pid_exists(stuck) or psutil.Process(stuck).status() == "zombie"
        reply = process.call(delta, Cycle(2.0))
        assert reply.value.decisions == Engine().cycle(Snapshot(now=2.0, nodes=[], queues={}, tenants={}))
        assert asked == [True, False, True] and reply.restarted and process.starts == 2
    finally:
        process.close()


def test_an_engine_error_reaches_the_caller_and_the_child_stays():
    process = EngineProcess(TroubledEngine(fail_at=3.0))
    try:
        process.call(_empty, Cycle(1.0))
        pid = process.pid
        with pytest.raises(ValueError, match="a cycle that fails at 3.0"):
            process.call(_empty, DryRuns(3.0, [[]]))
        reply = process.call(_empty, Cycle(4.0))
        assert process.pid == pid and not reply.restarted and process.starts == 1
    finally:
        process.close()


def test_the_child_ends_when_its_server_is_killed_outright():
    # A stand-in server: it starts an engine process, says its pid, and waits to be killed.
    program = (
        "from jupyter_hetero.engine import Engine\n"
        "from jupyter_hetero.platform.scheduling.engine_mirror import SnapshotDelta\n"
        "from jupyter_hetero.platform.scheduling.engine_process import Cycle, EngineProcess\n"
        "process = EngineProcess(Engine())\n"
        "process.call(lambda full: SnapshotDelta(nodes=[], queues={}, tenants={}), Cycle(0.0))\n"
        "print(process.pid, flush=True)\n"
        "import sys; sys.stdin.read()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    server = subprocess.Popen([sys.executable, "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env=env, text=True)
    try:
        child = psutil.Process(int(server.stdout.readline()))
        assert child.ppid() == server.pid
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        deadline = time.monotonic() + 15
        while child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the engine process outlived its server"
            time.sleep(0.05)  # poll interval, bounded by the deadline
    finally:
        server.kill()
        server.wait(10)
