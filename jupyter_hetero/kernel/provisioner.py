"""A kernel provisioner that asks the scheduler for a placement before it starts the kernel.

A kernelspec names it in ``metadata.kernel_provisioner``:

    {"provisioner_name": "hetero-provisioner",
     "config": {"template": "interactive", "parameters": {"devices": 1}, "wait_timeout": 60}}

On launch it creates a ``kernel`` workload, waits (bounded) while it is queued, then starts the
kernel with only its devices visible; on shutdown, cull or death it releases them. A restart keeps
the placement. Launch-time overrides arrive as ``start_kernel(..., hetero={...})``.

On the Kubernetes backend the kernel runs in a pod on the placed node (backends/kubernetes/kernel_pod.py): the same calls,
with the pod's life in place of a local process's, interrupts as messages, and a restart in a new pod.

Whoever places the kernel answers the same calls (``current_kernels()``): this server's own scheduler
(platform/kernels/service.py), or in a hub user's server the hub's hetero service (hub_kernels.py).
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import signal
from pathlib import Path
from typing import Any

from jupyter_client.localinterfaces import localhost
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Dict, Float, Unicode

from ..platform.kernels.service import KernelWaitTimeout, current_kernels

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
    pod = None  # the kernel's pod (a PodKernel; in a hub user's server a RemotePod), on the Kubernetes backend
    launches = 0  # pods started for this kernel (each restart starts a new one)
    emulated = False  # placed on an emulated node
    family = ""  # its devices' accelerator family, whose vendor tool measures them

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        overrides = dict(kwargs.pop("hetero", None) or {})
        kernels = current_kernels()
        if self.workload_id is None or not await kernels.holds(self.workload_id):
            request = {
                "template": overrides.get("template") or self.template,
                "parameters": {**self.parameters, **(overrides.get("parameters") or {})},
                "queue": overrides.get("queue") or self.queue or None,
            }
            self.workload_id = await kernels.request(
                kernel_id=self.kernel_id, user=overrides.get("user"), groups=tuple(overrides.get("groups") or ()),
                idle_timeout=self._cull_idle_timeout(), **request,
            )
        timeout = float(overrides.get("wait_timeout") or self.wait_timeout)
        try:
            env = await kernels.wait_for_placement(self.workload_id, timeout)  # ends the workload itself on failure
        except BaseException:
            forget_failed_start(kernels.kernel_manager, self.kernel_id)
            raise
        # The kernel starts from its workload's environment, not the server's (which may hold its token).
        session = {k: v for k, v in (kwargs.get("env") or {}).items() if k.startswith("JPY_SESSION")}
        kwargs["env"] = {**session, **env}
        self.emulated = env.get("HETERO_EMULATED") == "1"  # its devices are not measured
        self.family = env.get("HETERO_FAMILY", "")
        if kernels.pods is not None:
            # No signal reaches a pod from here: interrupts go as messages on the control channel.
            self.kernel_spec.interrupt_mode = "message"
            # A restart: the manager holds the last pod's address, but the next pod's ports are chosen here.
            self.parent.ip = localhost()
        try:
            return await super().pre_launch(**kwargs)
        except BaseException as exc:
            await self._start_failed(kernels, exc)
            raise

    async def launch_kernel(self, cmd: list[str], **kwargs: Any):
        kernels = current_kernels()
        try:
            if kernels.pods is None:
                info = await super().launch_kernel(self._sandboxed(kernels, cmd, kwargs), **kwargs)
                await kernels.started(self.workload_id, self.pid)
            else:
                info = await self._launch_pod(kernels, kwargs.get("env") or {})
        except BaseException as exc:
            # Whatever failed, the placement is given back now, with the reason on the workload.
            if self.has_process:
                try:
                    await self.kill()
                except Exception:  # noqa: BLE001 - the release below matters more than this kill
                    pass
            await self._start_failed(kernels, exc)
            raise
        return info

    def _sandboxed(self, kernels, cmd: list[str], kwargs: dict[str, Any]) -> list[str]:
        """The kernel's command in its sandbox, where the server keeps one; its own connection file stays visible."""
        isolation = getattr(kernels, "isolation", None)
        if isolation is None:
            return cmd
        env = kwargs.get("env") or {}
        cwd = kwargs.get("cwd")
        # The sandbox starts whatever it is given, so a kernelspec whose interpreter is not there would start, then
        # exit 127 and die over and over; it fails its launch at once instead, as an unwrapped start does.
        if shutil.which(cmd[0], path=env.get("PATH", os.defpath)) is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), cmd[0])
        return isolation.kernel_argv(user=env.get("HETERO_USER", ""), cwd=Path(cwd) if cwd else None,
                                     connection_file=Path(self.parent.connection_file).resolve(), command=cmd)

    async def _launch_pod(self, kernels, env: dict[str, str]) -> dict:
        self.launches += 1
        self.pod = await kernels.launch_pod(self.workload_id, attempt=self.launches, env=env,
                                            connection=self.connection_info)
        await kernels.started(self.workload_id, None, f"pod {self.pod.key}")
        self.connection_info = {**self.connection_info, "ip": self.pod.ip}
        return self.connection_info

    # -- a pod's life in place of a process's (the Kubernetes backend) -----------------------------

    @property
    def has_process(self) -> bool:
        return self.pod is not None or super().has_process

    async def poll(self) -> int | None:
        return self.pod.poll() if self.pod is not None else await super().poll()

    async def wait(self) -> int | None:
        if self.pod is None:
            return await super().wait()
        while (code := self.pod.poll()) is None:
            await asyncio.sleep(0.1)
        return code

    async def send_signal(self, signum: int) -> None:
        if self.pod is None:
            return await super().send_signal(signum)
        if signum in (signal.SIGTERM, signal.SIGKILL):
            await self.pod.delete(grace_s=None if signum == signal.SIGTERM else 0)
        # Any other signal has no way into a pod; interrupts go as messages.

    async def kill(self, restart: bool = False) -> None:
        await (self.pod.delete(grace_s=0) if self.pod is not None else super().kill(restart))

    async def terminate(self, restart: bool = False) -> None:
        await (self.pod.delete(grace_s=None) if self.pod is not None else super().terminate(restart))

    async def _start_failed(self, kernels, exc: BaseException) -> None:
        try:
            await kernels.abandon(self.workload_id, f"the kernel could not start: {_words(exc)}")
        finally:
            forget_failed_start(kernels.kernel_manager, self.kernel_id)

    async def cleanup(self, restart: bool = False) -> None:
        if self.pod is not None:
            pod, self.pod = self.pod, None
            await pod.delete(grace_s=0)  # a restart starts a new pod; an ended kernel leaves none behind
        await super().cleanup(restart=restart)
        if not restart and self.workload_id is not None:
            workload_id, self.workload_id = self.workload_id, None
            await current_kernels().ended(workload_id)

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


def forget_failed_start(kernel_manager, kernel_id: str | None) -> None:
    """jupyter_client keeps a kernel whose start failed among its pending kernels for good (a later
    shutdown of all kernels then trips over it): drop it once its start task has ended."""
    pending = getattr(kernel_manager, "_pending_kernels", None)
    task = pending.get(kernel_id) if pending is not None and kernel_id else None
    if task is None:
        return
    if task.done():
        pending.pop(kernel_id, None)
    else:
        task.add_done_callback(lambda _task: pending.pop(kernel_id, None))


def _words(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
