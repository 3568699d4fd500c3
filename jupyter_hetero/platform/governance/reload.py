"""A catalog reload while the server runs: the file read again and checked, and the sections that may change
while work runs applied at once; the others are read at start, where ``record_catalog`` audits which sections
changed since the last start (quotas and roles among them).

    reload_catalog(path, live={"onboarding": set_onboarding, "alerts": set_alerts}, applied_now={...})
    # {"applied": ["onboarding"], "unchanged": ["alerts"], "at_restart": "queues, tenants, ... are read at start"}

A file with errors changes nothing: the answer is a 400 listing every problem with its place in the file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from ...catalog import Catalog, CatalogError, load_catalog
from ...errors import InvalidRequest
from ...i18n import N_, Message

__all__ = ["LIVE_SECTIONS", "record_catalog", "reload_catalog"]

# What a running server takes from a reloaded catalog; flavors, templates, queues and tenants shape the engine's
# state and placements already made, and are read at start.
LIVE_SECTIONS = ("onboarding", "alerts")


def reload_catalog(path: str, *, live: dict[str, Callable[[Any], None]], applied_now: dict[str, Any]) -> dict[str, Any]:
    """``applied_now``: each live section as the server uses it now (the start's, or the last reload's)."""
    try:
        fresh = load_catalog(path)
    except CatalogError as exc:
        raise InvalidRequest(Message(N_("the catalog file has errors; nothing was changed: {issues}"),
                                     issues="; ".join(map(str, exc.issues))), field="catalog") from None
    applied = []
    for section in LIVE_SECTIONS:
        value = getattr(fresh, section)
        if value != applied_now[section]:
            live[section](value)
            applied.append(section)
    return {"file": str(path), "applied": applied, "unchanged": [s for s in LIVE_SECTIONS if s not in applied],
            "at_restart": "flavors, templates, queues and tenants are read when the server starts"}


def record_catalog(repository, catalog: Catalog, path: str) -> list[str]:
    """At start: audit the catalog the server runs with, and which sections (quotas and roles live in
    ``tenants`` and ``platform_admins``) changed since the catalog the last start recorded."""
    digests = {section: hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]
               for section, value in catalog.model_dump(mode="json").items()}
    last = repository.last_audit("catalog.loaded")
    before = (last.detail or {}).get("sections", {}) if last is not None else {}
    changed = sorted(section for section, digest in digests.items() if before and before.get(section) != digest)
    if last is None or changed:
        repository.record_audit(actor="server", action="catalog.loaded", target="catalog", outcome="done",
                                detail={"file": str(path), "sections": digests, "changed": changed})
    return changed
