"""The scheduler's lifecycle rules as plain functions: what follows an attempt, when a placement no
longer holds, and scheduler time across a step of the wall clock."""

from __future__ import annotations

import pytest

from jupyter_hetero.capability import NodeCapability
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, FailurePolicy, load_catalog
from jupyter_hetero.platform.clock import SteadyTime
from jupyter_hetero.platform.scheduling.inventory import Inventory
from jupyter_hetero.platform.scheduling.lifecycle import after_attempt, placement_problem
from jupyter_hetero.store import Repository
from jupyter_hetero.store.tables import WorkloadRow

from ...fakes import SteppingClock


def row(**fields) -> WorkloadRow:
    base = dict(id=1, queue="batch", attempts=1, failures=0, preemptions=0, node_losses=0, preempted_at=[],
                reason=None)
    return WorkloadRow(**{**base, **fields})


RETRY_TWICE = FailurePolicy(retries=2, backoff_s=10, backoff_factor=3, requeue_on_node_loss=True)


@pytest.mark.parametrize(
    ("workload", "outcome", "reason", "policy", "retryable", "expected"),
    [
        pytest.param(row(), "failed", "exit code 3", RETRY_TWICE, True,
                     ("queued", "retrying", "attempt 1 failed (exit code 3); retry 1 of 2 in 10 s", 10, {"failures": 1}),
                     id="a first failure is retried after the backoff"),
        pytest.param(row(attempts=2, failures=1), "failed", "exit code 3", RETRY_TWICE, True,
                     ("queued", "retrying", "attempt 2 failed (exit code 3); retry 2 of 2 in 30 s", 30, {"failures": 2}),
                     id="the backoff grows by its factor"),
        pytest.param(row(attempts=5, failures=1, preemptions=2, node_losses=1), "failed", "exit code 3", RETRY_TWICE,
                     True, ("queued", "retrying", "attempt 5 failed (exit code 3); retry 2 of 2 in 30 s", 30,
                            {"failures": 2}),
                     id="preemptions and node losses leave the retries alone"),
        pytest.param(row(attempts=4, failures=2, preemptions=1), "failed", "exit code 3", RETRY_TWICE, True,
                     ("failed", "failed", "exit code 3 after 4 attempt(s), 3 of them failed", None, {"failures": 3}),
                     id="retries used up"),
        pytest.param(row(), "failed", "time limit of 60 s reached", RETRY_TWICE, False,
                     ("failed", "failed", "time limit of 60 s reached", None, {"failures": 1}),
                     id="a time limit is never retried"),
        pytest.param(row(reason="preempted by urgent workload 9"), "preempted", "preempted", RETRY_TWICE, True,
                     ("queued", "requeued", "preempted by urgent workload 9; back in queue batch", None,
                      {"preemptions": 1, "preempted_at": [50.0]}),
                     id="a preemption requeues and is counted with its time"),
        pytest.param(row(), "lost", "node n1 was lost", RETRY_TWICE, True,
                     ("queued", "requeued", "lost (node n1 was lost); requeued by queue batch's policy", None,
                      {"node_losses": 1}),
                     id="a lost node requeues by policy"),
        pytest.param(row(), "lost", "node n1 was lost", FailurePolicy(requeue_on_node_loss=False), True,
                     ("lost", "lost", "node n1 was lost", None, {"node_losses": 1}),
                     id="or ends lost"),
        pytest.param(row(), "unlaunched", "could not start: the Kubernetes API failed", RETRY_TWICE, True,
                     ("queued", "requeued", "could not start: the Kubernetes API failed; the platform's fault, so no "
                      "retry is used: trying again in 2 s", 2, {}),
                     id="a launch the platform failed uses no retry"),
        pytest.param(row(attempts=5, failures=1, preemptions=1), "unlaunched", "could not start", RETRY_TWICE, True,
                     ("queued", "requeued", "could not start; the platform's fault, so no retry is used: trying "
                      "again in 8 s", 8, {}),
                     id="and waits twice as long each time in a row"),
        pytest.param(row(), "cancelled", "cancelled by ada", RETRY_TWICE, True,
                     ("cancelled", "cancelled", "cancelled by ada", None, {}), id="a cancel is final"),
    ],
)
def test_what_follows_an_attempt(workload, outcome, reason, policy, retryable, expected):
    step = after_attempt(workload, outcome, reason, policy, retryable=retryable, now_wall=50.0)
    assert (step.state, step.event, step.reason, step.retry_in_s, step.counts) == expected


def capability(name: str, devices: int) -> NodeCapability:
    accelerator = {"vendor": "nvidia", "model": "Tesla T4", "count": devices, "memory_mib": 16384} if devices else None
    return NodeCapability.model_validate({"name": name, "source": "emulated", "emulated": True, "cpu_milli": 8000,
                                          "memory_mib": 65536, "accelerator": accelerator})


def inventory(tmp_path, nodes: dict[str, int], lost: tuple[str, ...] = ()) -> Inventory:
    """A real inventory over a real store, seeing these nodes (name -> device count)."""
    found = Inventory(load_catalog(DEFAULT_CATALOG_PATH), Repository(f"sqlite:///{tmp_path / 'inventory.sqlite'}",
                                                                     clock=lambda: 0.0))
    found.refresh([capability(name, devices) for name, devices in nodes.items()])
    for name in lost:
        found.mark_lost(name, "removed by a test")
    return found


def placement(*slots: tuple[str, list[int]]) -> dict:
    return {"flavor": "t4", "slots": [{"node": node, "devices": [{"index": i, "milli": 1000, "memory_mib": 0}
                                                                  for i in devices]} for node, devices in slots]}


@pytest.mark.parametrize(
    ("slots", "nodes", "lost", "problem"),
    [
        pytest.param([("n1", [0, 1])], {"n1": 2}, (), None, id="still there"),
        pytest.param([("n1", [])], {"n1": 0}, (), None, id="a CPU placement"),
        pytest.param([("n1", [0]), ("n2", [0])], {"n1": 1}, (), "node n2 is no longer in the inventory",
                     id="a gang member's node is gone"),
        pytest.param([("n1", [0])], {"n1": 1}, ("n1",), "node n1 was lost", id="marked lost"),
        pytest.param([("n1", [0, 2, 3])], {"n1": 2}, (),
                     "node n1 now has 2 device(s); device 2, 3 of this placement no longer exists",
                     id="fewer devices than the placement names"),
    ],
)
def test_when_a_placement_no_longer_holds(tmp_path, slots, nodes, lost, problem):
    assert placement_problem(placement(*slots), inventory(tmp_path, nodes, lost)) == problem


def test_scheduler_time_ignores_a_step_of_the_wall_clock():
    SteppingClock.reset()
    times = SteadyTime(SteppingClock())
    started_wall = times.wall()
    started = times.steady(1, "started_at", started_wall)
    SteppingClock.step(3600)
    try:
        assert times.now() - started < 5  # an hour's step is not an hour of run time
        assert times.steady(1, "started_at", started_wall) == started  # remembered, not derived again
        after = times.steady(2, "created_at", times.wall())  # stamped after the step, seen after it
        assert abs(after - times.now()) < 5
        assert abs(times.to_wall(times.now() + 60) - (times.wall() + 60)) < 1
        times.forget(1)
        assert times.remembered == 1
    finally:
        SteppingClock.reset()
