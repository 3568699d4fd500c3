"""What other work holds of a node is taken from what the engine may place there, and stays off the record."""

from __future__ import annotations

import itertools

from jupyter_hetero.capability import Accelerator, Held, NodeCapability
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.engine_inputs import node_state
from jupyter_hetero.platform.scheduling.inventory import Inventory
from jupyter_hetero.store import Repository

A100 = NodeCapability(name="gpu-1", cpu_milli=64_000, memory_mib=512_000, source="kubernetes",
                      accelerator=Accelerator(vendor="nvidia", model="A100-SXM4-80GB", count=8, memory_mib=81920))


def test_held_capacity_is_not_free_and_its_devices_are_the_last(tmp_path):
    inventory = Inventory(load_catalog(DEFAULT_CATALOG_PATH), Repository(f"sqlite:///{tmp_path / 'h.sqlite'}", clock=itertools.count(1).__next__))
    inventory.refresh([A100], {"gpu-1": "ready"}, {"gpu-1": Held(cpu_milli=4000, memory_mib=1000, device_milli=3000)})
    state = node_state(inventory.node("gpu-1"))
    assert (state.free_cpu, state.free_mem, state.whole_free) == (60_000, 511_000, 5)
    assert [d.free_milli for d in state.devices] == [1000] * 5 + [0] * 3
    assert inventory.node("gpu-1").to_json()["held_by_others"] == {"cpu_milli": 4000, "memory_mib": 1000, "devices": 3}


def test_a_change_in_what_others_hold_writes_nothing_and_keeps_the_capability(tmp_path):
    repository = Repository(f"sqlite:///{tmp_path / 'h.sqlite'}", clock=itertools.count(1).__next__)
    inventory = Inventory(load_catalog(DEFAULT_CATALOG_PATH), repository)
    inventory.refresh([A100], {"gpu-1": "ready"})
    written = repository.nodes()[0].last_seen
    events = len(repository.events(node="gpu-1"))
    inventory.refresh([A100], {"gpu-1": "ready"}, {"gpu-1": Held(device_milli=8000)})
    assert inventory.node("gpu-1").capability.accelerator.count == 8
    assert node_state(inventory.node("gpu-1")).whole_free == 0
    assert repository.nodes()[0].last_seen == written
    assert len(repository.events(node="gpu-1")) == events
