"""The topology benchmark's presets and replay: emulated nodes declared in YAML reach the engine with
their link domains and NUMA nodes, and the aware engine keeps multi-device jobs inside one domain."""

from __future__ import annotations

import pytest

from jupyter_hetero.capability import NodeCapability
from jupyter_hetero.engine.topology import domain_of
from jupyter_hetero.engine_inputs import NodeView, node_state
from jupyter_hetero.sim.topology_study import PRESETS, build_nodes, run_topology


@pytest.mark.parametrize(
    ("preset", "domains", "numa"),
    [
        pytest.param("nvswitch-8", [8], [4, 4], id="8-GPU NVSwitch"),
        pytest.param("nvlink-2x4", [4, 4], [4, 4], id="2x4 NVLink"),
        pytest.param("ascend-910b-hccs", [8], [2, 2, 2, 2], id="Ascend 910B HCCS mesh"),
        pytest.param("mi300x-xgmi", [8], [4, 4], id="MI300X xGMI hive"),
        pytest.param("ascend-910a-2x4", [4, 4], [2, 2, 2, 2], id="Ascend 910A two HCCS rings"),
    ],
)
def test_each_preset_reaches_the_engine_with_its_topology(preset, domains, numa):
    [node] = build_nodes(preset, 1)
    assert _group_sizes([domain_of(d) for d in node.devices]) == domains
    assert _group_sizes([d.numa for d in node.devices]) == numa


def _group_sizes(keys: list[int]) -> list[int]:
    return [keys.count(key) for key in dict.fromkeys(keys)]


def test_a_node_without_locality_has_every_device_in_a_domain_of_its_own():
    capability = NodeCapability.model_validate({
        "name": "plain", "cpu_milli": 8000, "memory_mib": 8192,
        "accelerator": {"vendor": "nvidia", "model": "T4", "count": 3, "memory_mib": 16384,
                        "devices": [{"index": 1, "numa_node": 1}]},
    })
    state = node_state(NodeView(capability, flavor="t4", state="ready", first_seen=0.0, last_seen=0.0))
    assert [(d.link, d.numa) for d in state.devices] == [(-1, -1), (-1, 1), (-1, -1)]
    assert len({domain_of(d) for d in state.devices}) == 3


def test_the_replay_keeps_more_multi_device_jobs_in_one_island_when_aware():
    # A small seeded stream, heavy in multi-device jobs so that the islands of a 2x4 node fill up.
    samples = [(1, 1800.0), (1, 3600.0), (2, 2400.0), (4, 3000.0), (4, 1200.0), (8, 600.0)]
    out = run_topology(samples, presets=("nvlink-2x4", "nvswitch-8"), nodes=3, jobs=120, load=1.0, seeds=(1,))
    two_by_four, nvswitch = out["presets"]["nvlink-2x4"], out["presets"]["nvswitch-8"]
    aware, blind = two_by_four["aware"], two_by_four["blind"]
    assert aware["single_domain_share"] > blind["single_domain_share"]
    for size in ("2", "4"):
        assert aware["single_domain_share_by_size"][size] > blind["single_domain_share_by_size"][size]
    assert two_by_four["aware"]["single_domain_share_by_size"]["8"] == 0.0  # never possible on two islands of 4
    assert nvswitch["aware"]["single_domain_share"] == nvswitch["blind"]["single_domain_share"] == 1.0
    assert nvswitch["aware"]["single_numa_share"] > nvswitch["blind"]["single_numa_share"]
    for result in (two_by_four, nvswitch):
        assert result["aware"]["unstarted"] == result["blind"]["unstarted"] == 0
        assert 0 < result["aware"]["allocation_rate"] <= 1


def test_every_preset_is_in_the_file():
    for preset in PRESETS:
        assert build_nodes(preset, 1)[0].devices
