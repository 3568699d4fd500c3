"""Online services: create, list, describe, scale and delete; and their endpoints, load-balanced across
ready replicas behind the server's authentication."""

from __future__ import annotations

import time

from jupyter_server.auth.decorator import authorized
from tornado import httpclient, web
from tornado.simple_httpclient import HTTPTimeoutError

from ..errors import GatewayTimeout, Unavailable
from ..i18n import N_, Message
from ..models import CreateRollout, CreateService, RollBack, ScaleService, ServiceQuery
from .base import API_PREFIX, HeteroHandler, Relay

# What of a request reaches a replica, and what of its answer comes back (nothing of the server's auth).
_FORWARDED = ("Content-Type", "Accept", "Accept-Language")
_RELAYED = ("Content-Type", "Content-Disposition", "Cache-Control")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_REPLICA_TIMEOUT_S = 300


class ServicesHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply(self.platform.serving.list(self.identity))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        # Refused before the body is read: a service outlives any workload whose credential would create it.
        self.platform.access.require_person(self.identity, "service.create", "services")
        body = self.body(CreateService)
        self.admit_submission(self.identity.user)
        self.reply(self.platform.serving.create(self.identity, body), status=201)


class _NamedService(HeteroHandler):
    """A route ``services/<name>``: the name is looked up in the caller's tenant, or in ``?tenant=`` (only a
    platform admin may name another tenant than their own)."""

    @property
    def tenant(self) -> str | None:
        return self.query(ServiceQuery).tenant


class ServiceHandler(_NamedService):
    @web.authenticated
    @authorized
    def get(self, name: str) -> None:
        self.reply(self.platform.serving.get(self.identity, name, self.tenant))

    @web.authenticated
    @authorized
    def patch(self, name: str) -> None:
        body = self.body(ScaleService)
        self.reply(self.platform.serving.scale(self.identity, name, body.replicas, self.tenant))

    @web.authenticated
    @authorized
    def delete(self, name: str) -> None:
        self.reply(self.platform.serving.delete(self.identity, name, self.tenant))


class ServiceEventsHandler(_NamedService):
    @web.authenticated
    @authorized
    def get(self, name: str) -> None:
        self.reply(self.platform.serving.events(self.identity, name, self.tenant))


class RolloutsHandler(_NamedService):
    @web.authenticated
    @authorized
    def post(self, name: str) -> None:
        body = self.body(CreateRollout)
        self.reply(self.platform.serving.roll_out(self.identity, name, body, self.tenant), status=201)


class RollbackHandler(_NamedService):
    @web.authenticated
    @authorized
    def post(self, name: str) -> None:
        body = self.body(RollBack)
        self.reply(self.platform.serving.roll_back(self.identity, name, body.revision, self.tenant))


class EndpointHandler(Relay, HeteroHandler):
    """``/hetero/endpoints/<tenant>/<name>/<path>``: the request goes to one ready replica, the next one in turn;
    a replica that cannot be reached is taken out of rotation and the next one tried."""

    async def relay(self, tenant: str, name: str, path: str) -> None:
        serving = self.platform.serving
        service = serving.may_call(self.identity, tenant, name)  # 404 unknown, 403 another tenant's
        query = f"?{self.request.query}" if self.request.query else ""
        headers = {key: self.request.headers[key] for key in _FORWARDED if key in self.request.headers}
        for replica, url in serving.ready_replicas(service, serving.canary_of(service)):
            request = httpclient.HTTPRequest(
                f"{url}/{path}{query}", method=self.request.method, headers=headers, follow_redirects=False,
                body=self.request.body if self.request.method in _BODY_METHODS else None,
                allow_nonstandard_methods=True, connect_timeout=5, request_timeout=_REPLICA_TIMEOUT_S)
            started = time.perf_counter()
            serving.in_flight[service] = serving.in_flight.get(service, 0) + 1
            try:
                response = await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
            except (OSError, httpclient.HTTPClientError) as exc:
                # Refused, or the connection closed before an answer (the replica died under the request,
                # which a model server's inference does not mind doing twice): the next replica answers.
                # Timed out: the replica is slow, not gone, and the caller hears so.
                if isinstance(exc, HTTPTimeoutError):
                    serving.observe(service, replica, time.perf_counter() - started, 504)
                    raise GatewayTimeout(Message(N_("a replica of service {name} did not answer within {seconds} s"),
                                                 name=name, seconds=_REPLICA_TIMEOUT_S), reason="replica-timeout") from None
                response = None
            finally:
                serving.in_flight[service] -= 1
            if response is None or response.code == 599:  # not reached: the next replica answers instead
                serving.not_ready(replica)
                continue
            serving.observe(service, replica, time.perf_counter() - started, response.code)
            self.set_status(response.code, response.reason)
            for key in _RELAYED[1:]:
                if key in response.headers:
                    self.set_header(key, response.headers[key])
            self.finish(response.body or b"",
                        set_content_type=response.headers.get("Content-Type", "application/octet-stream"))
            return
        raise Unavailable(Message(N_("service {name} has no ready replica now; its replicas start or restart: "
                                     "see GET /hetero/api/v1/services/{name}?tenant={tenant}"), name=name,
                                  tenant=tenant), reason="no-ready-replica")


default_handlers = [
    (rf"/{API_PREFIX}/services", ServicesHandler),
    (rf"/{API_PREFIX}/services/(?P<name>[^/]+)", ServiceHandler),
    (rf"/{API_PREFIX}/services/(?P<name>[^/]+)/events", ServiceEventsHandler),
    (rf"/{API_PREFIX}/services/(?P<name>[^/]+)/rollouts", RolloutsHandler),
    (rf"/{API_PREFIX}/services/(?P<name>[^/]+)/rollback", RollbackHandler),
]
# Not part of the API: each service's own, whatever its model server answers. The tenant is in the path because
# names are per tenant; the path before it (/hetero/endpoints/<name>/) is gone: it would read both ways.
endpoint_handlers = [(r"/hetero/endpoints/(?P<tenant>[^/]+)/(?P<name>[^/]+)/(?P<path>.*)", EndpointHandler)]
