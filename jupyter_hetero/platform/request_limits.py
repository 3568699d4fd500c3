"""What one user's requests may take of a server every user shares: bounded bodies, and submissions at a rate.

    limits = BodyLimits(body_bytes=2 << 20, field_bytes=1 << 20)
    limits.check_body(len(raw))            # PayloadTooLarge (413) naming c.HeteroApp.max_body_bytes
    limits.check_fields(data)              # ... naming the field and c.HeteroApp.max_field_bytes

    rate = SubmissionRate(per_minute=60, burst=30, clock=clock.monotonic)
    rate.admit("alice")                    # TooManyRequests (429) with retry_after_s once her bucket is empty

A 13 MB ``code`` field once held every other user's requests for 80 s: a bound refuses it at once, and a body
under it is parsed in a worker thread (see ``ApiHandler.prepare``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import PayloadTooLarge, TooManyRequests
from ..i18n import N_, Message

__all__ = ["BodyLimits", "SubmissionRate"]

BODY_TOO_LARGE = N_("the request body is {size} bytes, over this server's limit of {limit} bytes "
                    "(c.HeteroApp.max_body_bytes)")
FIELD_TOO_LARGE = N_("field {field!r} is over this server's limit of {limit} bytes for one value "
                     "(c.HeteroApp.max_field_bytes)")
TOO_MANY_SUBMISSIONS = N_("user {user} submitted more than {burst} workloads at once or more than {per_minute} a "
                          "minute (c.HeteroApp.submissions_per_minute); try again in {retry_after_s} s")


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


class SubmissionRate:
    """A token bucket per user: ``burst`` submissions at once, refilled at ``per_minute``; 0 admits everything."""

    def __init__(self, *, per_minute: float, burst: int, clock: Callable[[], float]):
        self.per_minute = per_minute
        self.burst = max(burst, 1)
        self.clock = clock  # monotonic: a wall-clock step must neither refill nor drain a bucket
        self._buckets: dict[str, tuple[float, float]] = {}  # user -> (tokens, when counted)
        self._lock = threading.Lock()  # submissions are admitted on the loop and in worker threads

    def admit(self, user: str) -> None:
        if not self.per_minute:
            return
        rate_s = self.per_minute / 60
        with self._lock:
            now = self.clock()
            tokens, then = self._buckets.get(user, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - then) * rate_s)
            if tokens < 1:
                self._buckets[user] = (tokens, now)
                retry_after_s = round((1 - tokens) / rate_s, 1)
                raise TooManyRequests(Message(TOO_MANY_SUBMISSIONS, user=user, burst=self.burst,
                                              per_minute=f"{self.per_minute:g}", retry_after_s=retry_after_s),
                                      retry_after_s=retry_after_s)
            self._buckets[user] = (tokens - 1, now)
