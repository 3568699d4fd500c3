"""What would happen to a submission, before it is made: per eligible flavor, free capacity, whether
it would start now, and if not why and when. Nothing is stored.

Its dry cycles take as long as a tick's: call :func:`preview` off the event loop (:class:`Previews` runs it
in a worker thread, and with the engine process the cycles themselves run there).

    previews = Previews(catalog=catalog, scheduler=scheduler, workloads=workloads, access=access)
    await previews.submission(identity, PreviewWorkload(template="fine-tuning"))   # what POST /previews answers
    await previews.preemption(identity, 7, dry_run=True)     # what an admin's preemption would evict; or do it
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from functools import partial
from typing import Any

from ...catalog import Catalog
from ...engine import Workload, WorkloadKind, render
from ...engine_inputs import constraints_for, engine_request
from ...errors import Conflict
from ...i18n import N_, Message
from ...models import PreviewWorkload
from ..access import Access
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..workloads.resolve import known_template, resolve
from ..workloads.service import Workloads
from .scheduler import Scheduler

__all__ = ["Previews", "preemption_preview", "preview"]

# The hypothetical workload's id: never a stored one.
_PREVIEW_ID = -1


class Previews(ReadsLiveCatalog):
    """What the API asks the scheduler outside its ticks: a submission's preview and an admin's preemption
    (its dry run, or the preemption itself); the dry cycles in a worker thread."""

    def __init__(self, *, catalog: Catalog | LiveCatalog, scheduler: Scheduler, workloads: Workloads, access: Access):
        self.live_catalog = LiveCatalog.of(catalog)
        self.scheduler = scheduler
        self.workloads = workloads
        self.access = access

    async def submission(self, identity: Identity, body: PreviewWorkload) -> dict[str, Any]:
        # Its dry cycles take as long as a tick's: never on the event loop.
        return await _off_loop(partial(
            preview, catalog=self.catalog, scheduler=self.scheduler, workloads=self.workloads, identity=identity,
            template=body.template, parameters=body.parameters, queue=body.queue, kind=body.kind,
            now=self.scheduler.clock(), language=body.lang,
        ))

    async def preemption(self, identity: Identity, workload_id: int, *, dry_run: bool) -> dict[str, Any]:
        """A platform admin's preemption of a running workload, or with ``dry_run`` what a waiting one would evict."""
        row = self.workloads.get(identity, workload_id, "workload.preempt")
        self.access.require_platform_admin(identity, "workload.preempt" + (".dry-run" if dry_run else ""),
                                           f"workload/{workload_id}")
        if dry_run:
            # Its dry cycle takes as long as a tick's: never on the event loop.
            return await _off_loop(partial(preemption_preview, self.scheduler, workload_id, row.state,
                                           self.scheduler.clock()))
        if row.state not in ("running", "starting"):
            raise Conflict(Message(N_("workload {workload} is {state}; only running workloads can be preempted"),
                                   workload=workload_id, state=row.state))
        if row.kind in ("service", "server"):
            raise Conflict(Message(N_("workload {workload} is a {kind}, which is never preempted: scale the service "
                                      "down, or stop the server through the hub"), workload=workload_id, kind=row.kind),
                           reason="never-preempted")
        return self.scheduler.preempt_by_admin(workload_id, identity.user)


async def _off_loop(function):
    return await asyncio.get_running_loop().run_in_executor(None, function)


def preview(*, catalog: Catalog, scheduler: Scheduler, workloads: Workloads, identity: Identity,
            template: str, parameters: dict[str, Any], queue: str | None, kind: str, now: float,
            language: str = "en") -> dict[str, Any]:
    found = known_template(catalog, template)
    queue_name = queue or found.queue
    workloads.check_access(identity, found.name, queue_name)
    resolved = resolve(found, parameters, catalog)
    base = Workload(
        id=_PREVIEW_ID, tenant=identity.tenant.name, queue=queue_name,
        request=engine_request(resolved.request.model_dump()), flavors=resolved.flavors, submitted_at=now,
        kind=WorkloadKind(kind), constraints=constraints_for(found, resolved.variant_families), user=identity.user,
        runtime_s=found.typical_runtime_s,
    )
    # One exchange with the engine for every dry cycle: the submission on any flavor, then on each alone.
    alternatives = [[base]] + [[replace(base, flavors=(flavor,))] for flavor in resolved.flavors]
    outcomes, capacity = scheduler.dry_runs(now, alternatives, capacity=True, pending_of=frozenset({_PREVIEW_ID}))
    flavors = [_flavor(catalog, found, flavor, capacity.get(flavor), _outcome(decisions, now, language))
               for flavor, decisions in zip(resolved.flavors, outcomes[1:])]
    overall = _outcome(outcomes[0], now, language)
    return {"template": found.name, "queue": queue_name, "request": resolved.request.model_dump(),
            "time_limit_s": resolved.time_limit_s, **overall, "flavors": flavors}


def preemption_preview(scheduler: Scheduler, workload_id: int, state: str, now: float) -> dict[str, Any]:
    """What a waiting workload would evict to start now; nothing is changed. Blocks like :func:`preview`."""
    if state not in ("queued", "preempted"):
        raise Conflict(Message(N_("workload {workload} is {state}; a dry run shows what a waiting workload "
                                  "would evict"), workload=workload_id, state=state))
    decisions = scheduler.dry_run(now, pending_of=frozenset({workload_id}))
    victims = [p for p in decisions.preemptions if p.preemptor == workload_id]
    admitted = next((a for a in decisions.admissions if a.workload == workload_id), None)
    pending = decisions.pending.get(workload_id)
    return {
        "dry_run": True,
        "would_admit": admitted is not None,
        "victims": [{"id": p.victim, "reason": p.reason, "grace_deadline": p.grace_deadline} for p in victims],
        "blockers": [render(b) for b in pending.blockers] if pending else [],
    }


def _flavor(catalog, template, flavor, capacity, outcome) -> dict[str, Any]:
    total, free = capacity if capacity else (None, None)
    declared = catalog.flavor(flavor)
    family = declared.family
    variant = template.variant_for(family)
    return {
        "flavor": flavor,
        "display": declared.display.model_dump(),
        "family": family.value,
        # The runtime variant the template runs with on this flavor's accelerators.
        "image": variant.image if variant else None,
        "devices_total": total.dev / 1000 if total else 0,
        "devices_free": free.dev / 1000 if free else 0,
        "cpu_free": free.cpu / 1000 if free else 0,
        **outcome,
    }


def _outcome(decisions, now: float, language: str) -> dict[str, Any]:
    admission = next((a for a in decisions.admissions if a.workload == _PREVIEW_ID), None)
    if admission is not None:
        return {"starts_now": True, "flavor_now": admission.placement.flavor, "eta": now, "eta_s": 0,
                "blockers": [], "victims": []}
    pending = decisions.pending.get(_PREVIEW_ID)
    victims = [p.victim for p in decisions.preemptions if p.preemptor == _PREVIEW_ID]
    eta = pending.eta if pending else None
    return {
        "starts_now": False,
        "flavor_now": None,
        "eta": eta,
        "eta_s": None if eta is None else max(0.0, eta - now),
        "position": pending.position if pending else None,
        "blockers": [render(b, language) for b in pending.blockers] if pending else [],
        # Could it ever run there? Not when no node could hold it, nor when nothing but an admin could help.
        "schedulable": bool(victims) or bool(pending and not pending.inadmissible
                                             and any(b.closeness > 0 for b in pending.blockers)),
        "victims": victims,
    }
