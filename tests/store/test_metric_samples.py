"""Metric samples on real databases: one write for many, series per name, the newest figures, reported points bounded."""

from __future__ import annotations

import pytest

from sqlalchemy import event, inspect

from jupyter_hetero.store import MetricSample
from jupyter_hetero.store.tables import WorkloadRow


def _workload(repo, name: str) -> int:
    row = WorkloadRow(kind="job", name=name, tenant="vision", user="ada", template="training", queue="training",
                      request={}, spec={}, state="running", held_cpu_milli=0, held_memory_mib=0, held_device_milli=0,
                      attempts=1)
    return repo.add_workload(row, reason="submitted").id


def test_schema_11_makes_the_table_with_its_index(repo):
    with repo.engine.connect() as connection:
        indexes = {index["name"]: index["column_names"] for index in inspect(connection).get_indexes("metric_samples")}
    assert indexes["ix_metric_samples_workload_name_at"] == ["workload_id", "name", "at"]


def test_many_samples_are_one_write_and_read_back_as_series_with_units_and_sources(repo):
    first, second = _workload(repo, "a"), _workload(repo, "b")
    commits = []
    event.listen(repo.engine, "commit", lambda _connection: commits.append(1))
    repo.record_metric_samples([
        MetricSample(first, 1, "memory_rss", 100.0, at=10.0, source="procfs"),
        MetricSample(first, 1, "memory_rss", 120.0, at=20.0, source="procfs"),
        MetricSample(first, 2, "memory_rss", 90.0, at=30.0, source="procfs"),
        MetricSample(first, 1, "device_util", 55.0, at=20.0, source="nvidia-smi"),
        MetricSample(second, 1, "loss", 0.5, at=15.0, source="reported"),
    ])
    assert len(commits) == 1
    series = repo.metric_series(first)
    assert set(series) == {"memory_rss", "device_util"}
    assert series["memory_rss"].unit == "MiB" and series["memory_rss"].source == "procfs"
    assert series["memory_rss"].points == [(10.0, 100.0, 1), (20.0, 120.0, 1), (30.0, 90.0, 2)]
    assert series["device_util"].source == "nvidia-smi"
    assert list(repo.metric_series(first, names=["device_util"])) == ["device_util"]
    assert repo.metric_series(second)["loss"].unit is None
    assert repo.metric_series(second, names=[]) == {}


def test_the_newest_figure_of_each_workload_and_name_in_one_query(repo):
    first, second, quiet = _workload(repo, "a"), _workload(repo, "b"), _workload(repo, "c")
    repo.record_metric_samples([
        MetricSample(first, 1, "cpu_util", 10.0, at=10.0, source="procfs"),
        MetricSample(first, 1, "cpu_util", 80.0, at=20.0, source="procfs"),
        MetricSample(second, 1, "device_util", 40.0, at=5.0, source="exporter:dcgm"),
    ])
    queries = []
    event.listen(repo.engine, "before_cursor_execute", lambda *args: queries.append(args[2]))
    latest = repo.latest_metrics([first, second, quiet])
    assert len([sql for sql in queries if sql.lstrip().upper().startswith("SELECT")]) == 1
    assert latest == {first: {"cpu_util": (80.0, "procfs")}, second: {"device_util": (40.0, "exporter:dcgm")}}
    assert repo.latest_metrics([]) == {}


def test_a_reported_point_replaces_the_one_of_the_same_second(repo):
    workload = _workload(repo, "a")
    repo.record_reported_metrics(workload, 1, {"loss": 0.9, "step": 1}, at=100.2, max_points=10)
    repo.record_reported_metrics(workload, 1, {"loss": 0.8}, at=100.7, max_points=10)
    repo.record_reported_metrics(workload, 1, {"loss": 0.7}, at=101.0, max_points=10)
    series = repo.metric_series(workload)
    assert series["loss"].points == [(100.7, 0.8, 1), (101.0, 0.7, 1)]
    assert series["step"].points == [(100.2, 1.0, 1)]


@pytest.mark.parametrize("cap", [pytest.param(8, id="even cap"), pytest.param(5, id="odd cap")])
def test_past_the_cap_the_oldest_half_is_thinned_and_the_newest_point_kept(repo, cap):
    workload = _workload(repo, "a")
    thinned = []
    for second in range(3 * cap):
        thinned += repo.record_reported_metrics(workload, 1, {"loss": float(second)}, at=float(second), max_points=cap)
    points = repo.metric_series(workload)["loss"].points
    assert len(points) <= cap
    assert thinned and set(thinned) == {"loss"}
    assert points[0][0] == 0.0 and points[-1][0] == float(3 * cap - 1)  # the whole curve, at a coarser grain


def test_ended_workloads_samples_are_deleted_a_bounded_batch_a_write(repo):
    ended, running = _workload(repo, "ended"), _workload(repo, "running")
    repo.update_workload(ended, event="succeeded", state="succeeded", finished_at=500.0)
    repo.record_metric_samples([MetricSample(wid, 1, "cpu_util", float(i), at=float(i), source="procfs")
                                for wid in (ended, running) for i in range(5)])
    assert repo.delete_ended_metric_samples(ended_before=400.0, limit=3) == 0  # it ended after the cut-off
    assert repo.delete_ended_metric_samples(ended_before=600.0, limit=3) == 3
    assert repo.delete_ended_metric_samples(ended_before=600.0, limit=3) == 2
    assert repo.metric_series(ended) == {} and len(repo.metric_series(running)["cpu_util"].points) == 5
