"""The scheduler over a real store: work no node could ever hold waits as `inadmissible`, out of every
tick's way, and goes back to `queued` once the inventory changes so that a node can hold it."""

from __future__ import annotations

from jupyter_hetero.backends.local import load_emulated_nodes
from jupyter_hetero.backends.local.processes import LocalBackend
from jupyter_hetero.engine import Engine
from jupyter_hetero.platform.clock import Clock
from jupyter_hetero.platform.scheduling.scheduler import Scheduler

from ...builders import stored_kernel
from ...conftest import DEMO_NODES
from ...harness import workload_rows_loaded

IMPOSSIBLE = "capacity: a replica needs 2 devices on one node, nodes of flavor t4 have 1"



def _two_t4s() -> list:
    """The demo nodes with a second T4 device on the T4 node: what the impossible kernel needs."""
    nodes = load_emulated_nodes(DEMO_NODES)
    t4 = next(node for node in nodes if node.name == "gpu-t4-0")
    grown = t4.model_copy(update={"accelerator": t4.accelerator.model_copy(update={"count": 2})})
    return [grown if node is t4 else node for node in nodes]


def test_work_no_node_can_hold_is_inadmissible_at_once_and_waits_in_its_queue(scheduler):
    repository = scheduler.repository
    impossible = stored_kernel(scheduler, template="interactive", devices=2, flavor="t4")
    possible = stored_kernel(scheduler, template="interactive", devices=1, flavor="t4")
    scheduler.tick()
    row = repository.workload(impossible.id)
    assert row.state == "inadmissible"
    assert row.reason == f"no node in the inventory can ever hold it: {IMPOSSIBLE}"
    assert [e.type for e in repository.events(workload_id=row.id)] == ["submitted", "inadmissible"]
    assert repository.workload(possible.id).state == "admitted"
    waiting = scheduler.waiting(row.id)
    assert waiting.inadmissible and waiting.position == 1
    assert scheduler.queue_status().counts["experiment"] == {"pending": 1, "running": 1}
    scheduler.tick()
    assert scheduler.waiting(row.id) == waiting  # still shown, though no tick looks at it any more


def test_a_tick_does_not_read_inadmissible_work_until_the_inventory_changes(scheduler):
    repository = scheduler.repository
    waiting = [stored_kernel(scheduler, template="interactive", devices=2, flavor="t4") for _ in range(30)]
    scheduler.tick()
    assert {repository.workload(w.id).state for w in waiting} == {"inadmissible"}
    scheduler.tick()  # reads back what the last tick recorded
    with workload_rows_loaded() as loaded:
        scheduler.tick()
    assert loaded == [] and scheduler.ticks.recent()[-1].pending == 0
    scheduler.inventory.refresh(_two_t4s())  # the T4 node comes back with two devices
    scheduler.tick()
    first = repository.workload(waiting[0].id)
    assert first.state == "admitted" and first.node == "gpu-t4-0"
    events = [(e.type, e.reason) for e in repository.events(workload_id=first.id)]
    assert events[-2:] == [("requeued", "the inventory now has a node that can hold it"), ("admitted", events[-1][1])]
    # The rest wait for the first kernel's devices now, which time frees: queued, not inadmissible.
    assert {repository.workload(w.id).state for w in waiting[1:]} == {"queued"}
    assert scheduler.waiting(waiting[1].id).blockers[0].kind == "capacity"


def test_a_change_that_does_not_help_leaves_it_inadmissible_without_a_new_event(scheduler):
    repository = scheduler.repository
    row = stored_kernel(scheduler, template="interactive", devices=2, flavor="t4")
    scheduler.tick()
    scheduler.inventory.refresh(load_emulated_nodes(DEMO_NODES))  # seen again, the same
    scheduler.tick()
    assert repository.workload(row.id).state == "inadmissible"
    assert [e.type for e in repository.events(workload_id=row.id)] == ["submitted", "inadmissible"]


def test_a_restarted_scheduler_shows_why_it_waits_again(scheduler, tmp_path):
    row = stored_kernel(scheduler, template="interactive", devices=2, flavor="t4")
    scheduler.tick()
    again = Scheduler(catalog=scheduler.catalog, repository=scheduler.repository, inventory=scheduler.inventory,
                      backend=LocalBackend(), engine=Engine(), clock=Clock(), work_dir=tmp_path / "work")
    assert again.waiting(row.id) is None
    again.tick()
    assert again.waiting(row.id).inadmissible
    assert [e.type for e in again.repository.events(workload_id=row.id)] == ["submitted", "inadmissible"]
