"""What changed between two catalogs, one change per thing that changed, in the audit log's words.

    changes = diff_catalogs(before, after)
    [(c.action, c.target) for c in changes]
    # [("tenant.member-added", "tenant/nlp"), ("quota.changed", "tenant/nlp/a100"), ("queue.removed", "queue/spot")]
    changes[1].detail    # {"tenant": "nlp", "flavor": "a100", "before": {...}, "after": {...}}
    changes[1].message.text("en")   # "quota of nlp on a100 raised from 4 devices to 8 devices"

Pure: the same two catalogs give the same changes in the same order (platform admins, tenants, quotas, queues,
templates, flavors, then the other sections), each with its detail before and after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..i18n import N_, Message
from .models import Catalog
from .tenants import FlavorQuota, Resources

__all__ = ["CatalogChange", "diff_catalogs", "quota_amount"]

# The sections a reload compares item by item; every other one is compared whole (``catalog.changed``).
_NAMED = ("flavors", "templates", "queues")
_WHOLE = ("onboarding", "alerts", "models", "default_tenant")


@dataclass(frozen=True)
class CatalogChange:
    """One change: its audit action (``quota.changed``), what it is about, its detail and a sentence for people."""

    action: str
    target: str
    detail: dict[str, Any]
    # Always given: an empty Message would read the catalog's header through gettext.
    message: Message = field(compare=False)

    def as_json(self, language: str = "en") -> dict[str, Any]:
        return {"action": self.action, "target": self.target, "detail": self.detail,
                "message": self.message.text(language)}


def diff_catalogs(before: Catalog, after: Catalog) -> list[CatalogChange]:
    """Every change from ``before`` to ``after``; an empty list when they are the same."""
    changes: list[CatalogChange] = []
    changes += _members("platform-admin", "platform-admin", before.platform_admins, after.platform_admins,
                        N_("platform admin {name} added"), N_("platform admin {name} removed"), key="user")
    changes += _members("platform-admin-group", "platform-admin-group", before.platform_admin_groups,
                        after.platform_admin_groups, N_("platform admin group {name} added"),
                        N_("platform admin group {name} removed"), key="group")
    changes += _tenants(before, after)
    for section in _NAMED:
        changes += _named(section, getattr(before, section), getattr(after, section))
    for section in _WHOLE:
        old, new = _dump(getattr(before, section)), _dump(getattr(after, section))
        if old != new:
            changes.append(CatalogChange("catalog.changed", f"catalog/{section}",
                                         {"section": section, "before": old, "after": new},
                                         Message(N_("section {section} changed"), section=section)))
    return changes


def quota_amount(resources: Resources | None, *, devices: bool = False) -> Message:
    """An amount as people read it: devices where there are any (or ``devices``, for an amount compared with one
    that has some), else CPU and memory."""
    if resources is None:
        return Message(N_("none"))
    if resources.device_milli or devices:
        return Message(N_("{devices} devices"), devices=f"{resources.device_milli / 1000:g}")
    return Message(N_("{cpu} CPU, {memory} MiB"), cpu=f"{resources.cpu_milli / 1000:g}", memory=resources.memory_mib)


def _dump(value: Any) -> Any:
    if isinstance(value, list):
        return [_dump(item) for item in value]
    return value.model_dump(mode="json", by_alias=True) if hasattr(value, "model_dump") else value


def _members(action: str, kind: str, old: list[str], new: list[str], added: str, removed: str, *, key: str,
             tenant: str | None = None) -> list[CatalogChange]:
    """Names added to and removed from a list (users, groups, admins), each a change of its own."""
    target = f"tenant/{tenant}" if tenant else kind
    scope = {"tenant": tenant} if tenant else {}
    return ([CatalogChange(f"{action}-added" if tenant else f"{action}.added", target, {**scope, key: name},
                           Message(added, name=name, tenant=tenant)) for name in new if name not in old]
            + [CatalogChange(f"{action}-removed" if tenant else f"{action}.removed", target, {**scope, key: name},
                             Message(removed, name=name, tenant=tenant)) for name in old if name not in new])


def _tenants(before: Catalog, after: Catalog) -> list[CatalogChange]:
    old = {tenant.name: tenant for tenant in before.tenants}
    new = {tenant.name: tenant for tenant in after.tenants}
    changes = [CatalogChange("tenant.added", f"tenant/{name}", {"tenant": name, "after": _dump(tenant)},
                             Message(N_("tenant {tenant} added"), tenant=name))
               for name, tenant in new.items() if name not in old]
    changes += [CatalogChange("tenant.removed", f"tenant/{name}", {"tenant": name, "before": _dump(tenant)},
                              Message(N_("tenant {tenant} removed"), tenant=name))
                for name, tenant in old.items() if name not in new]
    for name in [name for name in new if name in old]:
        was, now = old[name], new[name]
        changes += _members("tenant.member", "tenant", was.users, now.users, N_("{name} became a member of {tenant}"),
                            N_("{name} is no longer a member of {tenant}"), key="user", tenant=name)
        changes += _members("tenant.group", "tenant", was.groups, now.groups,
                            N_("group {name} became members of {tenant}"),
                            N_("group {name} is no longer members of {tenant}"), key="group", tenant=name)
        changes += _members("tenant.admin", "tenant", was.admins, now.admins, N_("{name} became an admin of {tenant}"),
                            N_("{name} is no longer an admin of {tenant}"), key="user", tenant=name)
        for flavor in [*was.quotas, *(f for f in now.quotas if f not in was.quotas)]:
            change = _quota(name, flavor, was.quotas.get(flavor), now.quotas.get(flavor))
            if change is not None:
                changes.append(change)
        fields = {key: {"before": _dump(getattr(was, key)), "after": _dump(getattr(now, key))}
                  for key in ("display", "queues", "templates", "cohort", "weight", "cost_centre")
                  if getattr(was, key) != getattr(now, key)}
        if fields:
            changes.append(CatalogChange("tenant.changed", f"tenant/{name}", {"tenant": name, "fields": fields},
                                         Message(N_("tenant {tenant} changed: {fields}"), tenant=name,
                                                 fields=", ".join(fields))))
    return changes


def _quota(tenant: str, flavor: str, old: FlavorQuota | None, new: FlavorQuota | None) -> CatalogChange | None:
    if old == new:
        return None
    detail = {"tenant": tenant, "flavor": flavor, "before": _dump(old), "after": _dump(new)}
    devices = any(quota.nominal.device_milli for quota in (old, new) if quota is not None)
    was = quota_amount(old.nominal if old else None, devices=devices)
    now = quota_amount(new.nominal if new else None, devices=devices)
    if old is None:
        message = Message(N_("quota of {tenant} on {flavor} set to {after}"), tenant=tenant, flavor=flavor, after=now)
    elif new is None:
        message = Message(N_("quota of {tenant} on {flavor} removed (was {before})"), tenant=tenant, flavor=flavor,
                          before=was)
    elif old.nominal == new.nominal:
        message = Message(N_("quota of {tenant} on {flavor}: borrowing or lending limits changed"), tenant=tenant,
                          flavor=flavor)
    else:
        raised = _size(new.nominal) >= _size(old.nominal)
        message = Message(N_("quota of {tenant} on {flavor} raised from {before} to {after}") if raised else
                          N_("quota of {tenant} on {flavor} lowered from {before} to {after}"),
                          tenant=tenant, flavor=flavor, before=was, after=now)
    return CatalogChange("quota.changed", f"tenant/{tenant}/{flavor}", detail, message)


def _size(resources: Resources) -> tuple[int, int, int]:
    return resources.device_milli, resources.cpu_milli, resources.memory_mib


_ADDED = {"flavors": N_("flavor {name} added"), "templates": N_("template {name} added"),
          "queues": N_("queue {name} added")}
_REMOVED = {"flavors": N_("flavor {name} removed"), "templates": N_("template {name} removed"),
            "queues": N_("queue {name} removed")}
_CHANGED = {"flavors": N_("flavor {name} changed: {fields}"), "templates": N_("template {name} changed: {fields}"),
            "queues": N_("queue {name} changed: {fields}")}


def _named(section: str, old_items: list, new_items: list) -> list[CatalogChange]:
    """Items of a section by name: added, removed, or changed with each changed field before and after."""
    kind = section[:-1]  # flavors -> flavor
    old = {item.name: _dump(item) for item in old_items}
    new = {item.name: _dump(item) for item in new_items}
    changes = [CatalogChange(f"{kind}.added", f"{kind}/{name}", {kind: name, "after": item},
                             Message(_ADDED[section], name=name)) for name, item in new.items() if name not in old]
    changes += [CatalogChange(f"{kind}.removed", f"{kind}/{name}", {kind: name, "before": item},
                              Message(_REMOVED[section], name=name)) for name, item in old.items() if name not in new]
    for name in [name for name in new if name in old and new[name] != old[name]]:
        fields = {key: {"before": old[name].get(key), "after": new[name].get(key)}
                  for key in sorted(set(old[name]) | set(new[name])) if old[name].get(key) != new[name].get(key)}
        changes.append(CatalogChange(f"{kind}.changed", f"{kind}/{name}", {kind: name, "fields": fields},
                                     Message(_CHANGED[section], name=name, fields=", ".join(fields))))
    return changes
