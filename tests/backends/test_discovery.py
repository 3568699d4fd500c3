"""Local discovery: the real machine and emulated nodes (each vendor's parsers: test_vendors.py)."""

from __future__ import annotations

import psutil
import pytest

from jupyter_hetero.backends.local.discovery import (
    EmulatedNodesError,
    discover_local_node,
    load_emulated_nodes,
)


def test_the_real_machine_is_discovered():
    node = discover_local_node("here")
    assert node.name == "here"
    assert node.cpu_milli == psutil.cpu_count(logical=True) * 1000
    assert node.memory_mib == psutil.virtual_memory().total // (1024 * 1024)
    assert node.emulated is False
    assert node.labels["kubernetes.io/hostname"] == "here"


def test_emulated_nodes_with_replicas_are_flagged(tmp_path):
    path = tmp_path / "nodes.yaml"
    path.write_text(
        "nodes:\n  - name: g\n    replicas: 3\n    cpu: 8\n    memory: 32Gi\n"
        "    accelerator: {vendor: nvidia, model: T4, count: 1, memory_mib: 16Gi}\n",
        encoding="utf-8",
    )
    nodes = load_emulated_nodes(path)
    assert [n.name for n in nodes] == ["g-0", "g-1", "g-2"]
    assert all(n.emulated and n.source == "emulated" for n in nodes)
    assert nodes[0].cpu_milli == 8000 and nodes[0].accelerator.memory_mib == 16384


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        pytest.param([{"name": "a", "cpu": 1, "memory": "1Gi"}, {"name": "a", "cpu": 1, "memory": "1Gi"}], "used twice", id="duplicate"),
        pytest.param([{"name": "a", "cpu": 1, "memory": "huge"}], "nodes[0].memory_mib", id="bad memory"),
        pytest.param({"machines": []}, "expected a list", id="wrong shape"),
    ],
)
def test_bad_emulated_nodes_are_rejected_with_the_entry_named(entries, message):
    with pytest.raises(EmulatedNodesError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_emulated_nodes(entries)


def test_an_emulated_topology_shorthand_becomes_per_device_locality():
    [node] = load_emulated_nodes([{
        "name": "g", "cpu": 96, "memory": "1Ti",
        "accelerator": {"vendor": "nvidia", "model": "A100", "count": 8, "memory_mib": "80Gi", "interconnect": "nvlink",
                        "topology": {"link_domains": [4, 4], "numa_nodes": [4, 4]}},
    }])
    assert [(d.index, d.link_domain, d.numa_node) for d in node.accelerator.devices] == [
        (i, f"nvlink-{i // 4}", i // 4) for i in range(8)
    ]


@pytest.mark.parametrize(
    ("topology", "extra", "message"),
    [
        pytest.param({"link_domains": [4, 3]}, {}, "adding up to count", id="sizes short of the count"),
        pytest.param({"link_domains": [8], "rings": [2]}, {}, "expected a mapping", id="unknown key"),
        pytest.param({"numa_nodes": [8]}, {"devices": [{"index": 0}]}, "not both", id="topology and devices"),
    ],
)
def test_a_bad_topology_shorthand_is_rejected_with_the_entry_named(topology, extra, message):
    accelerator = {"vendor": "nvidia", "model": "A100", "count": 8, "memory_mib": "80Gi", "topology": topology, **extra}
    with pytest.raises(EmulatedNodesError, match=r"nodes\[0\]\.accelerator\.topology: .*" + message):
        load_emulated_nodes([{"name": "g", "cpu": 8, "memory": "8Gi", "accelerator": accelerator}])
