"""Kernels in hub users' servers: placed by this (the hub's) service, launched by the user's own server.

A hetero kernelspec in a hub user's server asks here for a ``kernel`` workload
(``POST /kernels/placements``), waits for its placement, reports the launch
(``POST /kernels/placements/{id}/started``, whose answer is the kernel's environment: its devices'
visibility, HETERO_* and its own workload credential for this service) and gives the devices back
(``DELETE /kernels/placements/{id}``) when the kernel ends. Every few seconds the server reports its
kernels' activity (``POST /activity``); the answer names those to shut down (culled
idle, preempted, cancelled, lost with their node) with the reason.

Where this service runs kernels in pods (the Kubernetes backend), a user's server cannot give a kernel
devices on another node: ``started`` then carries the kernel's connection (the server chose its key and
ports) and this service starts the kernel's pod on the placed node, with its environment and credential
there; the answer is the pod's IP, which the user's server connects to. ``DELETE .../pod`` ends the
pod alone (a restart starts a new one); ending the placement ends its pod too.
"""

from __future__ import annotations

from typing import Any

from ...catalog import WorkloadKind
from ...errors import InvalidRequest
from ...i18n import N_, Message
from ...models import KernelActivity, Launched, RequestKernelPlacement
from ...store import ACTIVE_STATES
from ...store.tables import WorkloadRow
from ..identity import Identity
from ..workloads.launched import CallerLaunched
from ..workloads.service import workload_json
from .culling import ReportedKernel, in_user_server
from .service import Kernels

__all__ = ["HubKernelPlacements"]


class HubKernelPlacements(CallerLaunched):
    """Place, start, follow and release the kernels of hub users' servers, each as its user."""

    kind = WorkloadKind.KERNEL

    def __init__(self, *, kernels: Kernels, **launched: Any):
        super().__init__(**launched)
        self.kernels = kernels

    async def launch(self, identity: Identity, workload_id: int, body: Launched) -> dict[str, Any]:
        """``started``, or where kernels run in pods, the kernel's pod on its node (Ready) and its IP."""
        if self.kernels.pods is None:
            return self.started(identity, workload_id, body.where)
        row = self.placed_for_start(identity, workload_id)
        if body.connection is None:
            raise InvalidRequest(Message(N_("field 'connection': this service runs kernels in pods; send the kernel's "
                                            "connection (key and ports) for its pod to serve")), field="connection")
        await self.end_pod(identity, row.id)  # a restart's new pod replaces the old one
        pod = await self.kernels.launch_pod(row.id, attempt=(row.attempts or 0) + 1, env=self.environment_of(row),
                                            connection=body.connection.model_dump())
        self.kernels.remote_pods[row.id] = pod
        row = self.record_start(row, f"pod {pod.key}")
        return {"workload": workload_json(row), "environment": {}, "pod": {"key": pod.key, "ip": pod.ip}}

    async def end_pod(self, identity: Identity, workload_id: int) -> None:
        """Delete the kernel's pod, if it has one; its placement stays (a restart starts a new pod)."""
        self.own(identity, workload_id, "kernel.release", stop=True)
        pod = self.kernels.remote_pods.pop(workload_id, None)
        if pod is not None:
            await pod.delete(grace_s=0)

    def launches(self, row: WorkloadRow) -> bool:
        return row.kind == self.kind.value and in_user_server(row)

    def request(self, identity: Identity, body: RequestKernelPlacement) -> dict[str, Any]:
        """Store the kernel's workload, queued; the engine places it on its next cycle."""
        checked = self.workloads.enqueuer.check(identity, self.kind, body.template, body.parameters, body.queue)
        template = checked.template
        return workload_json(self.workloads.enqueuer.enqueue(
            checked, name=f"kernel {body.kernel_id} of {identity.user}",
            spec={"payload": "kernel", "kernel_id": body.kernel_id, "env": {}, "launched_by": "user-server",
                  "idle_timeout_s": body.idle_timeout or template.idle_timeout_s},
            reason=f"{identity.user} started a {template.name} kernel in their server",
            data={"kernel_id": body.kernel_id, "parameters": body.parameters}))

    def report(self, identity: Identity, kernels: list[KernelActivity]) -> dict[str, Any]:
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
            elif (pod := self.kernels.remote_pods.get(row.id)) is not None and pod.poll() is not None:
                stop.append({"workload_id": row.id, "reason": f"the kernel's pod {pod.key} ended "
                                                              f"(exit code {pod.poll()})"})
            else:
                self.kernels.reported[row.id] = ReportedKernel(kernel.execution_state, kernel.last_activity, self.now())
        return {"stop": stop}
