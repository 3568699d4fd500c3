"""A catalog reload while the server runs: the file read again and checked, against itself and against the work that
runs, then staged for the scheduler to take up between two ticks; each change audited as what it is, by who.

    reloads = CatalogReloads(live=live, repository=repository, inventory=inventory, held=status_held, ...)
    reloads.reload(path, actor="root")
    # {"version": 2, "applies": "at the next tick", "in_effect": True, "changes": [{"action": "quota.changed", ...}],
    #  "said": [{"message": "tenant nlp uses 4 devices of its quota on a100, now 2 devices; running work continues,
    #  new work waits", ...}], "applied": ["tenants"], "unchanged": [...]}

A file with errors changes nothing: the answer is a 400 listing every problem with its place in the file; so is a
catalog that would take a flavor from running work (a flavor removed, or a node moved to another flavor, while work
runs there). What is said, not done: a tenant now over a lowered quota keeps its running work, and its new work waits.
Onboarding and alerts apply at once, as the file watcher has always applied them; everything else at the next tick.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from typing import Any

from ...capability import Held
from ...catalog import Catalog, CatalogError, Resources, load_catalog
from ...catalog.diff import CatalogChange, diff_catalogs, quota_amount
from ...engine_inputs import NodeView
from ...errors import InvalidRequest
from ...i18n import N_, Message
from ...store import ACTIVE_STATES, Repository
from ..live_catalog import LiveCatalog

__all__ = ["LIVE_SECTIONS", "SECTIONS", "CatalogReloads", "record_catalog", "running_conflicts", "said_of"]

# What a running server applies at once from a reloaded file (the file watcher applies these alone); every other
# section switches at the next tick.
LIVE_SECTIONS = ("onboarding", "alerts")
SECTIONS = ("flavors", "templates", "queues", "tenants", "platform_admins", "platform_admin_groups", "default_tenant",
            "onboarding", "models", "alerts")
APPLIES = N_("at the next tick")
# How long a reload's answer waits for the tick that takes the catalog up (it says whether it did).
SWITCH_WAIT_S = 10.0


class CatalogReloads:
    """Reads, checks, audits and stages reloaded catalogs; ``set_live[section](value)`` applies a live section."""

    def __init__(self, *, live: LiveCatalog, repository: Repository, inventory: Any,
                 held: Callable[[], dict[tuple[str, str], Held]], set_live: dict[str, Callable[[Any], None]],
                 live_now: Callable[[str], Any], wake: Callable[[], None], ticking: Callable[[], bool],
                 prepare: Callable[[Catalog], Catalog] = lambda catalog: catalog,
                 unusable: Callable[[Catalog], list[str]] = lambda catalog: []):
        self.live = live
        self.prepare = prepare  # what the start does to the file's catalog (template defaults fitted to the machine)
        self.unusable = unusable  # why the backend could not run a catalog's tenants (unwatched namespaces)
        self.repository = repository
        self.inventory = inventory
        self.held = held  # (tenant, flavor) -> what running work holds, as of the last tick
        self.set_live = set_live
        self.live_now = live_now  # a live section as the server uses it now
        self.wake = wake
        self.ticking = ticking  # whether a scheduling loop takes staged catalogs up
        self._lock = threading.Lock()  # one reload at a time: the API's and the file watcher's

    def reload(self, path: str, *, actor: str) -> dict[str, Any]:
        """Everything that changed in the file, checked, audited and staged; a 400 and nothing changed otherwise."""
        with self._lock:
            answer = self._reload(path, actor)
        answer["in_effect"] = self._switched(answer["version"])
        return answer

    def _reload(self, path: str, actor: str) -> dict[str, Any]:
        fresh = self.prepare(read_catalog(path))
        # Onboarding and alerts as they run now: the file watcher may have applied them already.
        before = (self.live.staged or self.live.current).model_copy(
            update={section: self.live_now(section) for section in LIVE_SECTIONS})
        problems = running_conflicts(before, fresh, self.repository.workloads(states=ACTIVE_STATES),
                                     self.inventory.nodes()) + self.unusable(fresh)
        if problems:
            raise InvalidRequest(Message(N_("the catalog cannot replace the one the server runs; nothing was changed: "
                                            "{problems}"), problems="; ".join(problems)), field="catalog")
        live_changed = self._apply_live(fresh)
        changes = diff_catalogs(before, fresh)
        said = said_of(fresh, self.held())
        version = self.live.version
        if changes:
            version = self.live.stage(fresh)
            for change in changes:
                self.repository.record_audit(actor=actor, action=change.action, target=change.target, outcome="done",
                                             detail={**change.detail, "message": change.message.text("en"),
                                                     "catalog_version": version})
            for message in said:
                self.repository.append_event(type="quota-exceeded", reason=message.text("en"),
                                             data={"catalog_version": version})
            record_catalog(self.repository, fresh, path, actor=actor, because="reload")
        sections = sorted({section for section in SECTIONS if _dump(getattr(before, section)) != _dump(
            getattr(fresh, section))} | set(live_changed))
        return {"file": str(path), "version": version, "applies": APPLIES, "applies_zh": _zh(APPLIES),
                "in_effect": False, "changes": [_json(change) for change in changes],
                "said": [{"message": m.text("en"), "message_zh": m.text("zh")} for m in said],
                "applied": sections, "unchanged": [s for s in SECTIONS if s not in sections]}

    def reload_live_sections(self, path: str) -> list[str]:
        """The file watcher's reload: onboarding and alerts only; the rest waits for a platform admin's reload,
        which audits who made each change."""
        with self._lock:
            return self._apply_live(self.prepare(read_catalog(path)))

    def _apply_live(self, fresh: Catalog) -> list[str]:
        applied = []
        for section in LIVE_SECTIONS:
            value = getattr(fresh, section)
            if value != self.live_now(section):
                self.set_live[section](value)
                applied.append(section)
        return applied

    def _switched(self, version: int) -> bool:
        """Wait (off the event loop) for the tick that takes ``version`` up; without a loop, take it up now."""
        if self.live.version >= version:
            return True
        if not self.ticking():
            self.live.switch()  # no tick runs: nothing can see two catalogs
            return True
        self.wake()
        return self.live.wait_for(version, SWITCH_WAIT_S)


def read_catalog(path: str) -> Catalog:
    try:
        return load_catalog(path)
    except CatalogError as exc:
        raise InvalidRequest(Message(N_("the catalog file has errors; nothing was changed: {issues}"),
                                     issues="; ".join(map(str, exc.issues))), field="catalog") from None


def running_conflicts(before: Catalog, after: Catalog, active: list, nodes: list[NodeView]) -> list[str]:
    """Why ``after`` cannot replace ``before`` under the work that runs: a flavor running work holds removed, or a
    node with running work moved to another flavor. Running work keeps its placement; the catalog must keep it too."""
    by_flavor: dict[str, list[int]] = {}
    by_node: dict[str, list[int]] = {}
    for row in active:
        if row.flavor:
            by_flavor.setdefault(row.flavor, []).append(row.id)
        for slot in (row.placement or {}).get("slots", []):
            by_node.setdefault(slot["node"], []).append(row.id)
    problems = [f"flavor {flavor} is removed while workloads {_ids(ids)} run on it; let them end or cancel them "
                "first" for flavor, ids in sorted(by_flavor.items()) if after.flavor(flavor) is None]
    for view in nodes:
        ids = by_node.get(view.capability.name)
        flavor = after.flavor_of(view.capability)
        now = flavor.name if flavor else None
        moved = view.flavor and after.flavor(view.flavor) is not None and now != view.flavor
        if ids and moved:
            problems.append(f"node {view.capability.name} would move from flavor {view.flavor} to "
                            f"{flavor.name if flavor else 'none'} while workloads {_ids(ids)} run on it")
    return problems


def said_of(catalog: Catalog, held: dict[tuple[str, str], Held]) -> list[Message]:
    """What a tenant's running work holds beyond its quota under ``catalog``: said, never enforced on running work."""
    said = []
    for (tenant_name, flavor), use in sorted(held.items()):
        if not (use.device_milli or use.cpu_milli or use.memory_mib):
            continue
        using = Resources(cpu_milli=use.cpu_milli, memory_mib=use.memory_mib, device_milli=use.device_milli)
        tenant = catalog.tenant(tenant_name)
        if tenant is None:
            said.append(Message(N_("tenant {tenant} is no longer in the catalog and uses {used} on {flavor}; running "
                                   "work continues"), tenant=tenant_name, used=quota_amount(using), flavor=flavor))
            continue
        quota = tenant.quotas.get(flavor)
        nominal = quota.nominal if quota else Resources()
        # Accelerator flavors are counted in devices (their quotas seldom name CPU); CPU flavors in CPU and memory.
        over = (use.device_milli > nominal.device_milli if use.device_milli or nominal.device_milli
                else use.cpu_milli > nominal.cpu_milli or use.memory_mib > nominal.memory_mib)
        if over:
            said.append(Message(N_("tenant {tenant} uses {used} of its quota on {flavor}, now {quota}; running work "
                                   "continues, new work waits"), tenant=tenant_name, used=quota_amount(using),
                                flavor=flavor, quota=quota_amount(nominal, devices=bool(use.device_milli))))
    return said


def record_catalog(repository, catalog: Catalog, path: str, *, actor: str = "server",
                   because: str = "start") -> list[str]:
    """Audit the catalog the server runs with (at start, and after a reload), and which sections (quotas and roles
    live in ``tenants`` and ``platform_admins``) changed since the catalog last recorded. At start, a file that
    changed while the server was down is audited change by change, as a reload would (actor ``server``)."""
    dumped = catalog.model_dump(mode="json", by_alias=True)
    digests = {section: hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]
               for section, value in catalog.model_dump(mode="json").items()}
    last = repository.last_audit("catalog.loaded")
    before = (last.detail or {}).get("sections", {}) if last is not None else {}
    changed = sorted(section for section, digest in digests.items() if before and before.get(section) != digest)
    if because == "start" and changed:
        previous = _catalog_of((last.detail or {}).get("catalog"))
        for change in diff_catalogs(previous, catalog) if previous is not None else ():
            repository.record_audit(actor=actor, action=change.action, target=change.target, outcome="done",
                                    detail={**change.detail, "message": change.message.text("en"),
                                            "because": "the catalog file changed while the server was down"})
    if last is None or changed:
        repository.record_audit(actor=actor, action="catalog.loaded", target="catalog", outcome="done",
                                detail={"file": str(path), "sections": digests, "changed": changed,
                                        "because": because, "catalog": dumped})
    return changed


def _catalog_of(dumped: Any) -> Catalog | None:
    """The catalog an audit entry kept; None when there is none or it no longer reads (an older schema)."""
    if not isinstance(dumped, dict):
        return None
    try:
        return Catalog.model_validate(dumped)
    except ValueError:
        return None


def _json(change: CatalogChange) -> dict[str, Any]:
    return {**change.as_json("en"), "message_zh": change.message.text("zh")}


def _zh(message: str) -> str:
    return Message(message).text("zh")


def _dump(value: Any) -> Any:
    if isinstance(value, list):
        return [_dump(item) for item in value]
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


def _ids(ids: list[int]) -> str:
    return ", ".join(str(i) for i in sorted(ids))
