"""Dominant-resource fair share (DRF) between tenants, weighted, each accelerator kind its own resource.

    fair = FairShare(cpu=576_000, mem=4_718_592, devices={"ascend-910b": 64_000, "a100-80g": 8_000})
    fair.charge("npu-team", "ascend-910b", Res(8000, 8192, 8000))
    fair.share("npu-team")   # 0.125: 8 of 64 NPUs, whatever the GPUs do

Devices of different flavors are not interchangeable, so pooling them in one count would let heavy
NPU use count against a tenant's GPU share (8 of 64 NPUs is not "8 of 72 devices").
"""

from __future__ import annotations

from .model import Res

__all__ = ["FairShare"]


class FairShare:
    """What each tenant holds of CPU, memory and each flavor's devices, against the cluster's capacity."""

    def __init__(self, *, cpu: int, mem: int, devices: dict[str, int]):
        self.cpu, self.mem, self.devices = cpu, mem, devices
        self._cpu_mem: dict[str, tuple[int, int]] = {}
        self._devices: dict[str, dict[str, int]] = {}

    def charge(self, tenant: str, flavor: str, amount: Res) -> None:
        cpu, mem = self._cpu_mem.get(tenant, (0, 0))
        self._cpu_mem[tenant] = (cpu + amount.cpu, mem + amount.mem)
        if amount.dev:
            held = self._devices.setdefault(tenant, {})
            held[flavor] = held.get(flavor, 0) + amount.dev

    def share(self, tenant: str, weight: float = 1.0) -> float:
        """The largest fraction of any one resource the tenant holds, divided by its weight."""
        cpu, mem = self._cpu_mem.get(tenant, (0, 0))
        largest = max(cpu / self.cpu if self.cpu > 0 else 0.0, mem / self.mem if self.mem > 0 else 0.0)
        for flavor, held in self._devices.get(tenant, {}).items():
            capacity = self.devices.get(flavor, 0)
            if capacity > 0 and held / capacity > largest:
                largest = held / capacity
        return largest / weight
