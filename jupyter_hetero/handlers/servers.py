"""Hub users' servers as workloads: what a hetero spawner calls, as the spawning user."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..models import Launched, ReleaseQuery, RequestServer
from .base import API_PREFIX, HeteroHandler, parse_workload_id


class ServersHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        self.platform.access.require_person(self.identity, "server.request", "servers")
        body = self.body(RequestServer)
        self.reply(await self.platform.servers.request_off_loop(self.identity, body), status=201)


class ServerHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def delete(self, workload_id: str) -> None:
        failed = self.query(ReleaseQuery).failed
        self.reply(self.platform.servers.release(self.identity, parse_workload_id(workload_id), failed))


class ServerStartedHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def post(self, workload_id: str) -> None:
        self.platform.access.require_person(self.identity, "server.start", f"workload/{workload_id}")
        body = self.body(Launched)
        self.reply(self.platform.servers.started(self.identity, parse_workload_id(workload_id), body.where))


default_handlers = [
    (rf"/{API_PREFIX}/servers", ServersHandler),
    (rf"/{API_PREFIX}/servers/(?P<workload_id>[^/]+)", ServerHandler),
    (rf"/{API_PREFIX}/servers/(?P<workload_id>[^/]+)/started", ServerStartedHandler),
]
