"""HeteroApp: the jupyter-server extension. Traits and wiring only; behaviour lives in services."""

from __future__ import annotations

import time
from pathlib import Path

from jupyter_core.paths import jupyter_data_dir
from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Dict, List, Unicode, default

from .backends.local import discover_local_node, load_emulated_nodes
from .capability import NodeCapability
from .catalog import DEFAULT_CATALOG_PATH, load_catalog
from .handlers import default_handlers
from .services.inventory import Inventory
from .services.platform import Platform
from .store import Repository

__all__ = ["HeteroApp"]


class HeteroApp(ExtensionApp):
    """Self-service heterogeneous compute: templates, queues, quotas and a server-side scheduler."""

    name = "jupyter_hetero"
    load_other_extensions = True

    catalog_file = Unicode(
        str(DEFAULT_CATALOG_PATH),
        config=True,
        help="Path of the catalog YAML (flavors, templates, queues, tenants). Defaults to the shipped catalog.",
    )
    db_url = Unicode(
        config=True,
        help="SQLAlchemy URL of the store. Defaults to a SQLite file under the Jupyter data dir; "
        "use postgresql+psycopg://... for a shared database.",
    )
    discover_local = Bool(
        True, config=True, help="Whether this machine is discovered (psutil, NVML, npu-smi, rocm-smi) as a node."
    )
    local_node_name = Unicode(
        "", config=True, help="Name of this machine as a node; empty means its hostname."
    )
    emulated_nodes_file = Unicode(
        "", config=True, help="YAML file of emulated nodes for demos and tests (flagged emulated everywhere)."
    )
    emulated_nodes = List(
        Dict(), config=True, help="Emulated nodes declared inline, in the same shape as emulated_nodes_file entries."
    )
    platform_admins = List(
        Unicode(), config=True, help="Users who are platform admins in addition to the catalog's platform_admins."
    )

    @default("db_url")
    def _default_db_url(self) -> str:
        return f"sqlite:///{Path(jupyter_data_dir()) / 'hetero' / 'hetero.sqlite'}"

    def initialize_settings(self) -> None:
        catalog = load_catalog(self.catalog_file)
        repository = Repository(self.db_url, clock=time.time)
        inventory = Inventory(catalog, repository)
        inventory.refresh(self._node_capabilities())
        self.settings["hetero_platform"] = Platform(
            catalog=catalog,
            repository=repository,
            inventory=inventory,
            clock=time.time,
            platform_admins=frozenset(self.platform_admins),
        )
        self.log.info(
            "jupyter-hetero: catalog=%s nodes=%d db=%s", self.catalog_file, len(inventory.nodes()), repository.engine.url
        )

    def _node_capabilities(self) -> list[NodeCapability]:
        nodes = [discover_local_node(self.local_node_name or None)] if self.discover_local else []
        if self.emulated_nodes_file:
            nodes += load_emulated_nodes(self.emulated_nodes_file)
        if self.emulated_nodes:
            nodes += load_emulated_nodes(list(self.emulated_nodes))
        return nodes

    def initialize_handlers(self) -> None:
        self.handlers.extend(default_handlers)

    async def stop_extension(self) -> None:
        platform = self.settings.get("hetero_platform")
        if platform is not None:
            platform.repository.close()
