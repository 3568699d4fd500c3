"""Templates and queues: what can be requested, and how busy each queue is."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..models import ListTemplatesQuery
from .base import API_PREFIX, HeteroHandler


class TemplatesHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        query = self.query(ListTemplatesQuery)
        tenant = self.identity.tenant if query.mine else None
        self.reply(self.platform.catalog_service.templates(
            kind=query.kind.value if query.kind else None,
            task_type=query.task_type.value if query.task_type else None,
            tenant=tenant,
        ))


class TemplateHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self, name: str) -> None:
        self.reply(self.platform.catalog_service.template(name))


class QueuesHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply(self.platform.catalog_service.queues(self.identity.tenant))


default_handlers = [
    (rf"/{API_PREFIX}/templates", TemplatesHandler),
    (rf"/{API_PREFIX}/templates/(?P<name>[^/]+)", TemplateHandler),
    (rf"/{API_PREFIX}/queues", QueuesHandler),
]
