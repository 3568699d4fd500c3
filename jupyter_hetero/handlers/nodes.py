"""The inventory: real and emulated nodes with capability, labels, flavor and admission state."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..models import ListNodesQuery
from .base import API_PREFIX, HeteroHandler


class NodesHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        query = self.query(ListNodesQuery)
        self.reply([
            node.to_json()
            for node in self.platform.inventory.nodes()
            if (query.flavor is None or node.flavor == query.flavor)
            and (query.family is None or node.capability.family == query.family)
            and (query.emulated is None or node.capability.emulated == query.emulated)
            and (query.state is None or node.state == query.state)
        ])


default_handlers = [(rf"/{API_PREFIX}/nodes", NodesHandler)]
