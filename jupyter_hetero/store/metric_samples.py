"""Workloads' figures over time: what the monitor measured and what the workloads reported.

    repo.record_metric_samples([MetricSample(7, 1, "memory_rss", 812.0, at=1000.0, source="procfs")])
    repo.metric_series(7)["memory_rss"].points    # [(1000.0, 812.0, 1)]: (at, value, attempt)
    repo.latest_metrics([7, 8])                  # {7: {"memory_rss": (812.0, "procfs")}}
    repo.delete_ended_metric_samples(ended_before=t, limit=50_000)  # rows deleted, in one write
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from math import floor

from sqlalchemy import and_, delete, func, insert, select

from ..metric_names import unit_of
from .sessions import Sessions
from .tables import MetricSampleRow, WorkloadRow

__all__ = ["MetricSample", "MetricSampleRecords", "MetricSeries"]


@dataclass(frozen=True)
class MetricSample:
    """One figure of one attempt of a workload at one moment, and where it came from."""

    workload_id: int
    attempt: int
    name: str
    value: float
    at: float
    source: str


@dataclass
class MetricSeries:
    """One metric of one workload over all its attempts, oldest first; ``source`` is its newest point's."""

    name: str
    unit: str | None
    source: str
    points: list[tuple[float, float, int]] = field(default_factory=list)  # (at, value, attempt)


class MetricSampleRecords(Sessions):
    """The repository's metric samples; each method is one transaction."""

    def record_metric_samples(self, samples: list[MetricSample]) -> None:
        """Many samples, of any workloads, in one write (the monitor's tick writes all it sampled at once)."""
        if not samples:
            return
        with self.session(write=True) as session:
            session.execute(insert(MetricSampleRow), [
                {"workload_id": sample.workload_id, "attempt": sample.attempt, "name": sample.name,
                 "value": float(sample.value), "at": sample.at, "source": sample.source} for sample in samples])

    def record_reported_metrics(self, workload_id: int, attempt: int, values: Mapping[str, float], *, at: float,
                                max_points: int) -> list[str]:
        """A workload's own figures, at most one point per name and second (a later one in the same second
        replaces it) and at most ``max_points`` per name: past that, every other point of the oldest half
        goes, so a long run keeps its whole curve at a coarser grain. Returns the names that were thinned."""
        if not values:
            return []
        second = floor(at)
        names = list(values)
        thinned = []
        with self.session(write=True) as session:
            session.execute(delete(MetricSampleRow).where(
                MetricSampleRow.workload_id == workload_id, MetricSampleRow.name.in_(names),
                MetricSampleRow.source == "reported", MetricSampleRow.at >= second, MetricSampleRow.at < second + 1))
            counts = dict(session.execute(
                select(MetricSampleRow.name, func.count()).where(
                    MetricSampleRow.workload_id == workload_id, MetricSampleRow.name.in_(names))
                .group_by(MetricSampleRow.name)).all())
            for name in names:
                if counts.get(name, 0) >= max_points:
                    oldest = session.scalars(
                        select(MetricSampleRow.id).where(MetricSampleRow.workload_id == workload_id,
                                                         MetricSampleRow.name == name)
                        .order_by(MetricSampleRow.at, MetricSampleRow.id).limit(max(2, max_points // 2))).all()
                    session.execute(delete(MetricSampleRow).where(MetricSampleRow.id.in_(oldest[1::2])))
                    thinned.append(name)
            session.execute(insert(MetricSampleRow), [
                {"workload_id": workload_id, "attempt": attempt, "name": name, "value": float(value), "at": at,
                 "source": "reported"} for name, value in values.items()])
        return thinned

    def delete_ended_metric_samples(self, *, ended_before: float, limit: int) -> int:
        """At most ``limit`` samples of workloads that ended before ``ended_before`` (wall time), in one write;
        returns how many went. A running or requeued workload has no ``finished_at``, so its samples stay."""
        ended = select(WorkloadRow.id).where(WorkloadRow.finished_at.is_not(None),
                                             WorkloadRow.finished_at < ended_before)
        # The ids first, bounded, in a subquery: one statement that never holds the writer for a whole backlog.
        batch = (select(MetricSampleRow.id).where(MetricSampleRow.workload_id.in_(ended))
                 .limit(max(int(limit), 1)).scalar_subquery())
        with self.session(write=True) as session:
            deleted = session.execute(delete(MetricSampleRow).where(MetricSampleRow.id.in_(batch))
                                      .execution_options(synchronize_session=False))
            return deleted.rowcount or 0

    def metric_series(self, workload_id: int, names: Collection[str] | None = None) -> dict[str, MetricSeries]:
        """Every metric of ``workload_id`` (or only ``names``) as a series, by name."""
        query = (select(MetricSampleRow.name, MetricSampleRow.at, MetricSampleRow.value, MetricSampleRow.attempt,
                        MetricSampleRow.source)
                 .where(MetricSampleRow.workload_id == workload_id)
                 .order_by(MetricSampleRow.name, MetricSampleRow.at, MetricSampleRow.id))
        if names is not None:
            query = query.where(MetricSampleRow.name.in_(list(names)))
        series: dict[str, MetricSeries] = {}
        with self.session() as session:
            for name, at, value, attempt, source in session.execute(query):
                one = series.get(name)
                if one is None:
                    one = series[name] = MetricSeries(name, unit_of(name), source)
                one.points.append((at, value, attempt))
                one.source = source
        return series

    def latest_metrics(self, workload_ids: Collection[int]) -> dict[int, dict[str, tuple[float, str]]]:
        """Each workload's newest figure of each metric, as (value, source), in one query."""
        ids = list(workload_ids)
        if not ids:
            return {}
        newest = (select(MetricSampleRow.workload_id, MetricSampleRow.name, func.max(MetricSampleRow.at).label("at"))
                  .where(MetricSampleRow.workload_id.in_(ids))
                  .group_by(MetricSampleRow.workload_id, MetricSampleRow.name).subquery())
        query = (select(MetricSampleRow.workload_id, MetricSampleRow.name, MetricSampleRow.value,
                        MetricSampleRow.source)
                 .join(newest, and_(MetricSampleRow.workload_id == newest.c.workload_id,
                                    MetricSampleRow.name == newest.c.name, MetricSampleRow.at == newest.c.at))
                 .order_by(MetricSampleRow.id))
        latest: dict[int, dict[str, tuple[float, str]]] = {}
        with self.session() as session:
            for workload_id, name, value, source in session.execute(query):
                latest.setdefault(workload_id, {})[name] = (value, source)  # the later row wins a tie
        return latest
