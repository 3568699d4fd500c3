"""Parameterised kernel launch and per-kernel usage."""

from __future__ import annotations

import uuid

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..errors import Conflict, HeteroError
from ..i18n import N_, Message
from ..models import StartKernel
from ..services.kernels import KernelWaitTimeout
from ..services.resolve import known_template
from .base import API_PREFIX, HeteroHandler

# The kernelspec whose provisioner takes the template and parameters at launch.
GENERIC_KERNELSPEC = "hetero-python3"


class KernelsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Start a kernel from a template and advanced parameters, without a kernelspec per combination."""
        body = self.body(StartKernel)
        identity = self.identity
        platform = self.platform
        template = known_template(platform.catalog, body.template)
        if not template.interactive:
            raise Conflict(Message(N_("template {template} does not run kernels; use it for jobs"), template=template.name),
                           field="template")
        platform.workloads.check_access(identity, template.name, body.queue or template.queue)
        kernel_id = str(uuid.uuid4())
        try:
            await self.kernel_manager.start_kernel(
                kernel_id=kernel_id, kernel_name=body.kernel_name or GENERIC_KERNELSPEC, path=body.path,
                hetero={"template": template.name, "parameters": body.parameters, "queue": body.queue,
                        "wait_timeout": body.wait_timeout,
                        "user": None if identity.user == platform.owner else identity.user,
                        "groups": sorted(identity.groups)},
            )
        except KernelWaitTimeout as exc:  # the provisioner has ended the workload and forgotten the kernel
            raise Conflict(str(exc), reason="no-placement") from None
        except HeteroError:  # a bad parameter found at launch: the client's mistake, answered as such
            raise
        except Exception as exc:  # noqa: BLE001 - answered as the server's failure, with its reason
            # Any other failure too; the provisioner has already ended the workload with the reason.
            self.log.warning("hetero kernel %s could not start: %s", kernel_id, exc)
            self.reply({"message": f"the kernel could not start: {exc}", "reason": "start-failed"}, status=500)
            return
        workload = platform.kernels.workload_of(kernel_id)
        self.reply({"kernel_id": kernel_id, "workload_id": workload.id if workload else None,
                    "placement": workload.placement if workload else None}, status=201)


class KernelUsageHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self, kernel_id: str) -> None:
        usage = await self.platform.kernels.usage(kernel_id)
        row = self.platform.workloads.get(self.identity, usage["workload_id"], "kernel.usage")
        self.reply({**usage, "template": row.template})


default_handlers = [
    (rf"/{API_PREFIX}/kernels", KernelsHandler),
    (rf"/{API_PREFIX}/kernels/(?P<kernel_id>[^/]+)/usage", KernelUsageHandler),
]
