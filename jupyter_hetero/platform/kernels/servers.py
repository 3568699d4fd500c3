"""Hub users' servers as workloads: the spawner asks, the engine places, the spawner starts and releases.

A server is placed like a kernel (queued -> admitted with a node and devices) and, like a kernel,
started by its caller rather than the backend: the hub's spawner waits on ``GET /workloads/{id}``,
reports the start with ``POST /servers/{id}/started`` (whose answer carries the devices' visibility
variables for a local server), and gives the devices back with ``DELETE /servers/{id}`` when the
server stops. While held it counts against its tenant's quota like any workload.
"""

from __future__ import annotations

from typing import Any

from ...catalog import WorkloadKind
from ...models import RequestServer, ServerActivity
from ..identity import Identity
from ..workloads.launched import CallerLaunched
from ..workloads.service import workload_json
from .culling import ReportedKernel

__all__ = ["Servers"]


class Servers(CallerLaunched):
    """Create, start and release a hub user's server workload, always as that user."""

    kind = WorkloadKind.SERVER

    def __init__(self, *, reported: dict[int, ReportedKernel], **launched: Any):
        super().__init__(**launched)
        self.reported = reported  # what servers say of their activity, read by the idle rules

    def request(self, identity: Identity, body: RequestServer) -> dict[str, Any]:
        """Store the server's workload, queued; the engine places it on its next cycle. A spawn profile is one
        template on one flavor (``body.flavor``): the server lands on that flavor only."""
        checked = self.workloads.enqueuer.check(identity, self.kind, body.template, body.parameters, body.queue,
                                                flavor=body.flavor)
        template = checked.template
        return workload_json(self.workloads.enqueuer.enqueue(
            checked, name=body.name or f"server of {identity.user}",
            spec={"payload": "server", "env": {}, "server_name": body.server_name,
                  "idle_timeout_s": template.idle_timeout_s},
            reason=f"{identity.user} asked for a {template.name} server",
            data={"template": template.name, "parameters": body.parameters}))

    def report(self, identity: Identity, server: ServerActivity) -> None:
        """Take a user's server's word on its own activity, for the idle rules (see platform/kernels/culling.py)."""
        row = self.repository.workload(server.workload_id)
        if row is not None and row.user == identity.user and self.launches(row) and row.state == "running":
            self.reported[row.id] = ReportedKernel("idle", server.last_activity, self.now())
