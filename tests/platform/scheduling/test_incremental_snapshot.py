"""The scheduler's snapshot follows the store's changes: complete and exact, at the cost of what changed."""

from __future__ import annotations

import time

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, Catalog, load_catalog
from jupyter_hetero.engine_inputs import engine_workload, node_state
from jupyter_hetero.platform.scheduling.scheduler import Scheduler
from jupyter_hetero.store import ACTIVE_STATES

from ...builders import stored_kernel
from ...harness import workload_rows_loaded


def _rebuilt(scheduler: Scheduler, now: float) -> tuple[list, list, list]:
    """The snapshot as a tick built it before it was incremental: every row read and converted again."""
    running, pending = [], []
    for row in scheduler.repository.workloads(states=("queued", "preempted", *ACTIVE_STATES)):
        workload = engine_workload(row, scheduler.catalog.template(row.template), 3600.0, scheduler.times)
        if row.state in ACTIVE_STATES:
            running.append(workload)
        elif row.not_before is None or scheduler.times.steady(row.id, "not_before", row.not_before) <= now:
            pending.append(workload)
    nodes = [node_state(view) for view in scheduler.inventory.nodes() if view.flavor is not None]
    return nodes, running, pending


def _assert_exact(scheduler: Scheduler) -> None:
    now = scheduler.clock()
    snapshot = scheduler._snapshot(now)
    nodes, running, pending = _rebuilt(scheduler, now)
    assert snapshot.nodes == nodes
    assert snapshot.running == running
    assert snapshot.pending == pending


def test_the_snapshot_after_every_kind_of_change_equals_one_rebuilt_from_scratch(scheduler):
    repository = scheduler.repository
    kernels = [stored_kernel(scheduler, f"k{n}", cpu=8) for n in range(12)]
    _assert_exact(scheduler)
    scheduler.tick()  # admits what fits: the demo's one CPU node takes four 8-core kernels
    _assert_exact(scheduler)
    admitted = [row for row in repository.workloads(states=("admitted",))]
    assert admitted
    repository.update_workload(admitted[0].id, event="started", state="running", started_at=time.time())
    repository.update_workload(admitted[1].id, event="released", state="succeeded", placement=None,
                               held_cpu_milli=0, held_memory_mib=0, finished_at=time.time())
    repository.update_workload(kernels[-1].id, event="retrying", state="queued", not_before=time.time() + 3600)
    repository.update_workload(kernels[-2].id, event="cancelled", state="cancelled")
    _assert_exact(scheduler)
    stored_kernel(scheduler, "late")
    scheduler.inventory.mark_lost("cpu-0", "gone in a test")
    _assert_exact(scheduler)
    repository.update_workload(admitted[1].id, event="requeued", state="queued")  # back after leaving: order kept
    scheduler.tick()
    _assert_exact(scheduler)


def test_a_tick_reads_only_the_workload_rows_that_changed_since_the_last(scheduler):
    for n in range(200):
        stored_kernel(scheduler, f"k{n}", cpu=8)
    scheduler.tick()  # admits what fits
    scheduler.tick()  # reads back what the last one recorded
    with workload_rows_loaded() as loaded:
        scheduler.tick()  # nothing changed since the last tick
        assert loaded == []
        late = stored_kernel(scheduler, "late", cpu=8)
        scheduler.tick()
        assert loaded == [late.id]
    assert scheduler.ticks.recent()[-1].changed == 1


def test_a_workload_re_read_after_each_write_looks_its_template_up_once_per_catalog(scheduler, monkeypatch):
    looked_up: list[str] = []
    lookup = Catalog.template

    def counting(catalog: Catalog, name: str):
        looked_up.append(name)
        return lookup(catalog, name)

    monkeypatch.setattr(Catalog, "template", counting)
    kernel = stored_kernel(scheduler, "k", template="fine-tuning")
    for n in range(5):  # each write puts the row in the change feed: the next snapshot converts it again
        scheduler.repository.update_workload(kernel.id, event="test", reason=f"write {n}")
        scheduler._snapshot(scheduler.clock())
    assert looked_up.count("fine-tuning") == 1 + 1, looked_up  # stored_kernel's own, then the copies' one

    scheduler.catalog = load_catalog(DEFAULT_CATALOG_PATH)  # another catalog: resolved against it once
    for n in range(3):
        scheduler.repository.update_workload(kernel.id, event="test", reason=f"again {n}")
        scheduler._snapshot(scheduler.clock())
    assert looked_up.count("fine-tuning") == 1 + 2, looked_up
