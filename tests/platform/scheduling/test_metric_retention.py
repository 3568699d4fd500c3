"""Ended workloads' metric samples go after the retention, in bounded batches, from the scheduler's own tick."""

from __future__ import annotations

from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from jupyter_hetero.backends.local import load_emulated_nodes
from jupyter_hetero.backends.local.processes import LocalBackend
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.engine import Engine
from jupyter_hetero.platform.clock import SteadyTime
from jupyter_hetero.platform.scheduling.inventory import Inventory
from jupyter_hetero.platform.scheduling.retention import MetricRetention
from jupyter_hetero.platform.scheduling.scheduler import Scheduler
from jupyter_hetero.store import MetricSample, Repository
from jupyter_hetero.store.tables import AttemptRow, WorkloadRow

from ...conftest import DEMO_NODES
from ...fakes import FixedClock

DAY = 86400.0


def _workload(repo: Repository, name: str, *, state: str, finished_at: float | None, samples: int, at: float) -> int:
    row = WorkloadRow(kind="job", name=name, tenant="vision", user="ada", template="training", queue="training",
                      request={}, spec={}, state=state, held_cpu_milli=0, held_memory_mib=0, held_device_milli=0,
                      attempts=1, finished_at=finished_at)
    workload_id = repo.add_workload(row, reason="submitted").id
    repo.add_attempt(AttemptRow(workload_id=workload_id, number=1, node="n1", placement={}, processes=[],
                                started_at=at, ended_at=finished_at, outcome="succeeded" if finished_at else None,
                                log_path="/dev/null", metrics={"cpu_seconds": 12.5, "io_write_bytes": 4096}))
    repo.record_metric_samples([MetricSample(workload_id, 1, "cpu_util", float(i), at=at + i, source="procfs")
                                for i in range(samples)])
    return workload_id


def _counts(repo: Repository, *workload_ids: int) -> list[int]:
    return [sum(len(one.points) for one in repo.metric_series(wid).values()) for wid in workload_ids]


def _deletes(repo: Repository) -> list[str]:
    """The DELETE statements on metric_samples from now on: one a write."""
    seen: list[str] = []
    event.listen(repo.engine, "before_cursor_execute",
                 lambda _c, _cursor, sql, *_rest: seen.append(sql)
                 if sql.lstrip().upper().startswith("DELETE") and "metric_samples" in sql else None)
    return seen


def test_old_ended_samples_go_in_bounded_batches_running_and_recent_ones_stay(tmp_path):
    clock = FixedClock()
    now = clock.wall()
    repo = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=clock.wall)
    try:
        retention = MetricRetention(repo, retention_s=30 * DAY, wall=clock.wall, now=SteadyTime(clock).now,
                                    batch_rows=40)
        old = _workload(repo, "old", state="succeeded", finished_at=now - 31 * DAY, samples=100, at=now - 32 * DAY)
        older = _workload(repo, "older", state="failed", finished_at=now - 40 * DAY, samples=30, at=now - 41 * DAY)
        recent = _workload(repo, "recent", state="succeeded", finished_at=now - 29 * DAY, samples=20,
                           at=now - 30 * DAY)
        running = _workload(repo, "running", state="running", finished_at=None, samples=20, at=now - 60 * DAY)
        deletes = _deletes(repo)
        assert retention.after_tick() == 40 and sum(_counts(repo, old, older)) == 90
        assert len(deletes) == 1  # one batch, one write, a tick
        assert retention.after_tick() == 40 and retention.after_tick() == 40
        assert retention.after_tick() == 10  # short: the pass ends with it
        assert _counts(repo, old, older, recent, running) == [0, 0, 20, 20]
        assert len(deletes) == 4
        # An attempt's totals are not samples: they stay.
        assert repo.attempts(old)[0].metrics == {"cpu_seconds": 12.5, "io_write_bytes": 4096}
        clock.advance(2 * DAY)  # "recent" ended 31 days ago now; the running one never ended
        assert retention.after_tick() == 20 and _counts(repo, recent, running) == [0, 20]
        later = _workload(repo, "later", state="succeeded", finished_at=clock.wall() - 31 * DAY, samples=5,
                          at=clock.wall() - 32 * DAY)
        clock.advance(600)
        assert retention.after_tick() == 0 and len(deletes) == 5  # within the hour: no pass, no write
        clock.advance(3600)
        assert retention.after_tick() == 5 and _counts(repo, later, running) == [0, 20]
        assert retention.deleted == 130 + 20 + 5
    finally:
        repo.close()


def test_the_scheduler_prunes_after_its_tick_in_its_own_thread(tmp_path):
    clock = FixedClock()
    repo = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=clock.wall)
    catalog = load_catalog(DEFAULT_CATALOG_PATH)
    inventory = Inventory(catalog, repo)
    inventory.refresh(load_emulated_nodes(DEMO_NODES))
    scheduler = Scheduler(catalog=catalog, repository=repo, inventory=inventory, backend=LocalBackend(),
                          engine=Engine(), clock=clock, work_dir=tmp_path / "work", metric_retention_s=7 * DAY)
    try:
        old = _workload(repo, "old", state="succeeded", finished_at=clock.wall() - 8 * DAY, samples=7,
                        at=clock.wall() - 9 * DAY)
        kept = _workload(repo, "kept", state="succeeded", finished_at=clock.wall() - 6 * DAY, samples=7,
                         at=clock.wall() - 7 * DAY)
        scheduler.tick()
        assert _counts(repo, old, kept) == [0, 7] and scheduler.retention.deleted == 7
    finally:
        scheduler.close()
        repo.close()


def test_retention_zero_keeps_every_sample(tmp_path):
    clock = FixedClock()
    repo = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=clock.wall)
    try:
        old = _workload(repo, "old", state="succeeded", finished_at=clock.wall() - 400 * DAY, samples=3,
                        at=clock.wall() - 401 * DAY)
        retention = MetricRetention(repo, retention_s=0, wall=clock.wall, now=SteadyTime(clock).now)
        assert retention.after_tick() == 0 and _counts(repo, old) == [3]
    finally:
        repo.close()


def test_a_failing_prune_does_not_fail_the_tick_and_waits_for_the_next_pass(tmp_path):
    clock = FixedClock()
    repo = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=clock.wall)
    try:
        old = _workload(repo, "old", state="succeeded", finished_at=clock.wall() - 40 * DAY, samples=3,
                        at=clock.wall() - 41 * DAY)
        retention = MetricRetention(repo, retention_s=30 * DAY, wall=clock.wall, now=SteadyTime(clock).now)

        def locked(_connection, _cursor, statement, *_rest):
            if statement.lstrip().upper().startswith("DELETE"):
                raise OperationalError(statement, {}, Exception("database is locked"))

        event.listen(repo.engine, "before_cursor_execute", locked)
        assert retention.after_tick() == 0 and _counts(repo, old) == [3]
        event.remove(repo.engine, "before_cursor_execute", locked)
        assert retention.after_tick() == 0  # the failed pass ended; the next one is an hour away
        clock.advance(3600)
        assert retention.after_tick() == 3 and _counts(repo, old) == [0]
    finally:
        repo.close()
