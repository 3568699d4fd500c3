"""Alerts, evaluated server-side: the catalog's rules over the platform every ``interval_s``, each alert kept in the
store from firing to resolved, and told to a webhook when one is configured.

    alerts = Alerts(catalog=..., repository=..., inventory=..., clock=..., quota_use=..., device_memory=...,
                          webhook="http://127.0.0.1:9093/hetero", interval_s=10)
    alerts.tick()                 # after each scheduler tick, on the event loop: a round when one is due
    alerts.list(identity, "firing")

A round reads the store and the inventory in a worker thread (never on the event loop), fires what is newly
found and resolves what is found no more (each an event too), then posts each change to the webhook:
``{"version": 1, "status": "firing"|"resolved", "alert": {...}}``. A delivery that fails is recorded on the
alert with the reason; alerts do not wait for the webhook.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from tornado import httpclient

from ...catalog import Catalog
from ...store import Repository
from ...store.tables import AlertRow
from ..clock import Clock
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..scheduling.inventory import Inventory
from .alerting import Finding, Observed, findings, message_of

__all__ = ["Alerts", "alert_json"]

log = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_S = 5.0


class Alerts(ReadsLiveCatalog):
    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, inventory: Inventory, clock: Clock,
                 quota_use: Callable, device_memory: Callable[[], list[tuple[int, str, float, float]]],
                 webhook: str = "", interval_s: float = 10.0):
        self.live_catalog = LiveCatalog.of(catalog)
        self.rules = self.catalog.alerts  # replaced when the catalog is reloaded
        self.repository = repository
        self.inventory = inventory
        self.clock = clock
        self.quota_use = quota_use  # tenant -> its quota and use per flavor
        self.device_memory = device_memory  # running replicas' device memory, where measured
        self.webhook = webhook
        self.interval_s = interval_s
        self._round: asyncio.Task | None = None
        self._last = float("-inf")  # monotonic time of the last round

    # -- evaluation --------------------------------------------------------------------------

    def observe(self) -> Observed:
        now = self.clock.wall()
        longest = max((rule.window_s for rule in self.rules if rule.kind == "failure-rate"), default=0)
        quota = [(tenant.name, limit["flavor"], limit["used"]["device_milli"] / 1000,
                  limit["nominal"]["device_milli"] / 1000)
                 for tenant in self.catalog.tenants for limit in self.quota_use(tenant)]
        return Observed(
            now=now, oldest_pending=self.repository.oldest_pending(),
            max_wait={queue.name: queue.max_wait_s for queue in self.catalog.queues},
            nodes={view.name: view.state for view in self.inventory.nodes()},
            outcomes=self.repository.attempt_outcomes(now - longest) if longest else [],
            quota=quota, device_memory=self.device_memory(),
            rejected=[(row.kind, row.name, row.failed_step or "", (row.steps[-1]["evidence"] if row.steps else ""))
                      for row in self.repository.onboarding() if row.state == "rejected"],
        )

    def evaluate(self) -> list[tuple[str, AlertRow]]:
        """One round: fire what is newly found, resolve what is no longer; the changes, in order. Blocking."""
        now = self.clock.wall()
        found = findings(self.rules, self.observe())
        firing = {(row.rule, row.subject): row for row in self.repository.alerts(state="firing", limit=100_000)}
        changes: list[tuple[str, AlertRow]] = []
        for key, finding in found.items():
            if key not in firing:
                changes.append(("firing", self.repository.fire_alert(_row(finding, now))))
        for key, row in firing.items():
            if key not in found:
                changes.append(("resolved", self.repository.resolve_alert(row.id, now, f"resolved: {row.message}")))
        return changes

    # -- on the event loop -------------------------------------------------------------------

    def tick(self) -> None:
        """Start a round when one is due and none runs."""
        now = self.clock.monotonic()
        if now - self._last < self.interval_s or (self._round is not None and not self._round.done()):
            return
        self._last = now
        self._round = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            changes = await asyncio.to_thread(self.evaluate)
        except Exception:
            log.exception("jupyter-hetero: evaluating the alert rules failed")
            return
        for status, row in changes:
            log.warning("jupyter-hetero: alert %s: %s", status, row.message)
            if self.webhook:
                await self.deliver(status, row)

    async def deliver(self, status: str, row: AlertRow) -> None:
        body = json.dumps({"version": 1, "status": status, "alert": alert_json(row)}, ensure_ascii=False)
        request = httpclient.HTTPRequest(self.webhook, method="POST", body=body, request_timeout=WEBHOOK_TIMEOUT_S,
                                         connect_timeout=WEBHOOK_TIMEOUT_S,
                                         headers={"Content-Type": "application/json; charset=utf-8"})
        try:
            response = await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
            outcome = "delivered" if 200 <= response.code < 300 else f"the webhook answered {response.code}"
        except OSError as exc:
            outcome = f"the webhook could not be reached: {exc}"
        await asyncio.to_thread(self.repository.record_delivery, row.id,
                                {"status": status, "at": self.clock.wall(), "outcome": outcome})

    # -- the API's side ----------------------------------------------------------------------

    def list(self, identity: Identity, state: str | None) -> list[dict[str, Any]]:
        """Alerts newest first: every one for platform admins, the platform's and their tenant's for others."""
        return [alert_json(row) for row in self.repository.alerts(state=state)
                if identity.is_platform_admin or row.tenant in (None, identity.tenant.name)]


def _row(finding: Finding, now: float) -> AlertRow:
    return AlertRow(rule=finding.rule, kind=finding.kind, subject=finding.subject, tenant=finding.tenant,
                    severity=finding.severity, state="firing", message=finding.message, figures=finding.figures,
                    fired_at=now, resolved_at=None, deliveries=[])


def alert_json(row: AlertRow) -> dict[str, Any]:
    return {"id": row.id, "rule": row.rule, "kind": row.kind, "subject": row.subject, "tenant": row.tenant,
            "severity": row.severity, "state": row.state, "message": message_of(row.kind, row.figures),
            "message_zh": message_of(row.kind, row.figures, "zh"),
            "figures": row.figures, "fired_at": row.fired_at, "resolved_at": row.resolved_at,
            "deliveries": row.deliveries}
