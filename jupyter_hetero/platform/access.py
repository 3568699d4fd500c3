"""Who may see and stop which workloads; every denial and every admin action goes to the audit log.

- members see their tenant's workloads and stop their own;
- tenant-admins see and stop all of their tenant's;
- platform-admins see and stop everything, and only they may preempt by hand or remove nodes;
- a workload credential (a kernel or job calling the API) is its submitter as a plain member, whatever
  roles they hold, who reaches only its own workload and the follow-up jobs it submitted (which end
  with it), and never creates what would outlive it: a kernel placement or server, a started mark,
  an activity report that keeps a placement alive, or a service (:meth:`Access.require_person`).
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import Forbidden
from ..i18n import N_, Message
from ..store import Repository
from ..store.tables import WorkloadRow
from .identity import Identity

__all__ = ["Access", "follow_up_of"]


# A user in no tenant is refused every request; the same read (a panel polling) is recorded once in this long.
STRANGER_READ_REPEAT_S = 300.0
_STRANGERS_KEPT = 10_000


class Access:
    def __init__(self, repository: Repository, clock=time.monotonic):
        self.repository = repository
        self._clock = clock
        self._strangers_told: dict[tuple[str, str], float] = {}  # (user, read action) -> when it was last recorded

    @staticmethod
    def may_see(identity: Identity, row: WorkloadRow) -> bool:
        if identity.own_work_only:
            return (row.user == identity.user and row.tenant == identity.tenant.name
                    and identity.workload in (row.id, follow_up_of(row)))
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
                      Message(N_("workload {workload} is not {user}'s own workload {credential} nor one of its "
                                 "follow-up jobs: a workload's credential reaches only those"),
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

    def require_person(self, identity: Identity, action: str, target: str) -> None:
        """Refuse a workload credential what would outlive its workload: a placement, a started mark or an
        activity report for one (each would mint or keep alive a credential that holds quota), or a service."""
        if not identity.own_work_only:
            return
        reason = Message(N_("{action} is not for a workload's credential: what workload {workload} creates must end "
                            "with it; do it as {user}, from their own server or the CLI"),
                         action=action, workload=identity.workload, user=identity.user)
        self.repository.record_audit(actor=identity.user, action=action, target=target, outcome="denied",
                                     detail={"reason": str(reason), "tenant": identity.tenant.name,
                                             **_credential(identity)})
        raise Forbidden(reason, reason="credential-scope")

    def require_platform_admin(self, identity: Identity, action: str, target: str) -> None:
        if not identity.is_platform_admin:
            needs = (N_("{action} needs the platform-admin role; you are {role} (a workload credential never "
                        "carries an admin role)") if identity.own_work_only else
                     N_("{action} needs the platform-admin role; you are {role}"))
            self.deny(identity, action, target, Message(needs, action=action, role=identity.role.value))
        self.record(identity, action, target)

    def record_stranger(self, user: str, action: str, target: str, refusal: Forbidden, *, read: bool) -> None:
        """Audit the refusal of a user who belongs to no tenant (there is no identity to deny): each change they
        attempt, and each read once per ``STRANGER_READ_REPEAT_S``, so a polling panel does not flood the log."""
        if read:
            now, key = self._clock(), (user, action)
            if now - self._strangers_told.get(key, float("-inf")) < STRANGER_READ_REPEAT_S:
                return
            if len(self._strangers_told) >= _STRANGERS_KEPT:  # forget the expired, so many paths cannot grow it
                self._strangers_told = {k: at for k, at in self._strangers_told.items()
                                        if now - at < STRANGER_READ_REPEAT_S}
            self._strangers_told[key] = now
        self.repository.record_audit(actor=user, action=action, target=target, outcome="denied",
                                     detail={"reason": refusal.message, "reason_code": refusal.detail.get("reason"),
                                             "tenant": None})

    def deny(self, identity: Identity, action: str, target: str, reason: str | Message) -> None:
        self.repository.record_audit(actor=identity.user, action=action, target=target, outcome="denied",
                                     detail={"reason": str(reason), "tenant": identity.tenant.name, **_credential(identity)})
        raise Forbidden(reason)

    def record(self, identity: Identity, action: str, target: str, detail: dict[str, Any] | None = None) -> None:
        self.repository.record_audit(actor=identity.user, action=action, target=target, outcome="allowed",
                                     detail={"tenant": identity.tenant.name, "role": identity.role.value,
                                             **_credential(identity), **(detail or {})})


def follow_up_of(row: WorkloadRow) -> int | None:
    """The workload whose credential submitted ``row`` (it ends when that one does), or None."""
    parent = (row.spec or {}).get("parent")
    return parent if isinstance(parent, int) else None


def _credential(identity: Identity) -> dict[str, int]:
    """The audit names the workload whose credential acted, so its kernel or job is not mistaken for its user."""
    return {"credential_of": identity.workload} if identity.workload is not None else {}
