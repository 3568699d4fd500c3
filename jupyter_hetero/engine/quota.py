"""Tenant quotas per flavor with Kueue's semantics: nominal, borrowing limit, lending limit, cohorts.

Each tenant owns a nominal quota per flavor. The part of it above its lending limit is
guaranteed to it alone; the rest goes into its cohort's pool, from which any member may borrow
(up to its own borrowing limit) while the owner does not use it. A tenant may always use its
nominal quota: if borrowers hold its share, it reclaims it by preemption.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from .model import UNLIMITED, ZERO, Res, TenantQuota

__all__ = ["QuotaBook", "QuotaCheck", "QuotaVerdict"]

_NAMES = ("cpu", "memory", "devices")


class QuotaVerdict(IntEnum):
    """Ordered outcomes of a quota check; larger is closer to admission."""

    NO_QUOTA = 0  # the tenant has no quota for this flavor at all
    OVER_LIMIT = 1  # beyond nominal + borrowing limit (or borrowing not allowed now)
    COHORT_FULL = 2  # within the tenant's own limits, but other tenants borrowed the cohort's pool
    FITS = 3


@dataclass(frozen=True, slots=True)
class QuotaCheck:
    verdict: QuotaVerdict
    borrowing: bool = False
    resource: str = ""  # the first resource that blocks
    used: int = 0
    limit: int = 0
    borrow_limit: int | None = None

    @property
    def ok(self) -> bool:
        return self.verdict == QuotaVerdict.FITS


def _vmax0(a: Res) -> Res:
    return Res(max(0, a.cpu), max(0, a.mem), max(0, a.dev))


class QuotaBook:
    """Quota use per (tenant, flavor) and per cohort pool; charged as the cycle admits."""

    def __init__(self, quotas: dict[str, TenantQuota], usage: dict[tuple[str, str], Res] | None = None):
        self.quotas = quotas
        self.usage: dict[tuple[str, str], Res] = dict(usage or {})
        self._members: dict[str, list[str]] = {}
        for name in sorted(quotas):
            self._members.setdefault(quotas[name].cohort, []).append(name)
        self._guaranteed_cache: dict[tuple[str, str], Res] = {}
        self._pool: dict[tuple[str, str], Res] = {}
        self._pool_used: dict[tuple[str, str], Res] = {}
        for cohort, members in self._members.items():
            flavors = sorted({f for m in members for f in quotas[m].nominal})
            for flavor in flavors:
                pool = ZERO
                used = ZERO
                for member in members:
                    pool = pool + self._lendable(member, flavor)
                    used = used + self._from_pool(member, flavor, self.used(member, flavor))
                self._pool[(cohort, flavor)] = pool
                self._pool_used[(cohort, flavor)] = used

    def used(self, tenant: str, flavor: str) -> Res:
        return self.usage.get((tenant, flavor), ZERO)

    def nominal(self, tenant: str, flavor: str) -> Res:
        return self.quotas[tenant].nominal.get(flavor, ZERO) if tenant in self.quotas else ZERO

    def _guaranteed(self, tenant: str, flavor: str) -> Res:
        key = (tenant, flavor)
        cached = self._guaranteed_cache.get(key)
        if cached is None:
            lending = self.quotas[tenant].lending_limit.get(flavor) if tenant in self.quotas else None
            cached = ZERO if lending is None else _vmax0(self.nominal(tenant, flavor) - lending)
            self._guaranteed_cache[key] = cached
        return cached

    def _lendable(self, tenant: str, flavor: str) -> Res:
        return self.nominal(tenant, flavor) - self._guaranteed(tenant, flavor)

    def _from_pool(self, tenant: str, flavor: str, used: Res) -> Res:
        guaranteed = self._guaranteed(tenant, flavor)
        if guaranteed is ZERO:
            return _vmax0(used)
        return _vmax0(used - guaranteed)

    def limit(self, tenant: str, flavor: str) -> Res:
        """Nominal plus borrowing limit: the most this tenant may ever hold of the flavor."""
        borrowing = self.quotas[tenant].borrowing_limit.get(flavor)
        return UNLIMITED if borrowing is None else self.nominal(tenant, flavor) + borrowing

    def ceiling(self, tenant: str, flavor: str, *, may_borrow: bool = True) -> Res:
        """The most the tenant could ever hold of the flavor, however long it waits: its nominal quota, or with
        borrowing what it keeps to itself plus its cohort's whole pool, within its borrowing limit."""
        nominal = self.nominal(tenant, flavor)
        if not may_borrow or tenant not in self.quotas:
            return nominal
        pool = self._pool.get((self.quotas[tenant].cohort, flavor), ZERO)
        reach = self._guaranteed(tenant, flavor) + pool
        return Res(*(max(n, min(r, cap)) for n, r, cap in zip(nominal, reach, self.limit(tenant, flavor))))

    def beyond_ceiling(self, tenant: str, flavor: str, need: Res, *, may_borrow: bool = True) -> str | None:
        """The first resource of ``need`` that the tenant could never hold of the flavor (see :meth:`ceiling`)."""
        ceiling = self.ceiling(tenant, flavor, may_borrow=may_borrow)
        return next((name for name, r, cap in zip(_NAMES, need, ceiling) if r > cap), None)

    def check(self, tenant: str, flavor: str, need: Res, *, may_borrow: bool = True) -> QuotaCheck:
        """Whether ``need`` more of ``flavor`` fits the tenant's quota now."""
        quota = self.quotas.get(tenant)
        if quota is None or flavor not in quota.nominal:
            return QuotaCheck(QuotaVerdict.NO_QUOTA)
        used, nominal = self.used(tenant, flavor), self.nominal(tenant, flavor)
        after = used + need
        borrowing = any(a > n for a, n, r in zip(after, nominal, need) if r > 0)
        limit = self.limit(tenant, flavor) if may_borrow else nominal
        for name, a, cap, r, u in zip(_NAMES, after, limit, need, used):
            if r > 0 and a > cap:
                borrow = quota.borrowing_limit.get(flavor)
                borrow_limit = 0 if not may_borrow else None if borrow is None else getattr(borrow, _attr(name))
                return QuotaCheck(QuotaVerdict.OVER_LIMIT, borrowing, name, u, getattr(nominal, _attr(name)), borrow_limit)
        key = (quota.cohort, flavor)
        delta = self._from_pool(tenant, flavor, after) - self._from_pool(tenant, flavor, used)
        pool_after = self._pool_used[key] + delta
        for name, a, cap, r in zip(_NAMES, pool_after, self._pool[key], need):
            if r > 0 and a > cap:
                return QuotaCheck(QuotaVerdict.COHORT_FULL, borrowing, name, a - r, cap)
        return QuotaCheck(QuotaVerdict.FITS, borrowing)

    def charge(self, tenant: str, flavor: str, amount: Res) -> None:
        self._move(tenant, flavor, amount)

    def refund(self, tenant: str, flavor: str, amount: Res) -> None:
        self._move(tenant, flavor, Res(-amount.cpu, -amount.mem, -amount.dev))

    def _move(self, tenant: str, flavor: str, amount: Res) -> None:
        before = self.used(tenant, flavor)
        after = before + amount
        self.usage[(tenant, flavor)] = after
        quota = self.quotas.get(tenant)
        if quota is not None and (quota.cohort, flavor) in self._pool_used:
            key = (quota.cohort, flavor)
            self._pool_used[key] = (
                self._pool_used[key] + self._from_pool(tenant, flavor, after) - self._from_pool(tenant, flavor, before)
            )

    def borrowed(self, tenant: str, flavor: str) -> bool:
        """Whether the tenant holds more than its nominal quota of the flavor."""
        return any(u > n for u, n in zip(self.used(tenant, flavor), self.nominal(tenant, flavor)))


def _attr(name: str) -> str:
    return {"cpu": "cpu", "memory": "mem", "devices": "dev"}[name]
