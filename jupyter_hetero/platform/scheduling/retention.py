"""How long ended workloads' metric samples are kept: a bounded prune in the scheduler's thread.

    retention = MetricRetention(repository, retention_s=30 * 86400, wall=clock.wall, now=times.now)
    retention.after_tick()   # each tick: nothing, or one batch of at most PRUNE_BATCH_ROWS rows (one write)

At 1,000 running workloads the samples grow by about 85 MB an hour; those of workloads that ended more than
``retention_s`` ago go. A pass starts at most once every ``PRUNE_EVERY_S`` and deletes one batch per tick until a
batch comes back short, so no tick holds the store's single writer for a whole backlog. The attempts' own totals
(cpu_seconds, io bytes, peaks in ``attempts.metrics``) are not samples and stay.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

from ...store import Repository

__all__ = ["METRIC_RETENTION_S", "PRUNE_BATCH_ROWS", "PRUNE_EVERY_S", "MetricRetention"]

log = logging.getLogger(__name__)

# Seconds ended workloads' samples are kept (HeteroApp.metric_retention_s): 30 days.
METRIC_RETENTION_S = 30 * 86400.0
# The most rows one write deletes.
PRUNE_BATCH_ROWS = 50_000
# Scheduler seconds between the starts of two passes.
PRUNE_EVERY_S = 3600.0


class MetricRetention:
    """Deletes ended workloads' old samples in bounded batches; ``retention_s`` 0 keeps them all."""

    def __init__(self, repository: Repository, *, retention_s: float, wall: Callable[[], float],
                 now: Callable[[], float], batch_rows: int = PRUNE_BATCH_ROWS, every_s: float = PRUNE_EVERY_S):
        self.repository = repository
        self.retention_s = retention_s
        self.wall = wall  # the cut-off compares with finished_at, which is wall time
        self.now = now  # scheduler time: when a pass is due, whatever the wall clock does
        self.batch_rows = batch_rows
        self.every_s = every_s
        self._next_pass: float | None = None  # scheduler time the next pass may start; None: at the first tick
        self._in_pass = False
        self.deleted = 0  # rows deleted since the server started (for the logs and tests)

    def after_tick(self) -> int:
        """One batch when a pass is on or due; returns the rows it deleted."""
        if not self.retention_s:
            return 0
        now = self.now()
        if not self._in_pass:
            if self._next_pass is not None and now < self._next_pass:
                return 0
            self._in_pass, self._next_pass = True, now + self.every_s
        try:
            deleted = self.repository.delete_ended_metric_samples(ended_before=self.wall() - self.retention_s,
                                                                  limit=self.batch_rows)
        except SQLAlchemyError:
            # Housekeeping must not fail the tick it follows: this pass ends, the next is due in an hour.
            log.exception("jupyter-hetero: deleting old metric samples failed")
            self._in_pass = False
            return 0
        self.deleted += deleted
        if deleted < self.batch_rows:
            self._in_pass = False
        if deleted:
            log.info("jupyter-hetero: deleted %d metric samples of workloads ended over %g s ago", deleted,
                     self.retention_s)
        return deleted
