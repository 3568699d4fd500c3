"""Figures a workload reports of itself, from inside it: one call, a plain HTTP POST, no other dependency.

    from jupyter_hetero import report
    report(loss=0.31, step=120)                  # now
    report({"val_loss": 0.4}, at=1765100000.0)   # names that are not Python identifiers go in a dict

Inside a hetero job, kernel or service the server sets ``HETERO_WORKLOAD_ID``, ``JUPYTER_HETERO_URL`` and
``JUPYTER_HETERO_TOKEN`` (the workload's own credential); outside one, :class:`NotInWorkload` says so.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

__all__ = ["NotInWorkload", "ReportRefused", "report"]

API = "hetero/api/v1"
TIMEOUT_S = 10.0
# How long one call waits out 429s (reports faster than the server's c.HeteroApp.metric_reports_per_s) in all.
RATE_WAIT_S = 30.0


class NotInWorkload(RuntimeError):
    """``report()`` was called outside a workload the server started: there is nothing to report to."""


class ReportRefused(RuntimeError):
    """The server refused the figures; ``status`` and ``field`` say why (a 400 names the bad figure)."""

    def __init__(self, status: int, body: dict[str, Any]):
        self.status, self.field, self.body = status, body.get("field"), body
        super().__init__(f"{status}: {body.get('message') or body}")


def report(figures: Mapping[str, float] | None = None, /, *, at: float | None = None,
           environ: Mapping[str, str] | None = None, **named: float) -> dict[str, Any]:
    """Send figures of this workload to its server; what the server stored. Reporting faster than the server
    allows, the call waits as long as its 429 says (up to ``RATE_WAIT_S`` in all) and sends again."""
    env = os.environ if environ is None else environ
    workload, url, token = env.get("HETERO_WORKLOAD_ID"), env.get("JUPYTER_HETERO_URL"), env.get("JUPYTER_HETERO_TOKEN")
    if not (workload and url and token):
        missing = [name for name, value in (("HETERO_WORKLOAD_ID", workload), ("JUPYTER_HETERO_URL", url),
                                            ("JUPYTER_HETERO_TOKEN", token)) if not value]
        raise NotInWorkload("jupyter_hetero.report() works inside a job, kernel or service jupyter-hetero started; "
                            f"this process lacks {', '.join(missing)}")
    body: dict[str, Any] = {"metrics": {**(figures or {}), **named}}
    if at is not None:
        body["at"] = at
    request = urllib.request.Request(
        f"{url.rstrip('/')}/{API}/workloads/{workload}/metrics", data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    give_up_at = time.monotonic() + RATE_WAIT_S
    while True:
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:  # noqa: S310 - the server's own URL
                return json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as refusal:
            wait = _retry_after(refusal) if refusal.code == 429 else None
            if wait is not None and time.monotonic() + wait <= give_up_at:
                time.sleep(wait)  # in the workload's own process: a tight loop slows to the rate, it is not broken
                continue
            try:
                said = json.loads(refusal.read() or b"{}")
            except ValueError:
                said = {"message": refusal.reason}
            raise ReportRefused(refusal.code, said if isinstance(said, dict) else {"message": said}) from None


def _retry_after(refusal: urllib.error.HTTPError) -> float | None:
    try:
        return max(0.0, float(refusal.headers.get("Retry-After", "")))
    except (TypeError, ValueError):
        return None
