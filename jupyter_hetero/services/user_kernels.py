"""Kernels in hub users' servers: placed by this (the hub's) service, launched by the user's own server.

A hetero kernelspec in a hub user's server asks here for a ``kernel`` workload
(``POST /kernels/placements``), waits for its placement, reports the launch
(``POST /kernels/placements/{id}/started``, whose answer is the kernel's environment: its devices'
visibility, HETERO_* and its own workload credential for this service) and gives the devices back
(``DELETE /kernels/placements/{id}``) when the kernel ends. Every few seconds the server reports its
kernels' activity (``POST /activity``); the answer names those to shut down (culled
idle, preempted, cancelled, lost with their node) with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..catalog import WorkloadKind
from ..errors import Conflict
from ..i18n import N_, Message
from ..models import KernelActivity, RequestKernelPlacement
from ..store import ACTIVE_STATES
from ..store.tables import WorkloadRow
from .identity import Identity
from .kernels import KernelService, ReportedKernel, in_user_server
from .launched import LaunchedService
from .resolve import known_template, resolve

__all__ = ["UserKernelService"]


class UserKernelService(LaunchedService):
    """Place, start, follow and release the kernels of hub users' servers, each as its user."""

    kind = WorkloadKind.KERNEL

    def __init__(self, *, kernels: KernelService, **launched: Any):
        super().__init__(**launched)
        self.kernels = kernels

    def launches(self, row: WorkloadRow) -> bool:
        return row.kind == self.kind.value and in_user_server(row)

    def request(self, identity: Identity, body: RequestKernelPlacement) -> dict[str, Any]:
        """Store the kernel's workload, queued; the engine places it on its next cycle."""
        template = known_template(self.catalog, body.template)
        if not template.interactive:
            raise Conflict(Message(N_("template {template} does not run kernels; use it for jobs"),
                                   template=template.name), field="template")
        queue = body.queue or template.queue
        self.workloads.check_access(identity, template.name, queue)
        resolved = resolve(template, body.parameters, self.catalog)
        row = WorkloadRow(
            kind=WorkloadKind.KERNEL.value, name=f"kernel {body.kernel_id} of {identity.user}",
            tenant=identity.tenant.name, user=identity.user, template=template.name, queue=queue,
            request=resolved.to_json(),
            spec={"payload": "kernel", "kernel_id": body.kernel_id, "env": {}, "launched_by": "user-server",
                  "idle_timeout_s": body.idle_timeout or template.idle_timeout_s},
            state="queued", held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, attempts=0,
            time_limit_s=resolved.time_limit_s,
        )
        return self._store(row, f"{identity.user} started a {template.name} kernel in their server",
                           {"kernel_id": body.kernel_id, "parameters": body.parameters})

    def report(self, identity: Identity, kernels: list[KernelActivity], now: Callable[[], float]) -> dict[str, Any]:
        """Take a server's word on its kernels' activity; answer which of them to shut down, and why."""
        stop = []
        for kernel in kernels:
            row = self.repository.workload(kernel.workload_id)
            if row is None or row.user != identity.user or not self.launches(row):
                # Not a placement of this user's: whatever it runs on holds devices nobody accounts for.
                stop.append({"workload_id": kernel.workload_id,
                             "reason": f"kernel workload {kernel.workload_id} is not one of yours placed by this service"})
            elif row.state not in ACTIVE_STATES or row.stopping is not None:
                stop.append({"workload_id": row.id, "reason": row.reason or row.state})
            else:
                self.kernels.reported[row.id] = ReportedKernel(kernel.execution_state, kernel.last_activity, now())
        return {"stop": stop}
