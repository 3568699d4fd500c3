"""The kernels of a hub user's server, placed by the hub's hetero service (see platform/kernels/hub_kernels.py).

In ``hub-user`` mode the server has no scheduler: the hetero provisioner asks this instead, with the same
calls. A kernel's workload is asked for, as the server's user, with ``POST /kernels/placements``; once
placed, ``POST .../started`` answers its environment (devices, HETERO_*, its own workload credential for
the service) and the kernel starts here from that and this server's passthrough variables, never from
the server's own token; ``DELETE`` gives the devices back. Every ``report_interval_s`` the server
reports its own activity (when it is a hetero server workload itself) and its hetero kernels'
(``POST /activity``), and shuts down the kernels the service's answer names, with its reason.

Where the service runs kernels in pods (its Kubernetes backend), the kernel cannot run here: this
server sends its connection (key and ports) with ``started``, the service starts the kernel's pod on the
placed node, and this server connects to the pod's IP (a :class:`RemotePod`, driven like a pod of its own).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote

from tornado import httpclient

from ..errors import Conflict, Forbidden, HeteroError, InvalidRequest, NotFound
from ..i18n import N_, Message
from ..platform.workloads.credentials import inherited_environment
from ..store import ACTIVE_STATES, INADMISSIBLE, QUEUED_STATES
from ..platform.kernels.service import KernelWaitTimeout, is_hetero, take_over_culling, use_kernels

__all__ = ["HubKernels", "RemotePod", "ServiceUnavailable"]

log = logging.getLogger(__name__)

_CONNECTION_FIELDS = frozenset({"key", "signature_scheme", "transport", "ip", "kernel_name", "shell_port",
                                "iopub_port", "stdin_port", "control_port", "hb_port"})
_ERRORS: dict[int, type[HeteroError]] = {400: InvalidRequest, 403: Forbidden, 404: NotFound, 409: Conflict}


class ServiceUnavailable(RuntimeError):
    """The hub's hetero service did not answer, or answered with its own failure."""


class RemotePod:
    """A kernel's pod the service runs, as the provisioner drives a pod (``ip``, ``key``, ``poll``, ``delete``)."""

    def __init__(self, kernels: HubKernels, workload_id: int, key: str, ip: str):
        self.kernels = kernels
        self.workload_id = workload_id
        self.key = key
        self.ip = ip
        self.exit_code: int | None = None  # set once deleted; a pod that ends by itself is stopped by a report

    def poll(self) -> int | None:
        return self.exit_code

    async def delete(self, *, grace_s: int | None = 0) -> None:
        try:
            await self.kernels.call(f"kernels/placements/{self.workload_id}/pod", method="DELETE")
        except (HeteroError, ServiceUnavailable) as exc:
            log.warning("hetero kernel pod %s not deleted by the service: %s", self.key, exc)
        self.exit_code = -1


class HubKernels:
    backend: str | None = None  # the service's, learned before the first launch

    @property
    def pods(self) -> bool | None:
        """True where the service runs kernels in pods (None: they start here), as the provisioner asks."""
        return True if self.backend == "kubernetes" else None

    def __init__(self, service, *, passthrough: Iterable[str], environ: Mapping[str, str],
                 last_activity: Callable[[], Any] = lambda: None, poll_s: float = 0.25, report_interval_s: float = 3.0):
        self.service = service  # forward.HubService: the service's URL and this server's hub token
        self.base = inherited_environment(environ, passthrough, (service.token,))
        # This server's own workload, when a hetero spawner placed it, and jupyter_server's last activity.
        workload = environ.get("HETERO_WORKLOAD_ID", "")
        self.server_workload = int(workload) if workload.isdigit() else None
        self.last_activity = last_activity
        self.poll_s = poll_s
        self.report_interval_s = report_interval_s
        self.kernel_manager = None
        self._reporting: asyncio.Task | None = None

    def register(self) -> None:
        use_kernels(self)

    def attach(self, kernel_manager) -> None:
        self.kernel_manager = kernel_manager
        take_over_culling(kernel_manager)  # the service decides when a hetero kernel is idle

    # -- the service, as this server's user ------------------------------------------------------

    async def call(self, route: str, body: Any = None, method: str | None = None) -> Any:
        """The service's JSON answer; its 4xx as the same domain error (its sentence, field and reason)."""
        method = method or ("GET" if body is None else "POST")
        request = httpclient.HTTPRequest(
            self.service.endpoint(route, ""), method=method, request_timeout=30, connect_timeout=10,
            headers={"Authorization": f"token {self.service.token}", "Content-Type": "application/json"},
            body=json.dumps(body) if body is not None else None, allow_nonstandard_methods=True,
        )
        try:
            response = await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
        except (OSError, httpclient.HTTPClientError) as exc:  # refused, reset, or closed before its answer (599)
            raise ServiceUnavailable(f"the hub's hetero service did not answer: {exc}") from None
        answer = _json(response.body)
        if response.code >= 300 and not isinstance(answer, dict):
            answer = {}
        if response.code in _ERRORS:
            detail = {key: value for key, value in answer.items() if key != "message"}
            raise _ERRORS[response.code](answer.get("message") or f"HTTP {response.code}", **detail)
        if response.code >= 300:
            raise ServiceUnavailable(f"the hub's hetero service answered {response.code}: "
                                     f"{answer.get('message') or response.reason}")
        return answer

    # -- the provisioner's side (the same calls as platform/kernels/service.py's) ------------------------

    async def holds(self, workload_id: int) -> bool:
        try:
            workload = await self.call(f"workloads/{workload_id}")
        except (NotFound, Forbidden):
            return False
        return workload["state"] in ACTIVE_STATES and workload.get("placement") is not None

    async def request(self, *, kernel_id: str | None, user: str | None, groups: tuple[str, ...] = (),
                      template: str, parameters: dict[str, Any], queue: str | None,
                      idle_timeout: float | None) -> int:
        """Ask for the kernel's workload; ``user`` and ``groups`` are ignored: the service knows this server's."""
        body = {"template": template, "parameters": parameters, "queue": queue, "kernel_id": kernel_id,
                "idle_timeout": idle_timeout}
        workload = await self.call("kernels/placements", {key: value for key, value in body.items() if value is not None})
        return workload["id"]

    async def wait_for_placement(self, workload_id: int, timeout: float) -> dict[str, str]:
        """The kernel's environment once placed; after ``timeout`` the start fails with the blockers.

        In a pod the kernel has its environment there: nothing here (the pod starts at launch)."""
        deadline = time.monotonic() + timeout
        if self.backend is None:
            self.backend = (await self.call("version"))["backend"]
        try:
            while True:
                workload = await self.call(f"workloads/{workload_id}")
                if workload["state"] in ACTIVE_STATES and workload.get("placement"):
                    break
                if workload["state"] == INADMISSIBLE:
                    await self._release(workload_id, failed=workload.get("reason") or "inadmissible")
                    raise KernelWaitTimeout(Message(N_("no {template} kernel can be placed: {reason}"),
                                                    template=workload["template"], reason=workload.get("reason")))
                if workload["state"] not in QUEUED_STATES:
                    raise KernelWaitTimeout(Message(N_("kernel workload {workload} ended while waiting: {reason}"),
                                                    workload=workload_id, reason=workload.get("reason")))
                if time.monotonic() >= deadline:
                    chinese = await self._blockers_in("zh", workload_id)  # before the release ends its wait
                    await self._release(workload_id)
                    raise KernelWaitTimeout(_why_waiting(workload, timeout, chinese))
                await asyncio.sleep(self.poll_s)
            if self.pods:
                return {}
            started = await self.call(f"kernels/placements/{workload_id}/started",
                                      {"where": f"a kernel of {workload['user']}'s server"})
        except KernelWaitTimeout:
            raise
        except BaseException:  # cancelled or broken: a waiting start must not stay queued at the service
            await asyncio.shield(self._release(workload_id))
            raise
        return {**self.base, **started["environment"]}

    async def _blockers_in(self, language: str, workload_id: int) -> str:
        """The workload's first blockers as the service says them in ``language``; empty if it cannot say now."""
        try:
            workload = await self.call(f"workloads/{workload_id}?lang={language}")
        except (HeteroError, ServiceUnavailable):
            return ""
        return "; ".join(blocker["message"] for blocker in (workload.get("blockers") or [])[:3])

    async def launch_pod(self, workload_id: int, *, attempt: int, env: dict[str, str], connection: dict) -> RemotePod:
        """The service starts the kernel's pod, serving ``connection`` (whose key and ports this server chose)."""
        wire = {name: value.decode() if isinstance(value, bytes) else value for name, value in connection.items()
                if name in _CONNECTION_FIELDS}
        started = await self.call(f"kernels/placements/{workload_id}/started",
                                  {"where": f"pod, attempt {attempt}", "connection": wire})
        return RemotePod(self, workload_id, started["pod"]["key"], started["pod"]["ip"])

    async def started(self, workload_id: int, pid: int | None, where: str | None = None) -> None:
        """Reported to the service with the environment, before the launch (as a spawner does)."""
        log.info("hetero kernel workload=%s started here as pid %s", workload_id, pid)

    async def abandon(self, workload_id: int | None, reason: str) -> None:
        if workload_id is not None:
            await self._release(workload_id, failed=reason)

    async def ended(self, workload_id: int) -> None:
        await self._release(workload_id)

    async def _release(self, workload_id: int, failed: str | None = None) -> None:
        route = f"kernels/placements/{workload_id}" + (f"?failed={quote(failed[:1000])}" if failed else "")
        try:
            await self.call(route, method="DELETE")
        except (HeteroError, ServiceUnavailable) as exc:
            # The service releases a kernel its server stops reporting; the log says why it had to.
            log.warning("hetero kernel workload=%s not released at the service: %s", workload_id, exc)

    # -- reports ----------------------------------------------------------------------------------

    def start_reporting(self) -> None:
        if self._reporting is None:
            self._reporting = asyncio.ensure_future(self._report_forever())

    async def stop_reporting(self) -> None:
        if self._reporting is not None:
            self._reporting.cancel()
            self._reporting = None

    async def _report_forever(self) -> None:
        while True:
            try:
                await self.report()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the next report tries again; the service keeps a grace
                log.warning("hetero kernels not reported to the service: %s", exc)
            await asyncio.sleep(self.report_interval_s)

    async def report(self) -> list[dict[str, Any]]:
        """Tell the service what this server and its hetero kernels are doing; shut down the kernels it says to."""
        held = self._held()
        if not held and self.server_workload is None:
            return []
        body: dict[str, Any] = {"kernels": [
            {"workload_id": workload_id, "execution_state": getattr(kernel, "execution_state", None) or "unknown",
             "last_activity": _wall(getattr(kernel, "last_activity", None))}
            for workload_id, (_kernel_id, kernel) in held.items()]}
        if self.server_workload is not None:
            body["server"] = {"workload_id": self.server_workload, "last_activity": _wall(self.last_activity())}
        answer = await self.call("activity", body)
        for stop in answer["stop"]:
            found = held.get(stop["workload_id"])
            if found is not None:
                kernel_id, kernel = found
                kernel.reason = stop["reason"]  # shown by Jupyter's kernels API until the kernel is gone
                log.info("hetero kernel %s shut down: %s", kernel_id, stop["reason"])
                await self.kernel_manager.shutdown_kernel(kernel_id)
        return answer["stop"]

    def _held(self) -> dict[int, tuple[str, Any]]:
        """This server's running hetero kernels that hold a placement, by workload id."""
        held = {}
        for kernel_id in list(self.kernel_manager.list_kernel_ids() if self.kernel_manager else []):
            kernel = self.kernel_manager.get_kernel(kernel_id)
            workload_id = getattr(getattr(kernel, "provisioner", None), "workload_id", None)
            if is_hetero(kernel) and workload_id is not None:
                held[workload_id] = (kernel_id, kernel)
        return held


class _Blockers(Message):
    """A waiting workload's first blockers as the service said them, in English and in Chinese."""

    def __init__(self, english: str, chinese: str):
        super().__init__(N_("not scheduled yet"))
        self.said = {"en": english, "zh": chinese or english}

    def text(self, language: str = "en") -> str:
        return self.said["zh" if language.startswith("zh") else "en"] or super().text(language)


def _why_waiting(workload: dict[str, Any], timeout: float, chinese: str = "") -> Message:
    """The same sentence as the service's own kernels say, with the blockers as the service says them (``workload``'s
    in English, ``chinese`` asked for in Chinese)."""
    blockers = "; ".join(blocker["message"] for blocker in (workload.get("blockers") or [])[:3])
    eta = (Message(N_("~{minutes} min"), minutes=max(0, round((workload["eta"] - time.time()) / 60)))
           if workload.get("eta") else Message(N_("unknown")))
    return Message(N_("no {template} kernel could be placed within {timeout} s: {blockers}. ETA {eta}"),
                   template=workload["template"], timeout=f"{timeout:g}", blockers=_Blockers(blockers, chinese),
                   eta=eta)


def _wall(value) -> float | None:
    if value is None:
        return None
    return value.timestamp() if hasattr(value, "timestamp") else float(value)


def _json(body: bytes | None) -> Any:
    try:
        return json.loads(body or b"{}")
    except ValueError:
        return {}
