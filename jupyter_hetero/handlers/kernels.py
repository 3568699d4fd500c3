"""Parameterised kernel launch and per-kernel usage; placements for the kernels of hub users' servers."""

from __future__ import annotations

import asyncio
import uuid
from functools import partial
from typing import Any

from jupyter_client.kernelspec import NoSuchKernel
from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import authorized
from tornado import web

from ..errors import Conflict, HeteroError, InvalidRequest
from ..i18n import N_, Message
from ..models import ActivityReport, Launched, ReleaseQuery, RequestKernelPlacement, StartKernel
from ..platform.kernels.service import KernelWaitTimeout
from .base import API_PREFIX, ApiHandler, HeteroHandler, parse_workload_id

# The kernelspec whose provisioner takes the template and parameters at launch.
GENERIC_KERNELSPEC = "hetero-python3"
# Seconds POST /kernels holds its connection for a placement unless the caller asks to wait (then 202).
ANSWER_WITHIN_S = 5.0


class KernelsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Start a kernel from a template and advanced parameters, without a kernelspec per combination."""
        identity = self.identity
        platform = self.platform
        if platform.mode == "service":
            raise Conflict(Message(N_("the hub's hetero service runs no kernels: start the kernel in your own server, "
                                      "which asks the service for its placement")), reason="kernels-run-in-user-servers")
        # Refused before the body is read: a kernel (and the credential it holds) would outlive the caller's workload.
        platform.access.require_person(identity, "kernel.start", "kernels")
        body = self.body(StartKernel)
        self.admit_submission(identity.user)
        # Refused here with the answers every kind gives, before a kernel is started for it.
        platform.kernels.check(identity, body.template, body.parameters, body.queue)
        kernel_id = str(uuid.uuid4())
        starting = asyncio.ensure_future(start_kernel(
            self, body, kernel_id=kernel_id, user=None if identity.user == platform.owner else identity.user,
            groups=sorted(identity.groups)))
        if not body.wait and body.wait_timeout > ANSWER_WITHIN_S:
            await asyncio.wait({starting}, timeout=ANSWER_WITHIN_S)
            workload = platform.kernels.workload_of(kernel_id, waiting=True)
            if not starting.done() and workload is not None:
                # The kernel goes on waiting for its placement in the server; the caller follows its workload.
                starting.add_done_callback(partial(_started_late, self.log, kernel_id))
                self.reply({"kernel_id": kernel_id, "workload_id": workload.id,
                            "workload": platform.workloads.describe(identity, workload.id)}, status=202)
                return
        if await starting is None:
            return
        workload = platform.kernels.workload_of(kernel_id)
        self.reply({"kernel_id": kernel_id, "workload_id": workload.id if workload else None,
                    "placement": workload.placement if workload else None}, status=201)


def _started_late(log, kernel_id: str, starting: asyncio.Future) -> None:
    """How a kernel answered 202 ended its wait: started, or its workload ended with the reason (said there)."""
    failure = starting.exception()
    if failure is not None:
        log.info("hetero kernel %s did not start after its 202: %s", kernel_id, failure)


class KernelUsageHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self, kernel_id: str) -> None:
        usage = await self.platform.kernels.usage(kernel_id)
        row = self.platform.workloads.get(self.identity, usage["workload_id"], "kernel.usage")
        self.reply({**usage, "template": row.template})


class KernelPlacementsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        self.platform.access.require_person(self.identity, "kernel.request", "kernels/placements")
        body = self.body(RequestKernelPlacement)
        self.reply(await self.platform.hub_kernels.request_off_loop(self.identity, body), status=201)


class ActivityHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def post(self) -> None:
        """A hub user's server on itself and its kernels; the answer, the kernels it must shut down."""
        platform, identity = self.platform, self.identity
        platform.access.require_person(identity, "activity.report", "activity")  # it keeps placements alive
        body = self.body(ActivityReport)
        if body.server is not None:
            platform.servers.report(identity, body.server)
        self.reply(platform.hub_kernels.report(identity, body.kernels))


class KernelPlacementHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def delete(self, workload_id: str) -> None:
        failed = self.query(ReleaseQuery).failed
        kernels, identity = self.platform.hub_kernels, self.identity
        await kernels.end_pod(identity, parse_workload_id(workload_id))
        self.reply(kernels.release(identity, parse_workload_id(workload_id), failed))


class KernelPodHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def delete(self, workload_id: str) -> None:
        await self.platform.hub_kernels.end_pod(self.identity, parse_workload_id(workload_id))
        self.set_status(204)
        self.finish()


class KernelStartedHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self, workload_id: str) -> None:
        self.platform.access.require_person(self.identity, "kernel.start", f"workload/{workload_id}")
        body = self.body(Launched)
        self.reply(await self.platform.hub_kernels.launch(self.identity, parse_workload_id(workload_id), body))


async def start_kernel(handler: ApiHandler, body: StartKernel, kernel_id: str | None = None, **who: Any) -> str | None:
    """Start a hetero kernel from ``body`` (its provisioner waits for the placement): its id; None when the
    start failed and the failure was answered (unless the request was answered already: then it is logged)."""
    kernel_name = body.kernel_name or GENERIC_KERNELSPEC
    try:
        # Before anything is placed: a kernelspec that is not here is the request's mistake, not a failed start.
        await ensure_async(handler.kernel_manager.kernel_spec_manager.get_kernel_spec(kernel_name))
    except NoSuchKernel:
        raise InvalidRequest(Message(N_("no kernel named {kernel!r} is installed on this server (`jupyter kernelspec "
                                        "list` shows those that are)"), kernel=kernel_name), field="kernel_name") from None
    kernel_id = kernel_id or str(uuid.uuid4())
    try:
        await handler.kernel_manager.start_kernel(
            kernel_id=kernel_id, kernel_name=kernel_name, path=body.path,
            hetero={"template": body.template, "parameters": body.parameters, "queue": body.queue,
                    "wait_timeout": body.wait_timeout, **who},
        )
    except KernelWaitTimeout as exc:  # the provisioner has ended the workload and forgotten the kernel
        raise Conflict(exc.message, reason="no-placement") from None
    except HeteroError:  # a bad parameter found at launch: the client's mistake, answered as such
        raise
    except Exception as exc:  # noqa: BLE001 - answered as the server's failure, with its reason
        # Any other failure too; the provisioner has already ended the workload with the reason.
        handler.log.warning("hetero kernel %s could not start: %s", kernel_id, exc)
        if not handler._finished:
            handler.reply({"message": f"the kernel could not start: {exc}", "reason": "start-failed"}, status=500)
        return None
    return kernel_id


default_handlers = [
    (rf"/{API_PREFIX}/kernels", KernelsHandler),
    (rf"/{API_PREFIX}/kernels/(?P<kernel_id>[^/]+)/usage", KernelUsageHandler),
    (rf"/{API_PREFIX}/activity", ActivityHandler),
    (rf"/{API_PREFIX}/kernels/placements", KernelPlacementsHandler),
    (rf"/{API_PREFIX}/kernels/placements/(?P<workload_id>[^/]+)", KernelPlacementHandler),
    (rf"/{API_PREFIX}/kernels/placements/(?P<workload_id>[^/]+)/started", KernelStartedHandler),
    (rf"/{API_PREFIX}/kernels/placements/(?P<workload_id>[^/]+)/pod", KernelPodHandler),
]
