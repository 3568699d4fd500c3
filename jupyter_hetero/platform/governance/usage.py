"""Usage and cost: what each tenant, user, queue, template, cost centre or flavor held over a period, in device-hours,
normalised accelerator-hours and the catalog's prices, with the idle part of what was held shown apart.

    usage_report(attempts, catalog, since=t0, until=t1, now=t1, by="tenant")
    # {"by": "tenant", "rows": [{"key": "vision", "device_hours": 3.0, "accelerator_hours": 3.0, "idle_device_hours": 0.6,
    #   "unmeasured_device_hours": 0.0, "core_hours": 12.0, "cost": 9.0, "attempts": 4, ...}], "total": {...}}

Pure: it reads the attempts it is given (``Repository.attempts_between``). Each attempt counts for the part of its
run inside the period, with the devices of its placement (fractions as such) and the cores it asked for per
replica. A flavor's device-hour is priced at its ``price_per_hour`` and counts ``accelerator_weight`` normalised
accelerator-hours (a CPU flavor's core-hour is priced instead). Idle device-hours are the held ones times one
minus the attempt's mean measured utilisation; where nothing was measured (emulated nodes, pods no exporter
reported) they are counted as unmeasured instead, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...catalog import Catalog
from ...catalog.models import Flavor
from ...models import UsageQuery
from ...store import Repository
from ..clock import Clock
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog

__all__ = ["GROUPS", "UsageLedger", "held", "hourly_cost", "usage_report"]

GROUPS = ("tenant", "user", "queue", "template", "cost_centre", "flavor")
_FIGURES = ("device_hours", "accelerator_hours", "idle_device_hours", "unmeasured_device_hours", "core_hours",
            "cost", "attempts")


def held(placement: dict[str, Any], request: dict[str, Any] | None) -> tuple[float, float]:
    """What an attempt held: devices (fractions as such) and cores (per replica, times its replicas)."""
    devices = sum(d["milli"] for slot in placement["slots"] for d in slot["devices"]) / 1000
    cores = (request or {}).get("request", {}).get("cpu_milli", 0) / 1000 * len(placement["slots"])
    return devices, cores


def hourly_cost(flavor: Flavor | None, devices: float, cores: float) -> float:
    """An hour of it at the catalog's price: per device-hour, or per core-hour for a CPU flavor."""
    return (flavor.price_per_hour if flavor else 0.0) * (devices if devices else cores)


def usage_report(attempts: Iterable[tuple], catalog: Catalog, *, since: float, until: float, now: float,
                 by: str) -> dict[str, Any]:
    flavors = {flavor.name: flavor for flavor in catalog.flavors}
    centres = {tenant.name: tenant.cost_centre for tenant in catalog.tenants}
    rows: dict[str, dict[str, Any]] = {}
    for tenant, user, queue, template, placement, request, started, ended, metrics in attempts:
        if not placement:
            continue
        hours = max(0.0, min(ended if ended is not None else now, until) - max(started, since)) / 3600
        if hours == 0:
            continue
        flavor = flavors.get(placement["flavor"])
        devices, cores = held(placement, request)
        key = {"tenant": tenant, "user": user, "queue": queue, "template": template,
               "cost_centre": centres.get(tenant) or "", "flavor": placement["flavor"]}[by]
        row = rows.setdefault(key, {"key": key, **dict.fromkeys(_FIGURES, 0.0)})
        if by == "tenant":
            row["cost_centre"] = centres.get(tenant) or ""
        util = (metrics or {}).get("device_util_pct_mean")
        row["device_hours"] += devices * hours
        row["accelerator_hours"] += devices * hours * (flavor.accelerator_weight if flavor else 1.0)
        if util is None:
            row["unmeasured_device_hours"] += devices * hours
        else:
            row["idle_device_hours"] += devices * hours * (1 - util / 100)
        row["core_hours"] += cores * hours
        row["cost"] += hourly_cost(flavor, devices, cores) * hours
        row["attempts"] += 1
    ordered = sorted(rows.values(), key=lambda row: (-row["cost"], -row["device_hours"], row["key"]))
    total = {name: sum(row[name] for row in ordered) for name in _FIGURES}
    return {"by": by, "since": since, "until": until, "rows": [_rounded(row) for row in ordered],
            "total": _rounded(total)}


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {name: (int(value) if name == "attempts" else round(value, 6)) if name in _FIGURES else value
            for name, value in row.items()}


class UsageLedger(ReadsLiveCatalog):
    """Usage as the caller may see it: everyone's for platform admins, their tenant's for tenant-admins, their
    own for members (each row then theirs)."""

    def __init__(self, catalog: Catalog | LiveCatalog, repository: Repository, clock: Clock):
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self.clock = clock

    def report(self, identity: Identity, query: UsageQuery) -> dict[str, Any]:
        now = self.clock.wall()
        attempts = self.repository.attempts_between(now - query.since, now)
        if not identity.is_platform_admin:
            tenant = identity.tenant.name
            attempts = [a for a in attempts if a[0] == tenant and (identity.is_tenant_admin or a[1] == identity.user)]
        report = usage_report(attempts, self.catalog, since=now - query.since, until=now, now=now, by=query.by)
        scope = "all" if identity.is_platform_admin else "tenant" if identity.is_tenant_admin else "own"
        return {**report, "scope": scope}
