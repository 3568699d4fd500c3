"""Fixtures of the scheduling tests: a real scheduler over a SQLite file and the demo's emulated nodes."""

from __future__ import annotations

import time

import pytest

from jupyter_hetero.backends.local import load_emulated_nodes
from jupyter_hetero.backends.local.processes import LocalBackend
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.engine import Engine
from jupyter_hetero.platform.clock import Clock
from jupyter_hetero.platform.scheduling.engine_process import EngineProcess
from jupyter_hetero.platform.scheduling.inventory import Inventory
from jupyter_hetero.platform.scheduling.scheduler import Scheduler
from jupyter_hetero.store import Repository

from ...conftest import DEMO_NODES


def real_scheduler(tmp_path, *, engine_process: bool = False):
    """A real scheduler over a SQLite file and the demo's emulated nodes, its cycles here or in an engine process;
    closed after the test (a generator for a fixture to yield from)."""
    catalog = load_catalog(DEFAULT_CATALOG_PATH)
    repository = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=time.time)
    inventory = Inventory(catalog, repository)
    inventory.refresh(load_emulated_nodes(DEMO_NODES))
    engine = Engine()
    scheduler = Scheduler(catalog=catalog, repository=repository, inventory=inventory, backend=LocalBackend(),
                          engine=engine, clock=Clock(), work_dir=tmp_path / "work",
                          engine_process=EngineProcess(engine, timeout_s=60) if engine_process else None)
    yield scheduler
    scheduler.close()
    repository.close()


@pytest.fixture
def scheduler(tmp_path):
    """A real scheduler over a SQLite file and the demo's emulated nodes; kernels need no processes."""
    yield from real_scheduler(tmp_path)
