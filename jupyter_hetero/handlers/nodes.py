"""The inventory: real and emulated nodes with capability, labels, flavor and state."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..errors import NotFound
from ..i18n import N_, Message
from ..models import ListNodesQuery
from .base import API_PREFIX, HeteroHandler


_NOTHING = {"cpu_milli": 0, "memory_mib": 0, "device_milli": 0, "devices": [], "workloads": 0}


class NodesHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        query = self.query(ListNodesQuery)
        platform = self.platform
        allocation = platform.inventory.allocated()
        nodes = [
            node for node in platform.inventory.nodes()
            if (query.flavor is None or node.flavor == query.flavor)
            and (query.family is None or node.capability.family == query.family)
            and (query.emulated is None or node.capability.emulated == query.emulated)
            and (query.state is None or node.readiness == query.state)
        ]
        def measure() -> list[dict | None]:
            return [platform.backend.node_utilisation(node.capability) for node in nodes]

        # Measuring a real node reads NVML, which waits on the driver: then in a worker thread.
        # Emulated nodes measure nothing, and a big emulated inventory should not pay for the hop.
        real = any(not node.capability.emulated for node in nodes)
        utilisation = await self.off_loop(measure) if real else measure()
        self.reply([
            {**node.to_json(), "allocated": allocation.get(node.name, _NOTHING), "utilisation": used}
            for node, used in zip(nodes, utilisation)
        ])


class NodeHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def delete(self, name: str) -> None:
        """Remove an emulated node, as if the machine died: its work follows its queue's node-loss policy."""
        platform = self.platform
        view = platform.inventory.node(name)
        if view is None:
            raise NotFound(Message(N_("node {node!r} does not exist"), node=name))
        identity = self.identity
        if not view.capability.emulated:
            platform.access.deny(identity, "node.remove", f"node/{name}",
                                 Message(N_("node {node} is a real machine; only emulated nodes can be removed here"),
                                         node=name))
        platform.access.require_platform_admin(identity, "node.remove", f"node/{name}")
        view = platform.inventory.mark_lost(name, f"removed by {identity.user}")
        platform.loop.wake()
        self.reply(view.to_json())


default_handlers = [(rf"/{API_PREFIX}/nodes", NodesHandler), (rf"/{API_PREFIX}/nodes/(?P<name>[^/]+)", NodeHandler)]
