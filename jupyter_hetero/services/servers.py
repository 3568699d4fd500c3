"""Hub users' servers as workloads: the spawner asks, the engine places, the spawner starts and releases.

A server is placed like a kernel (queued -> admitted with a node and devices) and, like a kernel,
started by its caller rather than the backend: the hub's spawner waits on ``GET /workloads/{id}``,
reports the start with ``POST /servers/{id}/started`` (whose answer carries the devices' visibility
variables for a local server), and gives the devices back with ``DELETE /servers/{id}`` when the
server stops. While held it counts against its tenant's quota like any workload.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..catalog import Catalog, WorkloadKind
from ..errors import Conflict, InvalidRequest
from ..i18n import N_, Message
from ..models import RequestServer
from ..store import ACTIVE_STATES, PENDING_STATES, Repository
from ..store.tables import WorkloadRow
from .clock import Clock
from .identity import Identity
from .resolve import known_template, resolve
from .workloads import FINAL_STATES, WorkloadService, workload_json

__all__ = ["ServerService"]


class ServerService:
    """Create, start and release a hub user's server workload, always as that user."""

    def __init__(self, *, catalog: Catalog, repository: Repository, workloads: WorkloadService, clock: Clock,
                 environment_of: Callable[[WorkloadRow], dict[str, str]], wake: Callable[[], None]):
        self.catalog = catalog
        self.repository = repository
        self.workloads = workloads
        self.clock = clock
        # A placed server's environment, as a kernel's: its devices' visibility variables where the backend
        # sets them (this machine), not where a device plugin does (pods). No credential: the hub gives one.
        self.environment_of = environment_of
        self.wake = wake

    def request(self, identity: Identity, body: RequestServer) -> dict[str, Any]:
        """Store the server's workload, queued; the engine places it on its next cycle."""
        template = known_template(self.catalog, body.template)
        if not template.runs(WorkloadKind.SERVER):
            raise InvalidRequest(Message(N_("template {template} does not run servers; choose an interactive one"),
                                         template=template.name), field="template")
        queue = body.queue or template.queue
        self.workloads.check_access(identity, template.name, queue)
        resolved = resolve(template, body.parameters, self.catalog)
        if body.flavor is not None:
            # A spawn profile is one template on one flavor: the server must land on that flavor only.
            if body.flavor not in resolved.flavors:
                raise InvalidRequest(Message(N_("flavor {flavor!r} is not one template {template} may use here ({flavors})"),
                                             flavor=body.flavor, template=template.name,
                                             flavors=", ".join(resolved.flavors)), field="flavor")
            resolved = dataclasses.replace(resolved, flavors=(body.flavor,))
        if not any(flavor in identity.tenant.quotas for flavor in resolved.flavors):
            self.workloads.access.deny(
                identity, "server.request", f"template/{template.name}",
                Message(N_("tenant {tenant} has no quota for any flavor of template {template} ({flavors})"),
                        tenant=identity.tenant.name, template=template.name, flavors=", ".join(resolved.flavors)))
        row = WorkloadRow(
            kind=WorkloadKind.SERVER.value, name=body.name or f"server of {identity.user}", tenant=identity.tenant.name,
            user=identity.user, template=template.name, queue=queue, request=resolved.to_json(),
            spec={"payload": "server", "env": {}}, state="queued", held_cpu_milli=0, held_memory_mib=0,
            held_device_milli=0, attempts=0, time_limit_s=resolved.time_limit_s,
        )
        row = self.repository.add_workload(row, reason=f"{identity.user} asked for a {template.name} server",
                                           data={"template": template.name, "parameters": body.parameters})
        self.wake()
        return workload_json(row)

    def started(self, identity: Identity, workload_id: int, where: str | None) -> dict[str, Any]:
        """Record that the spawner started the placed server; its devices' environment in the answer."""
        row = self._own(identity, workload_id, "server.start")
        if row.state not in ACTIVE_STATES or not row.placement:
            raise Conflict(Message(N_("server workload {workload} is {state}, not placed; it cannot start now"),
                                   workload=row.id, state=row.state), reason="not-placed")
        if row.state != "running":
            self.repository.update_workload(
                row.id, event="started", reason=f"server of {row.user} running as {where or 'its spawner says'}",
                data={"where": where}, state="running", started_at=self.clock.wall(), attempts=(row.attempts or 0) + 1)
            row = self.repository.workload(row.id)
        return {"workload": workload_json(row), "environment": self.environment_of(row)}

    def release(self, identity: Identity, workload_id: int) -> dict[str, Any]:
        """End the server's workload and give its devices back (a waiting one is simply cancelled)."""
        row = self._own(identity, workload_id, "server.release", stop=True)
        if row.state in FINAL_STATES:
            return workload_json(row)
        why = (f"server stopped by {identity.user}" if row.state in ACTIVE_STATES
               else f"server start abandoned by {identity.user} while waiting")
        state = "succeeded" if row.state in ACTIVE_STATES else "cancelled"
        ended = self.repository.update_workload_if(
            row.id, lambda current: current.state in (*ACTIVE_STATES, *PENDING_STATES), event="released", reason=why,
            state=state, placement=None, node=None, flavor=None, held_cpu_milli=0, held_memory_mib=0,
            held_device_milli=0, stopping=None, preempting_until=None, finished_at=self.clock.wall(),
        )
        self.wake()  # its devices may start the next server at once
        return workload_json(ended or self.repository.workload(row.id))

    def _own(self, identity: Identity, workload_id: int, action: str, stop: bool = False) -> WorkloadRow:
        row = self.workloads.get(identity, workload_id, action)  # 404 unknown, 403 another tenant's
        if stop:
            self.workloads.access.require_stop(identity, row, action)
        elif row.user != identity.user:
            self.workloads.access.deny(identity, action, f"workload/{row.id}",
                                       Message(N_("server workload {workload} is {owner}'s; only their spawner starts it"),
                                               workload=row.id, owner=row.user))
        if row.kind != WorkloadKind.SERVER.value:
            raise InvalidRequest(Message(N_("workload {workload} is a {kind}, not a server"), workload=row.id,
                                         kind=row.kind), field="workload_id")
        return row
