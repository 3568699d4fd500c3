"""Who is asking: map a Jupyter user (and their groups) to a tenant and a role.

- a configured user (named in a tenant's ``users``, or in one of its ``groups``) gets that tenant;
- the server's owner (see :func:`jupyter_hetero.auth.is_server_owner`) who is in no tenant gets the
  catalog's ``default_tenant``, which exists for the single-user server; nobody else does;
- anyone else belongs to no tenant: a 403 for every tenant action, and no admin role;
- a workload credential is its submitter as a plain member of the workload's tenant, seeing only
  their own work (:func:`workload_identity`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import Catalog, Localized, Role, Tenant
from ..errors import Forbidden
from ..i18n import N_, Message, translate

__all__ = ["Identity", "resolve_identity", "workload_identity"]

_NO_TENANT = Tenant(name="no-tenant", display=Localized(en=N_("No tenant"), zh=translate("No tenant", "zh")), queues=[], templates=[])


@dataclass(frozen=True)
class Identity:
    """A user as the scheduler sees them; ``workload`` is set when a workload's credential is asking."""

    user: str
    tenant: Tenant
    role: Role
    groups: frozenset[str] = field(default_factory=frozenset)
    workload: int | None = None

    @property
    def is_platform_admin(self) -> bool:
        return self.role == Role.PLATFORM_ADMIN

    @property
    def is_tenant_admin(self) -> bool:
        return self.role in (Role.TENANT_ADMIN, Role.PLATFORM_ADMIN)

    @property
    def own_work_only(self) -> bool:
        """Whether this identity reaches only its user's own workloads (a workload credential)."""
        return self.workload is not None


def resolve_identity(catalog: Catalog, user: str, groups: frozenset[str] = frozenset(),
                     extra_platform_admins: frozenset[str] = frozenset(), *, owner: bool = False) -> Identity:
    """The user's tenant (by name, then group; the default tenant only for the owner) and strongest role."""
    tenant = (
        next((t for t in catalog.tenants if user in t.users), None)
        or next((t for t in catalog.tenants if groups & set(t.groups)), None)
        or (catalog.tenant(catalog.default_tenant) if owner and catalog.default_tenant else None)
    )
    platform_admin = (
        user in catalog.platform_admins or user in extra_platform_admins or bool(groups & set(catalog.platform_admin_groups))
    )
    if tenant is None and platform_admin:
        tenant = _NO_TENANT  # admins run the platform without belonging to a team; they have no quota
    if tenant is None:
        if groups:
            message = Message(N_("user {user!r} belongs to no tenant (groups: {groups}): a platform admin must add "
                                 "the user, or one of their groups, to a tenant in the catalog"),
                              user=user, groups=", ".join(sorted(groups)))
        else:
            message = Message(N_("user {user!r} belongs to no tenant: a platform admin must add the user, "
                                 "or one of their groups, to a tenant in the catalog"), user=user)
        raise Forbidden(message, reason="no-tenant")
    if platform_admin:
        role = Role.PLATFORM_ADMIN
    elif user in tenant.admins:
        role = Role.TENANT_ADMIN
    else:
        role = Role.MEMBER
    return Identity(user=user, tenant=tenant, role=role, groups=groups)


def workload_identity(catalog: Catalog, *, user: str, tenant: str, workload_id: int) -> Identity:
    """The identity a workload's credential carries: its submitter, as a member of the workload's tenant.

    Admin roles never travel into a kernel or job: any code running there (a dependency, a pasted
    cell) holds the credential, so it may submit, read and cancel its submitter's own work, nothing more."""
    found = _NO_TENANT if tenant == _NO_TENANT.name else catalog.tenant(tenant)
    if found is None:
        raise Forbidden(Message(N_("tenant {tenant!r} of workload {workload} is no longer in the catalog"),
                                tenant=tenant, workload=workload_id), reason="no-tenant")
    return Identity(user=user, tenant=found, role=Role.MEMBER, workload=workload_id)
