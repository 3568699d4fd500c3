"""When an attempt ends, what the tick writes is whole: between any two of its writes, a reader of the store
(the API, a report, the reliability tests' standing checker) never sees a workload that is no longer active
still holding a placement or capacity. Each test notes the row as the store has it just before every write
to it (``InterposingRepository``), so a release split over two writes is caught without depending on timing."""

from __future__ import annotations

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


def test_an_attempt_lost_with_its_node_is_released_and_requeued_in_one_write(platform, tmp_path):
    job = platform.job(tmp_path)
    seen = _note_before_every_write(platform, job)
    platform.scheduler.inventory.mark_lost("cpu-0", "unplugged in a test")
    platform.tick_until(job, lambda row: row.node_losses == 1)
    assert not _holding_while_inactive(seen), seen
    types = _types(platform, job)
    assert types[types.index("lost") + 1] == "requeued"
