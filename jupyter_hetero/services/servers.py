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

from ..catalog import WorkloadKind
from ..errors import InvalidRequest
from ..i18n import N_, Message
from ..models import RequestServer, ServerActivity
from ..store.tables import WorkloadRow
from .identity import Identity
from .kernels import ReportedKernel
from .launched import LaunchedService
from .resolve import known_template, resolve

__all__ = ["ServerService"]


class ServerService(LaunchedService):
    """Create, start and release a hub user's server workload, always as that user."""

    kind = WorkloadKind.SERVER

    def __init__(self, *, reported: dict[int, ReportedKernel], **launched: Any):
        super().__init__(**launched)
        self.reported = reported  # what servers say of their activity, read by the idle rules

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
            spec={"payload": "server", "env": {}, "server_name": body.server_name,
                  "idle_timeout_s": template.idle_timeout_s}, state="queued", held_cpu_milli=0, held_memory_mib=0,
            held_device_milli=0, attempts=0, time_limit_s=resolved.time_limit_s,
        )
        return self._store(row, f"{identity.user} asked for a {template.name} server",
                           {"template": template.name, "parameters": body.parameters})

    def report(self, identity: Identity, server: ServerActivity, now: Callable[[], float]) -> None:
        """Take a user's server's word on its own activity, for the idle rules (see services/kernels.py)."""
        row = self.repository.workload(server.workload_id)
        if row is not None and row.user == identity.user and self.launches(row) and row.state == "running":
            self.reported[row.id] = ReportedKernel("idle", server.last_activity, now())
