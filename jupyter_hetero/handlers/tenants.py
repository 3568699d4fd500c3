"""The caller's tenant: role, allowed queues and templates, quota and use per flavor."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..i18n import N_, Message
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


class TenantsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        """Platform admins see every tenant; tenant-admins their own; members are refused."""
        identity = self.identity
        if not identity.is_tenant_admin:
            self.platform.access.deny(identity, "tenant.list", "tenants",
                                      Message(N_("listing tenants needs the tenant-admin or platform-admin role; "
                                                 "you are {role}"), role=identity.role.value))
        tenants = self.platform.catalog_service.tenants()
        if not identity.is_platform_admin:
            tenants = [t for t in tenants if t["tenant"] == identity.tenant.name]
        self.reply(tenants)


default_handlers = [(rf"/{API_PREFIX}/tenants/me", MyTenantHandler), (rf"/{API_PREFIX}/tenants", TenantsHandler)]
