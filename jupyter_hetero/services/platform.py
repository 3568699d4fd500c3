"""The platform: every service of one server, wired once and shared by the handlers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..catalog import Catalog
from ..store import Repository
from .catalog import CatalogService
from .identity import Identity, resolve_identity
from .inventory import Inventory

__all__ = ["Platform"]


@dataclass
class Platform:
    """What the handlers reach through ``self.platform``."""

    catalog: Catalog
    repository: Repository
    inventory: Inventory
    clock: Callable[[], float]
    mode: str = "single-server"
    backend: str = "local"
    platform_admins: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.catalog_service = CatalogService(self.catalog, self.repository)

    def identify(self, user: str, groups: frozenset[str] = frozenset()) -> Identity:
        return resolve_identity(self.catalog, user, groups, self.platform_admins)
