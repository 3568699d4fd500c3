"""A cancel always wins, even one that lands between the tick's read of a workload and its write.

The API records a cancel on the event loop while the tick decides, in its worker thread, on an earlier
read of the same row. Each test lands a real cancel (``Workloads.cancel``) at the worst moment,
just before the scheduler's write to that workload (``InterposingRepository``), with real processes
where a stop needs one; nothing depends on timing."""

from __future__ import annotations

import sys
import time

import pytest

from jupyter_hetero.backends.local import load_emulated_nodes
from jupyter_hetero.backends.local.processes import LocalBackend
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.engine import Engine
from jupyter_hetero.platform.access import Access
from jupyter_hetero.platform.clock import Clock
from jupyter_hetero.platform.identity import resolve_identity
from jupyter_hetero.platform.scheduling.inventory import Inventory
from jupyter_hetero.platform.workloads.resolve import resolve
from jupyter_hetero.platform.scheduling.scheduler import Scheduler
from jupyter_hetero.platform.workloads.service import Workloads
from jupyter_hetero.store.tables import WorkloadRow

from ...conftest import DEMO_NODES
from ...fakes import InterposingRepository

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


class Platform:
    """A scheduler over a real store and the demo's emulated nodes, and the API's cancel beside it."""

    def __init__(self, path):
        self.catalog = load_catalog(DEFAULT_CATALOG_PATH)
        self.repository = InterposingRepository(f"sqlite:///{path / 'hetero.sqlite'}", clock=time.time)
        inventory = Inventory(self.catalog, self.repository)
        inventory.refresh(load_emulated_nodes(DEMO_NODES))
        self.scheduler = Scheduler(catalog=self.catalog, repository=self.repository, inventory=inventory,
                                   backend=LocalBackend(), engine=Engine(), clock=Clock(), work_dir=path / "work")
        self.workloads = Workloads(self.catalog, self.repository, Access(self.repository), path,
                                         self.scheduler.waiting, lambda: None)
        self.ada = resolve_identity(self.catalog, "ada", owner=True)

    def add(self, kind: str, template: str, queue: str | None = None, spec: dict | None = None, **parameters) -> int:
        found = self.catalog.template(template)
        resolved = resolve(found, parameters, self.catalog)
        return self.repository.add_workload(WorkloadRow(
            kind=kind, name=kind, tenant="default", user="ada", template=found.name, queue=queue or found.queue,
            request=resolved.to_json(), spec=spec or {"payload": "kernel", "env": {}}, state="queued",
            held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, attempts=0, time_limit_s=resolved.time_limit_s,
        ), reason="submitted").id

    def job(self, tmp_path) -> int:
        """A job sleeping on the demo's CPU node, running once this returns."""
        workload_id = self.add("job", "data-preprocessing", spec={"payload": "command", "command": SLEEP, "env": {},
                                                                  "cwd": str(tmp_path)})
        self.tick_until(workload_id, lambda row: row.state == "running")
        return workload_id

    def cancel_before_next_write(self, workload_id: int) -> None:
        self.repository.before_next_write(
            workload_id, lambda: self.workloads.cancel(self.ada, workload_id, time.time()))

    def tick_until(self, workload_id: int, predicate, timeout: float = 30.0) -> WorkloadRow:
        deadline = time.monotonic() + timeout
        while True:
            self.scheduler.tick()
            row = self.repository.workload(workload_id)
            if predicate(row):
                return row
            assert time.monotonic() < deadline, f"workload {workload_id} never got there: {row.state} {row.stopping}"
            time.sleep(0.05)

    def close(self) -> None:
        for row in self.repository.workloads(states=("admitted", "starting", "running")):
            running = self.scheduler._running.get(row.id)
            if running is not None:
                running.kill(self.scheduler.backend)
        self.repository.close()


@pytest.fixture
def platform(tmp_path):
    platform = Platform(tmp_path)
    yield platform
    platform.close()


def _types(platform: Platform, workload_id: int) -> list[str]:
    return [e.type for e in platform.repository.events(workload_id=workload_id)]


def _running_kernel(platform: Platform, queue: str, **parameters) -> int:
    workload_id = platform.add("kernel", "interactive", queue=queue, **parameters)
    platform.tick_until(workload_id, lambda row: row.state == "admitted")
    platform.repository.update_workload(workload_id, event="started", state="running", started_at=time.time())
    return workload_id


def test_a_cancel_just_before_the_cycle_records_its_preemption_wins(platform):
    victim = _running_kernel(platform, "batch", devices=2, flavor="a100-80g")
    urgent = platform.add("kernel", "interactive", queue="urgent", devices=1, flavor="a100-80g")
    platform.cancel_before_next_write(victim)
    platform.scheduler.tick()  # the cycle chooses the victim; the cancel lands before the write
    assert platform.repository.interposed == [victim]
    row = platform.repository.workload(victim)
    assert row.stopping == "cancel" and row.preempted_for == urgent  # it still makes room for the preemptor
    assert _types(platform, victim)[-2:] == ["cancelling", "preempting"]


def test_a_cancel_just_before_an_admin_preemption_wins(platform):
    victim = _running_kernel(platform, "batch", devices=1, flavor="a100-80g")
    platform.cancel_before_next_write(victim)
    answer = platform.scheduler.preempt_by_admin(victim, "root")
    assert answer["stopping"] == "cancel"
    assert platform.repository.workload(victim).stopping == "cancel"


def test_a_cancel_just_before_a_time_limit_wins(platform, tmp_path):
    job = platform.job(tmp_path)
    # Its time limit passes now (started long ago, by its record); the tick stops it, after the cancel.
    platform.repository.update_workload(job, event="test", time_limit_s=1, started_at=time.time() - 100)
    platform.cancel_before_next_write(job)
    platform.scheduler.tick()
    assert platform.repository.interposed == [job]
    row = platform.repository.workload(job)
    # Stopping for the cancel, or already ended by it: the stop reaches a real process, which may exit
    # before the tick is over on a busy machine.
    assert row.stopping == "cancel" or row.state == "cancelled"
    done = platform.tick_until(job, lambda row: row.finished_at is not None)
    assert done.state == "cancelled" and done.failures == 0
    assert "time-limit" not in _types(platform, job)


def test_a_cancel_just_before_a_node_loss_is_recorded_wins(platform, tmp_path):
    job = platform.job(tmp_path)
    platform.scheduler.inventory.mark_lost("cpu-0", "unplugged in a test")
    platform.cancel_before_next_write(job)
    platform.scheduler.tick()  # the batch queue would requeue work lost with its node
    assert platform.repository.interposed == [job]
    row = platform.repository.workload(job)
    assert row.state == "cancelled" and row.node_losses == 0
    assert "requeued" not in _types(platform, job)


def test_a_cancel_while_a_preempted_attempt_ends_wins_over_the_requeue(platform, tmp_path):
    job = platform.job(tmp_path)
    platform.scheduler.preempt_by_admin(job, "root")
    platform.cancel_before_next_write(job)  # lands as the tick records the preempted attempt's end
    done = platform.tick_until(job, lambda row: row.stopping != "preempt")  # the tick that judged the attempt
    assert platform.repository.interposed == [job]
    assert done.state == "cancelled" and done.finished_at is not None
    assert "requeued" not in _types(platform, job)


def test_a_cancel_just_before_the_cycle_records_an_admission_wins(platform):
    waiting = platform.add("kernel", "interactive", devices=1, flavor="a100-80g")
    platform.cancel_before_next_write(waiting)
    platform.scheduler.tick()  # the cycle admits it; the cancel lands before the admission is written
    assert platform.repository.interposed == [waiting]
    row = platform.repository.workload(waiting)
    assert row.state == "cancelled" and row.placement is None and row.held_device_milli == 0
    assert "admitted" not in _types(platform, waiting)
