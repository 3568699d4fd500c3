"""In a hub user's server, the hetero calls about its own kernels are answered here (the kernels run
here); every other hetero call goes to the hub's service (forward.py)."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..errors import NotFound
from ..i18n import N_, Message
from ..kernel.hub_kernels import HubKernels
from ..models import StartKernel
from ..platform.kernels.service import is_hetero
from ..platform.kernels.usage import kernel_usage
from .base import API_PREFIX, ApiHandler
from .kernels import start_kernel

__all__ = ["hub_kernel_handlers"]


class HubKernelHandler(ApiHandler):
    @property
    def kernels(self) -> HubKernels:
        return self.settings["hetero_hub_kernels"]

    async def workload_of(self, kernel_id: str) -> tuple[object, dict]:
        """A hetero kernel of this server and its workload at the service (404 for any other kernel)."""
        kernel = self.kernel_manager.get_kernel(kernel_id) if kernel_id in self.kernel_manager else None
        workload_id = getattr(getattr(kernel, "provisioner", None), "workload_id", None)
        if not is_hetero(kernel) or workload_id is None:
            raise NotFound(Message(N_("no running hetero kernel {kernel!r}"), kernel=kernel_id))
        return kernel, await self.kernels.call(f"workloads/{workload_id}")


class HubKernelsHandler(HubKernelHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Start a kernel here, placed by the service as this server's user (who the service checks)."""
        # The user's own server, which no one else calls: it holds the request while the service places the kernel.
        kernel_id = await start_kernel(self, self.body(StartKernel))
        if kernel_id is None:
            return
        _kernel, workload = await self.workload_of(kernel_id)
        self.reply({"kernel_id": kernel_id, "workload_id": workload["id"], "placement": workload["placement"]},
                   status=201)


class HubKernelUsageHandler(HubKernelHandler):
    @web.authenticated
    @authorized
    async def get(self, kernel_id: str) -> None:
        kernel, workload = await self.workload_of(kernel_id)
        if not workload.get("placement"):
            raise NotFound(Message(N_("no running hetero kernel {kernel!r}"), kernel=kernel_id))
        usage = await kernel_usage(kernel_id, kernel, workload, emulated=kernel.provisioner.emulated,
                                   family=kernel.provisioner.family)
        self.reply({**usage, "template": workload["template"]})


hub_kernel_handlers = [
    (rf"/{API_PREFIX}/kernels", HubKernelsHandler),
    (rf"/{API_PREFIX}/kernels/(?P<kernel_id>[^/]+)/usage", HubKernelUsageHandler),
]
