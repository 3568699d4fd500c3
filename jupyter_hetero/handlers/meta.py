"""The version of the server and the OpenAPI document of this API."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

import yaml
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server.utils import url_path_join
from tornado import web

from ..__about__ import __version__
from .base import API_PREFIX, HeteroHandler


@cache
def openapi_document() -> dict:
    """The OpenAPI 3 document shipped beside the handlers, with the package version filled in."""
    text = (resources.files(__package__) / "openapi.yaml").read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    document["info"]["version"] = __version__
    return document


class VersionHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply(self.platform.version(self.identity))


class SchedulerTicksHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        identity = self.identity
        # The access check writes to the audit log: in a worker thread, not on the event loop.
        self.reply(await self.off_loop(lambda: self.platform.scheduler_ticks(identity)))


class OpenAPIHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(openapi_document()))


class SignInHandler(ExtensionHandlerMixin, JupyterHandler):
    """The hub's service's own address, where a browser signs in (through the hub's OAuth, as for any page of a
    hub service): then it answers who the browser is and where the API is. The service has no other page."""

    @web.authenticated
    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"user": self.current_user.username,
                                "api": url_path_join(self.base_url, API_PREFIX) + "/"}))


# Served by the hub's service only: a single server's own address is jupyter_server's (JupyterLab).
service_handlers = [(r"/", SignInHandler)]

default_handlers = [
    (rf"/{API_PREFIX}/version", VersionHandler),
    (rf"/{API_PREFIX}/scheduler/ticks", SchedulerTicksHandler),
    (rf"/{API_PREFIX}/openapi.json", OpenAPIHandler),
]
