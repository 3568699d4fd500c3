"""The caller's tenant: role, allowed queues and templates, quota and use per flavor."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from .base import API_PREFIX, HeteroHandler


class MyTenantHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        identity = self.identity
        tenant = identity.tenant
        self.reply({
            "user": identity.user,
            "role": identity.role.value,
            "tenant": tenant.name,
            "display": tenant.display.model_dump(),
            "cohort": tenant.cohort,
            "cost_centre": tenant.cost_centre,
            "queues": tenant.queues,
            "templates": tenant.templates,
            "quota": self.platform.catalog_service.tenant_usage(tenant),
        })


default_handlers = [(rf"/{API_PREFIX}/tenants/me", MyTenantHandler)]
