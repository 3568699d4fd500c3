"""Topology-aware choice of whole devices: the tightest link domain that holds them, one NUMA node inside
it where it can; else the fewest domains; the lowest index among equals."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_hetero.engine import Constraints, Device, Engine, NodeState, Request
from jupyter_hetero.engine.capacity import Cluster
from jupyter_hetero.engine.scoring import fragmentation_scorer
from jupyter_hetero.engine.topology import choose_devices, domain_of, one_domain_holds

from ..builders import GIB, job, node, queues, snapshot, tenant

# The presets of jupyter_hetero/sim/topologies.yaml: (link domain sizes, NUMA node sizes) over 8 devices.
PRESETS = {
    "nvswitch-8": ([8], [4, 4]),
    "nvlink-2x4": ([4, 4], [4, 4]),
    "ascend-910b-hccs": ([8], [2, 2, 2, 2]),
    "mi300x-xgmi": ([8], [4, 4]),
    "ascend-910a-2x4": ([4, 4], [2, 2, 2, 2]),
    "pcie-only": (None, None),
}


def devices(preset: str, busy: tuple[int, ...] = ()) -> list[Device]:
    links, numa = PRESETS[preset]
    built = node("n").gpus(8).topology(links, numa).build().devices
    for index in busy:
        built[index].free_milli = 0
    return built


@pytest.mark.parametrize(
    ("preset", "busy", "k", "expected"),
    [
        pytest.param("nvswitch-8", (), 4, [0, 1, 2, 3], id="NVSwitch: four on one NUMA node"),
        pytest.param("nvswitch-8", (0,), 4, [4, 5, 6, 7], id="NVSwitch: the NUMA node that still holds four"),
        pytest.param("nvswitch-8", (0, 4), 4, [1, 2, 3, 5], id="NVSwitch: one domain, fewest NUMA nodes"),
        pytest.param("nvswitch-8", (0, 1, 2), 1, [3], id="NVSwitch: one device from the fullest NUMA node"),
        pytest.param("nvlink-2x4", (0, 1), 4, [4, 5, 6, 7], id="2x4: four in the untouched island"),
        pytest.param("nvlink-2x4", (0, 1, 4), 2, [2, 3], id="2x4: two in the tighter island"),
        pytest.param("nvlink-2x4", (0, 4), 4, [1, 2, 3, 5], id="2x4: no island holds four: three and one"),
        pytest.param("nvlink-2x4", (), 8, list(range(8)), id="2x4: the whole node"),
        pytest.param("ascend-910b-hccs", (0,), 2, [2, 3], id="910B: a NUMA pair, not the broken one"),
        pytest.param("ascend-910b-hccs", (), 4, [0, 1, 2, 3], id="910B: two NUMA pairs inside the mesh"),
        pytest.param("ascend-910b-hccs", (1, 3, 5), 5, [0, 2, 4, 6, 7], id="910B: five across the mesh"),
        pytest.param("mi300x-xgmi", (), 8, list(range(8)), id="MI300X: the whole hive"),
        pytest.param("mi300x-xgmi", (5,), 3, [4, 6, 7], id="MI300X: the NUMA node with just three left"),
        pytest.param("ascend-910a-2x4", (0,), 4, [4, 5, 6, 7], id="910A: the untouched HCCS ring"),
        pytest.param("ascend-910a-2x4", (0,), 1, [1], id="910A: the lone chip of a broken pair"),
        pytest.param("ascend-910a-2x4", (0, 2), 2, [1, 3], id="910A: across NUMA in the broken ring, not a pair of the whole one"),
        pytest.param("ascend-910a-2x4", (0, 2, 4, 5), 2, [6, 7], id="910A: of two rings as tight, the one with a NUMA pair"),
        pytest.param("pcie-only", (1,), 3, [0, 2, 3], id="no topology: the lowest free indexes, as blind"),
    ],
)
def test_devices_are_chosen_closest_first(preset, busy, k, expected):
    assert [d.index for d in choose_devices(devices(preset, busy), k)] == expected


@pytest.mark.parametrize(
    ("preset", "busy", "k", "expected"),
    [
        pytest.param("nvlink-2x4", (), 4, True, id="2x4 empty: four fit an island"),
        pytest.param("nvlink-2x4", (0, 4), 4, False, id="2x4: three and three"),
        pytest.param("nvswitch-8", (0, 4), 4, True, id="NVSwitch: across NUMA"),
        pytest.param("ascend-910a-2x4", (0, 2), 2, True, id="910A: the broken ring, across NUMA"),
        pytest.param("pcie-only", (), 2, False, id="no topology: every device its own domain"),
        pytest.param("pcie-only", (), 1, True, id="one device is always close to itself"),
    ],
)
def test_whether_one_domain_holds_the_request(preset, busy, k, expected):
    assert one_domain_holds(devices(preset, busy), k) is expected


# -- properties ------------------------------------------------------------------------------------

@st.composite
def nodes_and_requests(draw):
    n = draw(st.integers(1, 16))
    links = draw(st.lists(st.integers(-1, 3), min_size=n, max_size=n))
    numa = draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n))
    free = draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(any))
    built = [Device(i, 1000 if is_free else 0, link=link, numa=numa_node)
             for i, (link, numa_node, is_free) in enumerate(zip(links, numa, free))]
    k = draw(st.integers(1, sum(free)))
    return built, k


def _domains(chosen: list[Device]) -> int:
    return len({domain_of(d) for d in chosen})


@settings(max_examples=300, deadline=None)
@given(nodes_and_requests())
def test_the_choice_is_exactly_k_free_distinct_devices(case):
    built, k = case
    chosen = choose_devices(built, k)
    assert len(chosen) == k
    assert len({d.index for d in chosen}) == k
    assert all(d.free_milli == 1000 for d in chosen)
    assert [d.index for d in chosen] == sorted(d.index for d in chosen)


@settings(max_examples=300, deadline=None)
@given(nodes_and_requests())
def test_the_choice_is_as_close_as_the_node_allows(case):
    built, k = case
    chosen = choose_devices(built, k)
    free = [d for d in built if d.free_milli == 1000]
    per_domain: dict[int, int] = {}
    for d in free:
        per_domain[domain_of(d)] = per_domain.get(domain_of(d), 0) + 1
    holding = [size for size in per_domain.values() if size >= k]
    if holding:  # the tightest domain that holds k; one NUMA node where a domain that tight allows it
        assert _domains(chosen) == 1 and per_domain[domain_of(chosen[0])] == min(holding)
        tightest = [[d for d in free if domain_of(d) == domain] for domain, size in per_domain.items()
                    if size == min(holding)]
        if any(max(Counter(d.numa for d in domain).values()) >= k for domain in tightest):
            assert len({d.numa for d in chosen}) == 1
    # The fewest domains that can hold k: the largest ones, taken until they do.
    sizes, fewest, held = sorted(per_domain.values(), reverse=True), 0, 0
    while held < k:
        held, fewest = held + sizes[fewest], fewest + 1
    assert _domains(chosen) == fewest
    assert _domains(chosen) <= _domains(free[:k])  # never worse than the lowest free indexes (blind)
    assert one_domain_holds(built, k) is (fewest == 1)  # what ranking nodes asks, without making the choice


@settings(max_examples=100, deadline=None)
@given(nodes_and_requests())
def test_the_choice_is_deterministic(case):
    built, k = case
    copy = [Device(d.index, d.free_milli, link=d.link, numa=d.numa) for d in built]
    assert [d.index for d in choose_devices(built, k)] == [d.index for d in choose_devices(copy, k)]


# -- in the engine ---------------------------------------------------------------------------------

TEAM = tenant("vision").quota("a100-80g", devices=64)


@pytest.mark.parametrize(("aware", "expected"), [(True, (4, 5, 6, 7)), (False, (2, 3, 4, 5))], ids=["aware", "blind"])
def test_four_devices_land_in_the_island_a_two_device_job_left_whole(aware, expected):
    two_by_four = node("a1").gpus(8).topology([4, 4], [4, 4])
    snap = snapshot(nodes=[two_by_four], running=[job(1).gpus(2).on("a1", 0, 1)], pending=[job(2).gpus(4)],
                    tenants=[TEAM])
    [admission] = Engine(topology=aware).cycle(snap).admissions
    assert tuple(index for index, _milli, _mem in admission.placement.slots[0].devices) == expected


def test_on_two_rings_of_two_numa_pairs_a_two_device_job_leaves_the_whole_ring_to_a_four_device_one():
    # 910A: rings 0-3 and 4-7, NUMA pairs 0-1, 2-3, 4-5, 6-7. Ring 0-3 has 1 and 3 free, one in each pair.
    # A NUMA pair of the whole ring would be closer for the two-device job, but the four-device job
    # behind it would then find no ring whole.
    ascend = node("n1").gpus(8).topology([4, 4], [2, 2, 2, 2])
    snap = snapshot(nodes=[ascend], running=[job(1).gpus(1).on("n1", 0), job(2).gpus(1).on("n1", 2)],
                    pending=[job(3).gpus(2), job(4).gpus(4)], tenants=[TEAM])
    placed = {a.workload: _where(a.placement.slots[0]) for a in Engine().cycle(snap).admissions}
    assert placed == {3: ("n1", [1, 3]), 4: ("n1", [4, 5, 6, 7])}


TYPICAL = [Request(cpu=1000, mem=GIB, devices=k) for k in (1, 2, 4, 8)]  # the fragmentation score's request mix


def _where(slot) -> tuple[str, list[int]]:
    """A slot's node and device indexes."""
    return slot.node, [index for index, _milli, _mem in slot.devices]


def _only_free(built: NodeState, indexes: tuple[int, ...]) -> NodeState:
    """``built`` with only the devices at ``indexes`` free, the rest held whole."""
    for device in built.devices:
        device.free_milli = 1000 if device.index in indexes else 0
    return built


def test_a_node_whose_island_holds_the_request_beats_one_that_splits_it():
    # Both nodes are in use with two devices free: a-split's straddle its islands, b-island's share one.
    split = _only_free(node("a-split").gpus(8).topology([4, 4], [4, 4]).build(), (0, 4))
    island = _only_free(node("b-island").gpus(8).topology([4, 4], [4, 4]).build(), (6, 7))
    request = Request(cpu=1000, mem=GIB, devices=2)
    places = {}
    for aware in (True, False):
        cluster = Cluster([split.clone(), island.clone()], node_scorer=fragmentation_scorer(TYPICAL), topology=aware)
        [slot] = cluster.place("a100-80g", request, Constraints())
        places[aware] = _where(slot)
    assert places == {True: ("b-island", [6, 7]), False: ("a-split", [0, 4])}


def test_an_idle_node_is_not_broken_up_for_locality_while_a_fuller_one_has_room():
    # An idle node is kept whole for a request only a whole node holds; the fuller node takes the two devices
    # although they straddle its islands (the simulated Philly replay: 68.8% allocated against 67.1% when idle nodes
    # ranked first for locality, and as many jobs inside one island; docs/benchmarks.md).
    split = _only_free(node("a-split").gpus(8).topology([4, 4], [4, 4]).build(), (0, 4))
    idle = node("b-idle").gpus(8).topology([4, 4], [4, 4]).build()
    cluster = Cluster([split, idle], node_scorer=fragmentation_scorer(TYPICAL), topology=True)
    [slot] = cluster.place("a100-80g", Request(cpu=1000, mem=GIB, devices=2), Constraints())
    assert _where(slot) == ("a-split", [0, 4])
    # Once only idle nodes have room, the devices come from one island of one of them.
    [slot] = cluster.place("a100-80g", Request(cpu=1000, mem=GIB, devices=2), Constraints())
    assert _where(slot) == ("b-idle", [0, 1])


def test_nodes_are_not_ranked_by_numa_so_a_fuller_node_in_one_domain_is_filled_first():
    # One NVSwitch domain, two NUMA nodes of four: "a-full" has one free device on each NUMA node, "b-empty" all
    # eight. Two devices fit one domain on both; the fuller node takes them, across its NUMA nodes, and the empty
    # node stays whole for an eight-device job.
    full = _only_free(node("a-full").gpus(8).topology([8], [4, 4]).build(), (3, 4))
    empty = node("b-empty").gpus(8).topology([8], [4, 4]).build()
    cluster = Cluster([full, empty], node_scorer=fragmentation_scorer(TYPICAL), topology=True)
    [slot] = cluster.place("a100-80g", Request(cpu=1000, mem=GIB, devices=2), Constraints())
    assert _where(slot) == ("a-full", [3, 4])
    # On the node, devices of one NUMA node still come first where they can.
    [slot] = cluster.place("a100-80g", Request(cpu=1000, mem=GIB, devices=2), Constraints())
    assert _where(slot) == ("b-empty", [0, 1])


def test_without_link_domains_aware_and_blind_place_alike():
    nodes = [node(f"n{i}").gpus(8) for i in range(3)]
    pending = [job(i).gpus(k) for i, k in enumerate((1, 2, 4, 1, 8, 2, 4), start=1)]
    snap = snapshot(nodes=nodes, pending=pending, tenants=[TEAM], queue_policies=queues())
    aware, blind = (Engine(topology=flag).cycle(snap).admissions for flag in (True, False))
    assert aware == blind
