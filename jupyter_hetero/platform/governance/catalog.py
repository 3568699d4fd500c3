"""Read views over the catalog joined with live counts: templates, queue status, tenant quota use.

The catalog's part of each view (a template, a queue's rules, a tenant's limits) is turned into JSON
once per catalog: every open panel polls these views, and dumping the same frozen models again on
every read was most of what a read did besides answering."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...capability import Held
from ...catalog import Catalog, Queue, Template, Tenant
from ...errors import NotFound
from ...i18n import N_, Message
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..scheduling.queue_status import QueueStatus

__all__ = ["CatalogViews"]


@dataclass(frozen=True)
class _Parts:
    templates: dict[str, dict[str, Any]]
    queues: list[tuple[Queue, dict[str, Any]]]
    limits: dict[str, tuple[Tenant, list[dict[str, Any]]]]


class CatalogViews(ReadsLiveCatalog):
    """Answers the read API: what can be requested, how busy each queue is, what a tenant uses."""

    def __init__(self, catalog: Catalog | LiveCatalog, status: Callable[[], QueueStatus]):
        self.live_catalog = LiveCatalog.of(catalog)
        self.status = status  # the scheduler's status as of its last cycle
        self._parts: tuple[Catalog, _Parts] | None = None

    def _json(self) -> tuple[Catalog, _Parts]:
        """The current catalog's JSON, computed once per catalog (a reload brings another): each catalog is
        frozen, and answers share these read-only parts."""
        catalog = self.catalog
        if self._parts is None or self._parts[0] is not catalog:
            self._parts = (catalog, _Parts(
                templates={template.name: _template_json(template) for template in catalog.templates},
                queues=[(queue, _queue_json(queue)) for queue in sorted(catalog.queues, key=lambda q: -q.priority)],
                limits={tenant.name: (tenant, _limits_json(tenant)) for tenant in catalog.tenants}))
        return self._parts

    def templates(self, *, kind: str | None = None, task_type: str | None = None,
                  tenant: Tenant | None = None) -> list[dict[str, Any]]:
        catalog, parts = self._json()
        return [
            dict(parts.templates[template.name])
            for template in catalog.templates
            if (kind is None or kind in template.kinds)
            and (task_type is None or template.task_type == task_type)
            and (tenant is None or tenant.allows_template(template.name))
        ]

    def template(self, name: str) -> dict[str, Any]:
        catalog, parts = self._json()
        template = catalog.template(name)
        if template is None:
            raise NotFound(Message(N_("no template named {name!r}"), name=name),
                           known=[t.name for t in catalog.templates])
        return dict(parts.templates[template.name])

    def queues(self, tenant: Tenant) -> list[dict[str, Any]]:
        """Every queue with its rules, pending and running counts, waits over the last day, and the
        tenant's quota use in it, as of the last scheduling cycle."""
        status = self.status()
        return [
            {
                **rules,
                "allowed": tenant.allows_queue(queue.name),
                **status.counts.get(queue.name, {"pending": 0, "running": 0}),
                "wait_p50_s": _percentile(status.waits.get(queue.name, []), 50),
                "wait_p95_s": _percentile(status.waits.get(queue.name, []), 95),
                "admitted_last_day": len(status.waits.get(queue.name, [])),
                "quota": self._quota_use(tenant, status.held_in(tenant.name, queue.name)),
                "status_at": status.at,
            }
            for queue, rules in self._json()[1].queues
        ]

    def tenants(self) -> list[dict[str, Any]]:
        """Every tenant with its members, quota and use per flavor (for admins)."""
        held = self.status().held_by_tenant()
        return [
            {
                "tenant": tenant.name, "display": tenant.display.model_dump(), "users": tenant.users,
                "groups": tenant.groups, "admins": tenant.admins, "cohort": tenant.cohort, "weight": tenant.weight,
                "cost_centre": tenant.cost_centre, "queues": tenant.queues, "templates": tenant.templates,
                "quota": self._quota_use(tenant, held),
            }
            for tenant in self.catalog.tenants
        ]

    def tenant_usage(self, tenant: Tenant) -> list[dict[str, Any]]:
        """The tenant's quota and use per flavor, across all queues."""
        return self._quota_use(tenant, self.status().held_by_tenant(tenant.name))

    def _quota_use(self, tenant: Tenant, held: dict[tuple[str, str], Held]) -> list[dict[str, Any]]:
        known, limits = self._json()[1].limits.get(tenant.name, (None, None))
        if known is not tenant:  # not the catalog's own (a copy): its limits as they are
            limits = _limits_json(tenant)
        nothing = Held()
        return [
            {**limit, "used": _held_json(held.get((tenant.name, limit["flavor"]), nothing))}
            for limit in limits
        ]


def _percentile(ordered: list[float], q: float) -> float | None:
    """Nearest-rank percentile of ascending values; None when there is nothing to measure."""
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def _template_json(template: Template) -> dict[str, Any]:
    return {**template.model_dump(mode="json", by_alias=True), "interactive": template.interactive}


def _queue_json(queue: Queue) -> dict[str, Any]:
    return queue.model_dump(mode="json", by_alias=True)


def _limits_json(tenant: Tenant) -> list[dict[str, Any]]:
    """The tenant's quota per flavor: nominal, borrowing and lending limits."""
    return [
        {
            "flavor": flavor,
            "nominal": quota.nominal.model_dump(),
            "borrowing_limit": quota.borrowing_limit.model_dump() if quota.borrowing_limit else None,
            "lending_limit": quota.lending_limit.model_dump() if quota.lending_limit else None,
        }
        for flavor, quota in tenant.quotas.items()
    ]


def _held_json(held: Held) -> dict[str, int]:
    return {"cpu_milli": held.cpu_milli, "memory_mib": held.memory_mib, "device_milli": held.device_milli}
