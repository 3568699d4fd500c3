"""The inventory: real and emulated nodes with capability, labels, flavor and state."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..models import ListNodesQuery
from .base import API_PREFIX, HeteroHandler


class NodesHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.reply(await self.platform.nodes.list(self.query(ListNodesQuery)))


class NodeHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def delete(self, name: str) -> None:
        """Remove an emulated node, as if the machine died: its work follows its queue's node-loss policy."""
        self.reply(self.platform.nodes.remove(self.identity, name))


default_handlers = [(rf"/{API_PREFIX}/nodes", NodesHandler), (rf"/{API_PREFIX}/nodes/(?P<name>[^/]+)", NodeHandler)]
