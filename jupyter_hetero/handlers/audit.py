"""The audit log, for platform admins: ``GET /audit`` (filtered, paged) and ``GET /audit/verify``."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..models import AuditQuery
from .base import API_PREFIX, HeteroHandler


class AuditHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply(self.platform.audit.entries(self.identity, self.query(AuditQuery)))


class AuditVerifyHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        # Every entry is read and hashed: in a worker thread, not on the event loop.
        identity = self.identity
        self.reply(await self.off_loop(lambda: self.platform.audit.verify(identity)))


default_handlers = [(rf"/{API_PREFIX}/audit", AuditHandler), (rf"/{API_PREFIX}/audit/verify", AuditVerifyHandler)]
