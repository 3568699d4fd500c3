"""Tenants: teams with members, roles and a quota per flavor."""

from __future__ import annotations

from enum import Enum

from pydantic import Field, model_validator

from ..units import CpuMilli, MemoryMiB, friendly_quantities
from .base import CatalogModel, Localized

__all__ = ["FlavorQuota", "Resources", "Role", "Tenant"]


class Resources(CatalogModel):
    """An amount of capacity: CPU, memory and accelerator devices (in milli-devices)."""

    cpu_milli: CpuMilli = Field(default=0, ge=0)
    memory_mib: MemoryMiB = Field(default=0, ge=0)
    device_milli: int = Field(default=0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _devices_shorthand(cls, data):
        # `cpu: 8` and `devices: 2` read better in a catalog than `cpu_milli: 8000`, `device_milli: 2000`.
        data = friendly_quantities(data)
        if isinstance(data, dict) and "devices" in data:
            data = dict(data)
            devices = data.pop("devices")
            if "device_milli" in data:
                raise ValueError("give either devices or device_milli, not both")
            if isinstance(devices, bool) or not isinstance(devices, (int, float)) or devices < 0:
                raise ValueError("devices must be a non-negative number")
            data["device_milli"] = int(round(devices * 1000))
        return data


class FlavorQuota(CatalogModel):
    """A tenant's share of one flavor, with Kueue's borrowing and lending limits."""

    nominal: Resources
    borrowing_limit: Resources | None = Field(default=None, description="None means unlimited borrowing.")
    lending_limit: Resources | None = Field(default=None, description="None means all unused quota may be lent.")


class Role(str, Enum):
    MEMBER = "member"
    TENANT_ADMIN = "tenant-admin"
    PLATFORM_ADMIN = "platform-admin"


class Tenant(CatalogModel):
    """A team: members, quota per flavor, allowed queues and templates, cost centre."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    display: Localized
    users: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    admins: list[str] = Field(default_factory=list, description="Users with the tenant-admin role.")
    quotas: dict[str, FlavorQuota] = Field(default_factory=dict)
    queues: list[str] = Field(default_factory=lambda: ["*"])
    templates: list[str] = Field(default_factory=lambda: ["*"])
    cohort: str = "default"
    weight: float = Field(default=1, gt=0, description="Fair-share weight inside a queue.")
    cost_centre: str | None = None

    def allows_queue(self, queue: str) -> bool:
        return "*" in self.queues or queue in self.queues

    def allows_template(self, template: str) -> bool:
        return "*" in self.templates or template in self.templates
