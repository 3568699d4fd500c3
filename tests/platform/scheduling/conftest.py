"""Fixtures of the scheduling tests: a real scheduler over a SQLite file and the demo's emulated nodes."""

from __future__ import annotations

import time

import pytest

from jupyter_hetero.backends.local import load_emulated_nodes
from jupyter_hetero.backends.local.processes import LocalBackend
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.engine import Engine
from jupyter_hetero.platform.clock import Clock
from jupyter_hetero.platform.scheduling.inventory import Inventory
from jupyter_hetero.platform.scheduling.scheduler import Scheduler
from jupyter_hetero.store import Repository

from ...conftest import DEMO_NODES


@pytest.fixture
def scheduler(tmp_path):
    """A real scheduler over a SQLite file and the demo's emulated nodes; kernels need no processes."""
    catalog = load_catalog(DEFAULT_CATALOG_PATH)
    repository = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=time.time)
    inventory = Inventory(catalog, repository)
    inventory.refresh(load_emulated_nodes(DEMO_NODES))
    yield Scheduler(catalog=catalog, repository=repository, inventory=inventory, backend=LocalBackend(),
                    engine=Engine(), clock=Clock(), work_dir=tmp_path / "work")
    repository.close()
