"""When an attempt ends, what the tick writes is whole: between any two of its writes, a reader of the store
(the API, a report, the reliability tests' standing checker) never sees a workload that is no longer active
still holding a placement or capacity, nor an attempt's outcome beside its workload's old counts, and a kernel's start that gives up waiting never cancels an admission
written since it looked. Each test notes the row as the store has it just before every write
to it (``InterposingRepository``), so a release split over two writes is caught without depending on timing."""

from __future__ import annotations

import sys
from contextlib import contextmanager

from jupyter_hetero.platform.clock import Clock
from jupyter_hetero.platform.kernels.service import Kernels
from jupyter_hetero.store import ACTIVE_STATES

from .test_cancel_wins import Platform, _types, platform  # noqa: F401 - the platform fixture


def _note_before_every_write(platform: Platform, workload_id: int) -> list[tuple]:
    seen: list[tuple] = []

    def note() -> None:
        row = platform.repository.workload(workload_id)
        seen.append((row.state, row.placement, row.held_cpu_milli, row.held_memory_mib, row.held_device_milli))
        platform.repository.before_next_write(workload_id, note)

    platform.repository.before_next_write(workload_id, note)
    return seen


def _note_after_every_commit(platform: Platform, workload_id: int) -> list[tuple]:
    """What a second reader sees after each write transaction commits: (attempt outcomes, failures, preemptions)."""
    seen: list[tuple] = []
    repository = platform.repository
    session = repository.session

    @contextmanager
    def noting(*, write: bool = False):
        with session(write=write) as opened:
            yield opened
        if write:  # committed: read it back in a transaction of its own, as the API would
            row, attempts = repository.workload_with_attempts(workload_id)
            seen.append((tuple(a.outcome for a in attempts), row.failures, row.preemptions))

    repository.session = noting
    return seen


def _holding_while_inactive(seen: list[tuple]) -> list[tuple]:
    return [state for state in seen if state[0] not in ACTIVE_STATES and any(state[1:])]


def test_a_preempted_attempt_is_released_and_requeued_in_one_write(platform, tmp_path):
    job = platform.job(tmp_path)
    seen = _note_before_every_write(platform, job)
    platform.scheduler.preempt_by_admin(job, "root")
    platform.tick_until(job, lambda row: row.preemptions == 1)
    assert len(seen) >= 2  # the preemption's stop, then the release
    assert not _holding_while_inactive(seen), seen
    types = _types(platform, job)
    assert types[types.index("preempted") + 1] == "requeued"


def test_a_preempted_attempt_ends_with_its_count_in_one_write(platform, tmp_path):
    job = platform.job(tmp_path)
    seen = _note_after_every_commit(platform, job)
    platform.scheduler.preempt_by_admin(job, "root")
    platform.tick_until(job, lambda row: row.preemptions == 1)
    assert (("preempted",), 0, 1) in seen
    assert (("preempted",), 0, 0) not in seen, seen  # the outcome committed before the count


def test_a_failed_attempt_ends_with_its_count_in_one_write(platform, tmp_path):
    job = platform.add("job", "data-preprocessing", spec={"payload": "command", "env": {}, "cwd": str(tmp_path),
                                                          "command": [sys.executable, "-c", "raise SystemExit(3)"]})
    seen = _note_after_every_commit(platform, job)
    platform.tick_until(job, lambda row: row.failures == 1)
    assert (("failed",), 1, 0) in seen
    assert (("failed",), 0, 0) not in seen, seen  # the outcome committed before the count


def test_an_attempt_lost_with_its_node_is_released_and_requeued_in_one_write(platform, tmp_path):
    job = platform.job(tmp_path)
    seen = _note_before_every_write(platform, job)
    platform.scheduler.inventory.mark_lost("cpu-0", "unplugged in a test")
    platform.tick_until(job, lambda row: row.node_losses == 1)
    assert not _holding_while_inactive(seen), seen
    types = _types(platform, job)
    assert types[types.index("lost") + 1] == "requeued"


async def test_a_kernel_admitted_as_its_wait_runs_out_is_taken_not_cancelled_holding_its_device(platform):
    kernels = Kernels(catalog=platform.catalog, repository=platform.repository, scheduler=platform.scheduler,
                            clock=Clock(), identify=lambda *_: None, wake=lambda: None)
    waiting = platform.add("kernel", "interactive", devices=1, flavor="a100-80g")
    # The wait has run out (timeout 0); the tick admits the kernel just before the wait's cancel is written.
    platform.repository.before_next_write(waiting, platform.scheduler.tick)
    environment = await kernels.wait_for_placement(waiting, timeout=0)
    assert platform.repository.interposed == [waiting]
    row = platform.repository.workload(waiting)
    assert row.state == "admitted" and row.placement and "cancelled" not in _types(platform, waiting)
    assert environment["HETERO_WORKLOAD_ID"] == str(waiting)
