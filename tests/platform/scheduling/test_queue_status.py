"""The queues view's sums come from the scheduler's copies of the scheduled workloads, once per cycle."""

from __future__ import annotations

from jupyter_hetero.capability import Held
from jupyter_hetero.platform.scheduling.queue_status import QueueStatus
from jupyter_hetero.store.tables import WorkloadRow


def _workload(**fields) -> WorkloadRow:
    base = dict(kind="job", tenant="vision", user="ada", template="training", queue="training", request={}, spec={},
                held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, flavor=None)
    return WorkloadRow(**{**base, **fields})


ROWS = [
    _workload(state="queued"),
    _workload(state="preempted"),
    _workload(state="running", flavor="a100-80g", held_cpu_milli=8000, held_memory_mib=1024, held_device_milli=2000),
    _workload(state="admitted", flavor="a100-80g", held_cpu_milli=1000, held_memory_mib=512, held_device_milli=1000),
    _workload(state="succeeded", flavor="a100-80g", held_device_milli=4000),
    _workload(state="running", queue="batch", tenant="nlp", flavor="t4", held_device_milli=500),
]


def test_counts_and_held_capacity_are_summed_per_queue_and_tenant():
    status = QueueStatus.of(ROWS, {"training": [30.0, 5.0]}, at=100.0)
    assert status.counts == {"training": {"pending": 2, "running": 2}, "batch": {"pending": 0, "running": 1}}
    assert status.held_in("vision", "training") == {("vision", "a100-80g"): Held(9000, 1536, 3000)}
    assert status.held_in("vision", "batch") == {}
    assert status.held_by_tenant("nlp") == {("nlp", "t4"): Held(0, 0, 500)}
    assert set(status.held_by_tenant()) == {("vision", "a100-80g"), ("nlp", "t4")}
    assert status.waits == {"training": [5.0, 30.0]}  # ascending, for percentiles


def test_waiting_work_the_scheduler_does_not_hold_is_counted_as_pending():
    status = QueueStatus.of(ROWS, {}, at=100.0, also_pending={"training": 2, "urgent": 1})
    assert status.counts["training"] == {"pending": 4, "running": 2}
    assert status.counts["urgent"] == {"pending": 1, "running": 0}
