"""Who is asking: map a Jupyter user (and JupyterHub groups) to a tenant and a role."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import Catalog, Localized, Role, Tenant
from ..errors import Forbidden

__all__ = ["Identity", "resolve_identity"]

_NO_TENANT = Tenant(name="no-tenant", display=Localized(en="No tenant", zh="无租户"), queues=[], templates=[])


@dataclass(frozen=True)
class Identity:
    """A user as the scheduler sees them."""

    user: str
    tenant: Tenant
    role: Role
    groups: frozenset[str] = field(default_factory=frozenset)

    @property
    def is_platform_admin(self) -> bool:
        return self.role == Role.PLATFORM_ADMIN

    @property
    def is_tenant_admin(self) -> bool:
        return self.role in (Role.TENANT_ADMIN, Role.PLATFORM_ADMIN)


def resolve_identity(catalog: Catalog, user: str, groups: frozenset[str] = frozenset(),
                     extra_platform_admins: frozenset[str] = frozenset()) -> Identity:
    """The user's tenant (by name, then group, then the catalog's default) and strongest role."""
    tenant = (
        next((t for t in catalog.tenants if user in t.users), None)
        or next((t for t in catalog.tenants if groups & set(t.groups)), None)
        or (catalog.tenant(catalog.default_tenant) if catalog.default_tenant else None)
    )
    platform_admin = (
        user in catalog.platform_admins or user in extra_platform_admins or bool(groups & set(catalog.platform_admin_groups))
    )
    if tenant is None and platform_admin:
        tenant = _NO_TENANT  # admins run the platform without belonging to a team; they have no quota
    if tenant is None:
        raise Forbidden(f"user {user!r} belongs to no tenant", reason="no-tenant")
    if platform_admin:
        role = Role.PLATFORM_ADMIN
    elif user in tenant.admins:
        role = Role.TENANT_ADMIN
    else:
        role = Role.MEMBER
    return Identity(user=user, tenant=tenant, role=role, groups=groups)
