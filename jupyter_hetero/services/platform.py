"""The platform: every service of one server, wired once and shared by the handlers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..backends.base import Backend
from ..catalog import Catalog
from ..engine import Engine
from ..store import Repository
from .access import Access
from .catalog import CatalogService
from .clock import Clock
from .identity import Identity, resolve_identity
from .inventory import Inventory
from .kernels import KernelService
from .loop import SchedulerLoop
from .scheduler import Scheduler
from .workloads import WorkloadService

__all__ = ["Platform"]


@dataclass
class Platform:
    """What the handlers reach through ``self.platform``."""

    catalog: Catalog
    repository: Repository
    inventory: Inventory
    backend: Backend
    clock: Clock  # wall time for timestamps, monotonic time for durations
    work_dir: Path
    root_dir: Path
    engine: Engine = field(default_factory=Engine)
    interval_s: float = 2.0
    mode: str = "single-server"
    platform_admins: frozenset[str] = frozenset()
    owner_is_platform_admin: bool = True
    owner: str = "owner"
    server_url: str = ""
    server_token: str = ""
    device_idle_pct: float = 5.0
    device_idle_after_s: float = 1800.0

    def __post_init__(self) -> None:
        self.catalog_service = CatalogService(self.catalog, self.repository)
        self.access = Access(self.repository)
        self.scheduler = Scheduler(
            catalog=self.catalog, repository=self.repository, inventory=self.inventory, backend=self.backend,
            engine=self.engine, clock=self.clock, work_dir=self.work_dir,
        )
        self.kernels = KernelService(
            catalog=self.catalog, repository=self.repository, scheduler=self.scheduler, clock=self.clock,
            identify=lambda user, groups: self.identify(user or self.owner, frozenset(groups), owner=user is None),
            wake=lambda: self.loop.wake(), server_url=self.server_url, server_token=self.server_token,
            device_idle_pct=self.device_idle_pct, device_idle_after_s=self.device_idle_after_s,
        )
        self.loop = SchedulerLoop(self.scheduler, self.interval_s, on_start=self.kernels.reconcile,
                                  after_tick=self.kernels.sweep)
        self.workloads = WorkloadService(
            self.catalog, self.repository, self.access, self.root_dir,
            pending_info=self.scheduler.waiting, wake=self.loop.wake,
        )

    @property
    def backend_name(self) -> str:
        return self.backend.name

    def identify(self, user: str, groups: frozenset[str] = frozenset(), *, owner: bool = False) -> Identity:
        admins = self.platform_admins | ({user} if owner and self.owner_is_platform_admin else set())
        return resolve_identity(self.catalog, user, groups, frozenset(admins))
