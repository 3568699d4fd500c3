"""A kernel in a pod, as its provisioner drives it.

    pod = await PodKernel.launch(backend, workload_id=7, attempt=1, node="gpu-3", placed=placed,
                                 env=env, connection=connection_info, timeout=120)
    pod.ip                    # where the server connects: the pod's IP, once Ready
    pod.poll()                # None while it runs, else its exit code
    await pod.delete(grace_s=0)

The server chose the key and the ports and hands them over in a Secret; the pod only has to become
Ready for the server to connect. Nothing listens for the pod, and interrupts go as messages on the
kernel's authenticated control channel, so there is no side channel to guard.
"""

from __future__ import annotations

import asyncio
import time

__all__ = ["PodKernel", "PodStartFailed"]

# Seconds between looks at the reflector's cache while a kernel's pod starts.
POLL_S = 0.1


class PodStartFailed(RuntimeError):
    """The kernel's pod could not start; the message says why (image, scheduling, exit)."""


class PodKernel:
    def __init__(self, backend, key: str, ip: str):
        self.backend = backend
        self.key = key  # "namespace/name"
        self.ip = ip
        self.exit_code: int | None = None

    @classmethod
    async def launch(cls, backend, *, workload_id: int, attempt: int, node: str, placed, env: dict[str, str],
                     connection: dict, timeout: float) -> PodKernel:
        """Create the Secret and the pod (in a worker thread), then wait until the pod is Ready."""
        wire = {name: value.decode() if isinstance(value, bytes) else value for name, value in connection.items()}
        key = await asyncio.to_thread(backend.launch_kernel, workload_id=workload_id, attempt=attempt, node=node,
                                      placed=placed, env=env, connection=wire)
        try:
            ip = await cls._ready(backend, key, timeout)
        except BaseException:
            await asyncio.to_thread(backend.delete_kernel, key)
            raise
        return cls(backend, key, ip)

    @staticmethod
    async def _ready(backend, key: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            state = backend.pod_state(key)
            if state is not None and state.ready and state.ip:
                return state.ip
            if state is not None and not state.alive:
                raise PodStartFailed(f"kernel pod {key} ended before it was ready"
                                     f" (exit code {state.exit_code}{': ' + state.reason if state.reason else ''})")
            stuck = backend.problem_of(key)
            if stuck is not None:
                raise PodStartFailed(f"kernel pod {key}: {stuck}")
            if time.monotonic() >= deadline:
                why = backend.problem_of(key, patient=False) or ("not seen yet" if state is None else "still starting")
                raise PodStartFailed(f"kernel pod {key} was not ready within {timeout:g} s: {why}")
            await asyncio.sleep(POLL_S)

    def poll(self) -> int | None:
        """None while the pod lives; its container's exit code once it ended (-1 when it left none)."""
        if self.exit_code is None:
            state = self.backend.pod_state(self.key)
            if state is None or not state.alive:
                self.exit_code = -1 if state is None or state.exit_code is None else state.exit_code
        return self.exit_code

    async def delete(self, *, grace_s: int | None = 0) -> None:
        """Delete the pod (with ``grace_s``; None: its own grace period) and its Secret."""
        await asyncio.to_thread(self.backend.delete_kernel, self.key, grace_s=grace_s)
