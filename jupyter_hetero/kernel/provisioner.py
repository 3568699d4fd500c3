"""A kernel provisioner that asks the scheduler for a placement before it starts the kernel.

A kernelspec names it in ``metadata.kernel_provisioner``:

    {"provisioner_name": "hetero-provisioner",
     "config": {"template": "interactive", "parameters": {"devices": 1}, "wait_timeout": 60}}

On launch it creates a ``kernel`` workload, waits (bounded) while it is queued, then starts the
kernel with only its devices visible; on shutdown, cull or death it releases them. A restart keeps
the placement. Launch-time overrides arrive as ``start_kernel(..., hetero={...})``.
"""

from __future__ import annotations

from typing import Any

from jupyter_client.provisioning import LocalProvisioner
from traitlets import Dict, Float, Unicode

from ..services.kernels import KernelWaitTimeout, current_kernels

__all__ = ["HeteroProvisioner", "KernelWaitTimeout"]


class HeteroProvisioner(LocalProvisioner):
    # How the server side tells a hetero kernel from a plain one without importing this module.
    places_workloads = True
    template = Unicode("interactive", config=True, help="Template the kernel's workload is made from.")
    parameters = Dict(config=True, help="Advanced parameters of the template (devices, memory, flavor, ...).")
    queue = Unicode("", config=True, help="Queue of the kernel's workload; empty means the template's.")
    wait_timeout = Float(
        60.0, config=True, help="Seconds a start may wait in the queue before it fails with the blockers and ETA."
    )

    workload_id: int | None = None

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        overrides = dict(kwargs.pop("hetero", None) or {})
        kernels = current_kernels()
        if self.workload_id is None or not kernels.holds(self.workload_id):
            request = {
                "template": overrides.get("template") or self.template,
                "parameters": {**self.parameters, **(overrides.get("parameters") or {})},
                "queue": overrides.get("queue") or self.queue or None,
            }
            self.workload_id = kernels.request(
                kernel_id=self.kernel_id, user=overrides.get("user"), groups=tuple(overrides.get("groups") or ()),
                idle_timeout=self._cull_idle_timeout(), **request,
            )
        timeout = float(overrides.get("wait_timeout") or self.wait_timeout)
        try:
            env = await kernels.wait_for_placement(self.workload_id, timeout)  # ends the workload itself on failure
        except BaseException:
            kernels.forget_failed_start(self.kernel_id)
            raise
        # The kernel starts from its workload's environment, not the server's (which may hold its token).
        session = {k: v for k, v in (kwargs.get("env") or {}).items() if k.startswith("JPY_SESSION")}
        kwargs["env"] = {**session, **env}
        try:
            return await super().pre_launch(**kwargs)
        except BaseException as exc:
            self._start_failed(kernels, exc)
            raise

    async def launch_kernel(self, cmd: list[str], **kwargs: Any):
        kernels = current_kernels()
        try:
            info = await super().launch_kernel(cmd, **kwargs)
            kernels.started(self.workload_id, self.pid)
        except BaseException as exc:
            # Whatever failed, the placement is given back now, with the reason on the workload.
            if self.process is not None:
                try:
                    await self.kill()
                except Exception:  # noqa: BLE001 - the release below matters more than this kill
                    pass
            self._start_failed(kernels, exc)
            raise
        return info

    def _start_failed(self, kernels, exc: BaseException) -> None:
        kernels.start_failed(self.workload_id, f"the kernel could not start: {_words(exc)}")
        kernels.forget_failed_start(self.kernel_id)

    async def cleanup(self, restart: bool = False) -> None:
        await super().cleanup(restart=restart)
        if not restart and self.workload_id is not None:
            current_kernels().release(self.workload_id)
            self.workload_id = None

    def _cull_idle_timeout(self) -> float | None:
        value = (self.kernel_spec.metadata or {}).get("cull_idle_timeout") if self.kernel_spec else None
        return float(value) if value else None

    async def get_provisioner_info(self) -> dict:
        info = await super().get_provisioner_info()
        info["workload_id"] = self.workload_id
        return info

    async def load_provisioner_info(self, provisioner_info: dict) -> None:
        await super().load_provisioner_info(provisioner_info)
        self.workload_id = provisioner_info.get("workload_id")


def _words(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
