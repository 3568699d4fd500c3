"""What one user's requests may take of a server every user shares: bounded bodies, and submissions at a rate.

    limits = BodyLimits(body_bytes=2 << 20, field_bytes=1 << 20)
    limits.check_body(len(raw))            # PayloadTooLarge (413) naming c.HeteroApp.max_body_bytes
    limits.check_fields(data)              # ... naming the field and c.HeteroApp.max_field_bytes

    rate = SubmissionRate(per_minute=60, burst=30, clock=clock.monotonic)
    rate.admit("alice")                    # TooManyRequests (429) with retry_after_s once her bucket is empty

    reports = ReportRate(per_second=5, burst=20, clock=clock.monotonic)
    reports.admit(7)                       # ... per workload, for the figures it reports of itself

A 13 MB ``code`` field once held every other user's requests for 80 s: a bound refuses it at once, and a body
under it is parsed in a worker thread (see ``ApiHandler.prepare``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from ..errors import PayloadTooLarge, TooManyRequests
from ..i18n import N_, Message

__all__ = ["BodyLimits", "ReportRate", "SubmissionRate"]

BODY_TOO_LARGE = N_("the request body is {size} bytes, over this server's limit of {limit} bytes "
                    "(c.HeteroApp.max_body_bytes)")
FIELD_TOO_LARGE = N_("field {field!r} is over this server's limit of {limit} bytes for one value "
                     "(c.HeteroApp.max_field_bytes)")
TOO_MANY_SUBMISSIONS = N_("user {user} submitted more than {burst} workloads at once or more than {per_minute} a "
                          "minute (c.HeteroApp.submissions_per_minute); try again in {retry_after_s} s")
TOO_MANY_REPORTS = N_("workload {workload} reported its figures more than {burst} times at once or more than "
                      "{per_second} times a second (c.HeteroApp.metric_reports_per_s); nothing was stored; try again "
                      "in {retry_after_s} s")


@dataclass(frozen=True)
class BodyLimits:
    """Bytes a request body, and one text value in it (a job's code, an env value, a parameter), may have."""

    body_bytes: int = 4 << 20
    field_bytes: int = 1 << 20

    def check_body(self, size: int) -> None:
        if self.body_bytes and size > self.body_bytes:
            raise PayloadTooLarge(Message(BODY_TOO_LARGE, size=size, limit=self.body_bytes), field="body",
                                  limit_bytes=self.body_bytes)

    def check_fields(self, data: Any, path: str = "") -> None:
        """Every text value and key of parsed JSON; the first over the limit is refused, named by its path."""
        if not self.field_bytes:
            return
        if isinstance(data, str):
            # Four bytes a character at most: only long text needs encoding to be measured.
            if len(data) * 4 > self.field_bytes and len(data.encode("utf-8", "surrogatepass")) > self.field_bytes:
                field = path or "body"
                raise PayloadTooLarge(Message(FIELD_TOO_LARGE, field=field, limit=self.field_bytes), field=field,
                                      limit_bytes=self.field_bytes)
        elif isinstance(data, dict):
            for key, value in data.items():
                where = f"{path}.{key}" if path else str(key)
                self.check_fields(key, where)
                self.check_fields(value, where)
        elif isinstance(data, list):
            for index, value in enumerate(data):
                self.check_fields(value, f"{path}[{index}]")


class _TokenBuckets:
    """A token bucket per key: ``burst`` at once, refilled at ``per_s``; thread-safe (the loop and worker threads)."""

    # Keys remembered before those whose buckets are full again (the same as no bucket) are forgotten.
    _FORGET_PAST = 10_000

    def __init__(self, *, per_s: float, burst: int, clock: Callable[[], float]):
        self.per_s = per_s
        self.burst = max(burst, 1)
        self.clock = clock  # monotonic: a wall-clock step must neither refill nor drain a bucket
        self._buckets: dict[Hashable, tuple[float, float]] = {}  # key -> (tokens, when counted)
        self._lock = threading.Lock()

    def take(self, key: Hashable) -> float | None:
        """One token of ``key``'s bucket: None when there was one, else the seconds until there is."""
        with self._lock:
            now = self.clock()
            tokens, then = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - then) * self.per_s)
            if tokens < 1:
                self._buckets[key] = (tokens, now)
                return round((1 - tokens) / self.per_s, 1)
            self._buckets[key] = (tokens - 1, now)
            if len(self._buckets) > self._FORGET_PAST:
                full_after = self.burst / self.per_s
                self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < full_after}
            return None


class SubmissionRate:
    """A token bucket per user: ``burst`` submissions at once, refilled at ``per_minute``; 0 admits everything."""

    def __init__(self, *, per_minute: float, burst: int, clock: Callable[[], float]):
        self.per_minute = per_minute
        self.burst = max(burst, 1)
        self._buckets = _TokenBuckets(per_s=per_minute / 60, burst=burst, clock=clock) if per_minute else None

    def admit(self, user: str) -> None:
        if self._buckets is None:
            return
        retry_after_s = self._buckets.take(user)
        if retry_after_s is not None:
            raise TooManyRequests(Message(TOO_MANY_SUBMISSIONS, user=user, burst=self.burst,
                                          per_minute=f"{self.per_minute:g}", retry_after_s=retry_after_s),
                                  retry_after_s=retry_after_s)


class ReportRate:
    """A token bucket per workload for the figures it reports: ``burst`` reports at once, refilled at ``per_second``;
    each report is a write transaction, and the store has one writer. 0 admits everything."""

    def __init__(self, *, per_second: float, burst: int, clock: Callable[[], float]):
        self.per_second = per_second
        self.burst = max(burst, 1)
        self._buckets = _TokenBuckets(per_s=per_second, burst=burst, clock=clock) if per_second else None

    def admit(self, workload_id: int) -> None:
        if self._buckets is None:
            return
        retry_after_s = self._buckets.take(workload_id)
        if retry_after_s is not None:
            raise TooManyRequests(Message(TOO_MANY_REPORTS, workload=workload_id, burst=self.burst,
                                          per_second=f"{self.per_second:g}", retry_after_s=retry_after_s),
                                  retry_after_s=retry_after_s)
