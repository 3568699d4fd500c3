"""The inventory as the API shows it: each node with what admitted work holds on it and its measured use, and
an emulated node's removal.

    nodes = Nodes(inventory=inventory, backend=backend, access=access, wake=loop.wake)
    await nodes.list(ListNodesQuery(family="nvidia"))   # [{"name": ..., "allocated": {...}, "utilisation": ...}]
    nodes.remove(identity, "emu-a100-0")                # as if the machine died
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ...backends.base import Backend
from ...errors import NotFound
from ...i18n import N_, Message
from ...models import ListNodesQuery
from ..access import Access
from ..identity import Identity
from .inventory import Inventory

__all__ = ["Nodes"]

# What a node no admitted work holds anything of shows as allocated.
_NOTHING = {"cpu_milli": 0, "memory_mib": 0, "device_milli": 0, "devices": [], "workloads": 0}


class Nodes:
    """The nodes' views for the API over the inventory, the backend's measurements and the scheduling loop."""

    def __init__(self, *, inventory: Inventory, backend: Backend, access: Access, wake: Callable[[], None]):
        self.inventory = inventory
        self.backend = backend
        self.access = access
        self.wake = wake

    async def list(self, query: ListNodesQuery) -> list[dict[str, Any]]:
        """The nodes ``query`` selects, each with its allocation and utilisation (None where nothing measures it)."""
        allocation = self.inventory.allocated()
        nodes = [
            node for node in self.inventory.nodes()
            if (query.flavor is None or node.flavor == query.flavor)
            and (query.family is None or node.capability.family == query.family)
            and (query.emulated is None or node.capability.emulated == query.emulated)
            and (query.state is None or node.readiness == query.state)
        ]

        def measure() -> list[dict | None]:
            return [self.backend.node_utilisation(node.capability) for node in nodes]

        # Measuring a real node reads NVML, which waits on the driver: then in a worker thread.
        # Emulated nodes measure nothing, and a big emulated inventory should not pay for the hop.
        real = any(not node.capability.emulated for node in nodes)
        utilisation = await asyncio.get_running_loop().run_in_executor(None, measure) if real else measure()
        return [{**node.to_json(), "allocated": allocation.get(node.name, _NOTHING), "utilisation": used}
                for node, used in zip(nodes, utilisation)]

    def remove(self, identity: Identity, name: str) -> dict[str, Any]:
        """Remove an emulated node, as if the machine died: its work follows its queue's node-loss policy."""
        view = self.inventory.node(name)
        if view is None:
            raise NotFound(Message(N_("node {node!r} does not exist"), node=name))
        if not view.capability.emulated:
            self.access.deny(identity, "node.remove", f"node/{name}",
                             Message(N_("node {node} is a real machine; only emulated nodes can be removed here"),
                                     node=name))
        self.access.require_platform_admin(identity, "node.remove", f"node/{name}")
        view = self.inventory.mark_lost(name, f"removed by {identity.user}")
        self.wake()
        return view.to_json()
