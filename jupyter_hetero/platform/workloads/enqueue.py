"""Putting a workload in its queue: the one way a job, a kernel, a hub user's server or a service's replica
gets there, with one set of answers whatever the kind.

    checked = enqueuer.check(identity, WorkloadKind.SERVER, "interactive", {"devices": 1}, queue=None)
    row = enqueuer.enqueue(checked, name="server of alice", spec={"payload": "server", "env": {}},
                           reason="alice asked for an interactive server", data={"template": "interactive"})

:meth:`Enqueuer.check` refuses a request in this order, before anything is written:

1. an unknown template: 404 naming ``template``;
2. a template that does not run the kind: 400 naming ``template`` (the request is wrong, not the state);
3. an unknown queue: 404 naming ``queue``; a template or queue the tenant may not use: 403, audited;
4. a parameter unknown or out of the template's bounds: 400 naming it; a flavor the template may not use
   with these parameters: 400 naming ``flavor``;
5. no quota of the tenant's for any flavor the request may land on: 403, audited.

:meth:`Enqueuer.enqueue` then stores the row, queued, with its ``submitted`` event in one transaction,
and wakes the scheduler; with an idempotency key, a second try answers with the row the first stored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...catalog import Catalog, Template, WorkloadKind
from ...errors import Conflict, InvalidRequest, NotFound
from ...i18n import N_, Message
from ...store import Repository
from ...store.tables import WorkloadRow
from ..access import Access
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from .arrays import JobArray, task_of
from .resolve import Resolved, known_template, resolve

__all__ = ["Checked", "Enqueuer"]

# The audited action of every refusal here: each kind is a submission to a queue.
_ACTION = "workload.submit"


@dataclass(frozen=True)
class Checked:
    """A request that passed every check, and whose it is: what :meth:`Enqueuer.enqueue` stores."""

    kind: WorkloadKind
    template: Template
    queue: str
    resolved: Resolved
    user: str
    tenant: str


class Enqueuer(ReadsLiveCatalog):
    """Check a request to queue a workload of any kind, and store it."""

    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, access: Access,
                 wake: Callable[[], None]):
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self.access = access
        self.wake = wake

    def check(self, identity: Identity, kind: WorkloadKind, template: str, parameters: dict[str, Any] | None,
              queue: str | None, *, flavor: str | None = None) -> Checked:
        """The request resolved, or the first refusal of the module's list; ``flavor`` pins it to one flavor."""
        found = known_template(self.catalog, template)
        if not found.runs(kind):
            runs = ", ".join(k.value for k in WorkloadKind if found.runs(k))
            raise InvalidRequest(Message(N_("template {template} does not run {kind}s (it runs {kinds})"),
                                         template=found.name, kind=kind.value, kinds=runs), field="template")
        queue = queue or found.queue
        self.check_access(identity, found.name, queue)
        resolved = resolve(found, parameters, self.catalog)
        if flavor is not None:
            if flavor not in resolved.flavors:
                raise InvalidRequest(Message(N_("flavor {flavor!r} is not one template {template} may use here "
                                                "({flavors})"), flavor=flavor, template=found.name,
                                             flavors=", ".join(resolved.flavors)), field="flavor")
            resolved = dataclasses.replace(resolved, flavors=(flavor,))
        tenant = identity.tenant
        if not any(name in tenant.quotas for name in resolved.flavors):
            self.access.deny(identity, _ACTION, f"template/{found.name}",
                             Message(N_("tenant {tenant} has no quota for any flavor of template {template} ({flavors})"),
                                     tenant=tenant.name, template=found.name, flavors=", ".join(resolved.flavors)))
        return Checked(kind, found, queue, resolved, identity.user, tenant.name)

    def check_access(self, identity: Identity, template: str, queue: str) -> None:
        """404 for an unknown queue; 403 (audited) for a template or queue the tenant may not use."""
        if self.catalog.queue(queue) is None:
            raise NotFound(Message(N_("queue {queue!r} does not exist"), queue=queue), field="queue",
                           known=[q.name for q in self.catalog.queues])
        tenant = identity.tenant
        if not tenant.allows_template(template):
            self.access.deny(identity, _ACTION, f"template/{template}",
                             Message(N_("tenant {tenant} may not use template {template}"), tenant=tenant.name,
                                     template=template))
        if not tenant.allows_queue(queue):
            self.access.deny(identity, _ACTION, f"queue/{queue}",
                             Message(N_("tenant {tenant} may not submit to queue {queue}"), tenant=tenant.name,
                                     queue=queue))

    def checked_before(self, kind: WorkloadKind, template: str, parameters: dict[str, Any] | None, queue: str, *,
                       user: str, tenant: str) -> Checked | None:
        """What its owner's request was checked for, resolved again (a service's replica, asked for by the
        service rather than a person); None once the catalog has no such template."""
        found = self.catalog.template(template)
        if found is None:
            return None
        return Checked(kind, found, queue, resolve(found, parameters, self.catalog), user, tenant)

    def enqueue(self, checked: Checked, *, name: str | None, spec: dict[str, Any], reason: str,
                data: dict[str, Any], runtime_s: int | None = None, request_key: str | None = None) -> WorkloadRow:
        """Store the workload, queued, with its ``submitted`` event (``reason``, ``data``); the row stored.

        ``request_key`` (the caller's Idempotency-Key) stores it once: a second try answers with the row the
        first stored, and the key used for other work is a 409."""
        row = _row(checked, name=name, spec=spec, runtime_s=runtime_s, request_key=request_key)
        return self._stored(self.repository.add_workload(row, reason=reason, data=data), row, request_key)

    def enqueue_array(self, checked: Checked, array: JobArray, *, name: str | None, spec: dict[str, Any],
                      reason: str, data: dict[str, Any], runtime_s: int | None = None,
                      request_key: str | None = None) -> WorkloadRow:
        """One workload per index of ``array``, all stored in one transaction, each queued with its ``submitted``
        event; the first task is returned (its id is the array's). A task is named ``name[index]`` when the array
        is named. ``request_key`` as :meth:`enqueue`: the first task carries it."""
        rows = [_row(checked, name=f"{name}[{index}]" if name else None, spec={**spec, "array": array.task(0, index)},
                     runtime_s=runtime_s, request_key=request_key if number == 0 else None)
                for number, index in enumerate(array.indices)]

        def complete(row: WorkloadRow, first: int) -> None:  # a new dict: the JSON column sees only assignments
            row.spec = {**row.spec, "array": {**row.spec["array"], "id": first}}

        stored = self.repository.add_workloads(rows, reason=reason, data=data, complete=complete)[0]
        if stored is not rows[0]:  # a second try: compared as if it were the first, stored under the first's id
            complete(rows[0], (task_of(stored) or {}).get("id", 0))
        return self._stored(stored, rows[0], request_key)

    def _stored(self, stored: WorkloadRow, row: WorkloadRow, request_key: str | None) -> WorkloadRow:
        """The answer to a submission whose ``row`` the store answered with ``stored``: ``row`` itself, or the row a
        first try with the same key stored (a 409 when it asked for other work)."""
        if stored is row:
            self.wake()
        elif _asked(stored) != _asked(row):  # the key's submission was stored before, and it asked for other work
            raise Conflict(Message(N_("Idempotency-Key {key!r} was already used for another submission (workload "
                                      "{workload}); use a new key for new work"), key=request_key, workload=stored.id),
                           field="Idempotency-Key")
        return stored


def _row(checked: Checked, *, name: str | None, spec: dict[str, Any], runtime_s: int | None,
         request_key: str | None) -> WorkloadRow:
    """A new workload as a checked request asks for it, queued."""
    resolved = checked.resolved
    return WorkloadRow(
        kind=checked.kind.value, name=name, tenant=checked.tenant, user=checked.user,
        template=checked.template.name, queue=checked.queue, request=resolved.to_json(), spec=spec,
        state="queued", held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, attempts=0,
        # A replica runs until its service lets it go: the template's limit is for its jobs.
        time_limit_s=None if checked.kind == WorkloadKind.SERVICE else resolved.time_limit_s,
        runtime_s=runtime_s, request_key=request_key,
    )


def _asked(row: WorkloadRow) -> tuple[Any, ...]:
    """What a submission asked for: two tries of one submission ask for the same."""
    return row.kind, row.template, row.queue, row.name, (row.request or {}).get("parameters"), row.spec
