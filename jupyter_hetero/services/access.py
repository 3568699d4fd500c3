"""Who may see and stop which workloads; every denial and every admin action goes to the audit log.

- members see their tenant's workloads and stop their own;
- tenant-admins see and stop all of their tenant's;
- platform-admins see and stop everything, and only they may preempt by hand or remove nodes;
- a workload credential (a kernel or job calling the API) is a member who sees and stops only
  its submitter's own workloads, whatever roles the submitter holds.
"""

from __future__ import annotations

from typing import Any

from ..errors import Forbidden
from ..i18n import N_, Message
from ..store import Repository
from ..store.tables import WorkloadRow
from .identity import Identity

__all__ = ["Access"]


class Access:
    def __init__(self, repository: Repository):
        self.repository = repository

    @staticmethod
    def may_see(identity: Identity, row: WorkloadRow) -> bool:
        if identity.own_work_only:
            return row.user == identity.user and row.tenant == identity.tenant.name
        return identity.is_platform_admin or row.tenant == identity.tenant.name

    @staticmethod
    def may_stop(identity: Identity, row: WorkloadRow) -> bool:
        if identity.is_platform_admin:
            return True
        return row.tenant == identity.tenant.name and (identity.is_tenant_admin or row.user == identity.user)

    def require_see(self, identity: Identity, row: WorkloadRow, action: str) -> None:
        if self.may_see(identity, row):
            return
        if identity.own_work_only:
            self.deny(identity, action, f"workload/{row.id}",
                      Message(N_("workload {workload} is not {user}'s own: the credential of workload {credential} "
                                 "reaches only its submitter's own work"),
                              workload=row.id, user=identity.user, credential=identity.workload))
        self.deny(identity, action, f"workload/{row.id}",
                  Message(N_("workload {workload} belongs to tenant {tenant}, not to your tenant {yours}"),
                          workload=row.id, tenant=row.tenant, yours=identity.tenant.name))

    def require_stop(self, identity: Identity, row: WorkloadRow, action: str) -> None:
        self.require_see(identity, row, action)
        if not self.may_stop(identity, row):
            self.deny(identity, action, f"workload/{row.id}",
                      Message(N_("workload {workload} belongs to {owner}; only they or a tenant-admin of {tenant} "
                                 "may stop it"), workload=row.id, owner=row.user, tenant=row.tenant))

    def require_platform_admin(self, identity: Identity, action: str, target: str) -> None:
        if not identity.is_platform_admin:
            needs = (N_("{action} needs the platform-admin role; you are {role} (a workload credential never "
                        "carries an admin role)") if identity.own_work_only else
                     N_("{action} needs the platform-admin role; you are {role}"))
            self.deny(identity, action, target, Message(needs, action=action, role=identity.role.value))
        self.record(identity, action, target)

    def deny(self, identity: Identity, action: str, target: str, reason: str | Message) -> None:
        self.repository.record_audit(actor=identity.user, action=action, target=target, outcome="denied",
                                     detail={"reason": str(reason), "tenant": identity.tenant.name, **_credential(identity)})
        raise Forbidden(reason)

    def record(self, identity: Identity, action: str, target: str, detail: dict[str, Any] | None = None) -> None:
        self.repository.record_audit(actor=identity.user, action=action, target=target, outcome="allowed",
                                     detail={"tenant": identity.tenant.name, "role": identity.role.value,
                                             **_credential(identity), **(detail or {})})


def _credential(identity: Identity) -> dict[str, int]:
    """The audit names the workload whose credential acted, so its kernel or job is not mistaken for its user."""
    return {"credential_of": identity.workload} if identity.workload is not None else {}
