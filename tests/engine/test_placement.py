"""One placement path: the engine scores every request (whole devices, fractions, CPU only) over every
eligible node, with the model-exclusivity term learnt from the inventory."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_hetero.engine import (
    Cluster,
    Constraints,
    Device,
    Engine,
    NodeState,
    Request,
)
from jupyter_hetero.engine.fragmentation import Shape, TypicalMix
from jupyter_hetero.engine.scoring import fragmentation_scorer

from ..builders import GIB, job, node, queues, snapshot, tenant

TEAM = tenant("vision").quota("a100-80g", devices=64).quota("cpu-standard", devices=0)
NO_RESERVATION = queues(inference={"reserved": {}})


def placed_on(typical: list[Request], nodes, workload) -> str:
    snap = snapshot(nodes=nodes, pending=[workload], tenants=[TEAM], queue_policies=NO_RESERVATION)
    [admission] = Engine(node_scorer=fragmentation_scorer(typical)).cycle(snap).admissions
    return admission.placement.slots[0].node


EIGHT_CORES_ONE_GPU = Request(cpu=8000, mem=GIB, devices=1)


@pytest.mark.parametrize(
    ("nodes", "workload", "expected"),
    [
        pytest.param(
            # Fewest free devices first would take a-small and strand its last GPU behind 4 free cores.
            [node("a-small").cpu(12).gpus(2), node("b-big").cpu(64).gpus(4)], job(1).cpu(8).gpus(1), "b-big",
            id="whole GPU: not the node whose last GPU it would strand",
        ),
        pytest.param(
            [node("a-tight").cpu(12).gpus(2), node("b-roomy").cpu(64).gpus(2)], job(1).cpu(8), "b-roomy",
            id="CPU only on GPU nodes: not the node whose GPUs it would strand",
        ),
        pytest.param(
            [node("a-tight").cpu(10).gpus(2), node("b-roomy").cpu(64).gpus(2)], job(1).cpu(4).fraction(500), "b-roomy",
            id="fraction: not the node whose GPUs it would strand",
        ),
    ],
)
def test_every_kind_of_request_is_scored(nodes, workload, expected):
    assert placed_on([EIGHT_CORES_ONE_GPU, Request(cpu=4000, mem=GIB, device_milli=500)], nodes, workload) == expected


def test_the_best_node_wins_even_past_the_sixteenth_that_fits():
    # Twenty identical GPU states; only the last by name has the cores to keep its other GPU usable.
    nodes = [node(f"n{i:02d}").cpu(6).gpus(2) for i in range(19)] + [node("n19").cpu(64).gpus(2)]
    typical = [Request(cpu=4000, mem=GIB, device_milli=500)]
    assert placed_on(typical, nodes, job(1).cpu(4).fraction(500)) == "n19"


def test_cpu_nodes_are_packed_fullest_first():
    nodes = [node("c1", "cpu-standard").cpu(64), node("c2", "cpu-standard").cpu(16), node("c3", "cpu-standard").cpu(32)]
    workload = job(1).cpu(8).flavors("cpu-standard")
    assert placed_on([EIGHT_CORES_ONE_GPU], nodes, workload) == "c2"


def test_a_scarce_model_is_kept_for_the_requests_that_can_only_run_there():
    from jupyter_hetero.engine.scoring import FragmentationScorer

    # One node of model X (which a third of the typical work needs), two of Y. Fragmentation alone
    # sends unconstrained work to X (its GPUs are fragments for the frequent Y-only shape); the
    # exclusivity the scorer learns from the inventory keeps X for X-only work.
    mix = TypicalMix((Shape(4000, 1000, 1), Shape(4000, 1000, 1, frozenset({"X"})), Shape(4000, 1000, 1, frozenset({"Y"}))),
                     (3, 1, 2))
    nodes = [node("x").gpus(2, model="X").build(), node("y1").gpus(8, model="Y").build(), node("y2").gpus(8, model="Y").build()]
    for policy, expected in (("fgd", "x"), ("hetero", "y1")):
        cluster = Cluster([n.clone() for n in nodes], node_scorer=FragmentationScorer(mix, policy))
        [slot] = cluster.place("a100-80g", Request(cpu=4000, mem=GIB, devices=1), Constraints())
        assert (policy, slot.node) == (policy, expected)


def test_exclusivity_comes_from_the_templates_flavors_and_the_inventory():
    from jupyter_hetero.engine.scoring import FragmentationScorer, shape_of

    # The inference shape can run only on t4; training on a100 and t4 alike.
    mix = TypicalMix((shape_of(Request(8000, GIB, devices=1), flavors=("a100-80g", "t4")),
                      shape_of(Request(4000, GIB, devices=1), flavors=("t4",))), (1, 1))
    nodes = [node("a1").gpus(8).build(), node("t1", "t4").gpus(2, 16, model="T4").build()]
    ranker = FragmentationScorer(mix).bind(nodes)
    assert ranker.exclusivity[("A100-SXM4-80GB", "a100-80g")] == 0
    assert ranker.exclusivity[("T4", "t4")] > 0.5


def test_scores_are_memoised_per_node_state_and_the_ranker_per_inventory():
    scorer = fragmentation_scorer([EIGHT_CORES_ONE_GPU])
    nodes = [node(f"a{i}").gpus(8).build() for i in range(3)]
    assert scorer.bind(nodes) is scorer.bind([n.clone() for n in nodes])
    ranked = scorer.bind(nodes).rank(nodes, EIGHT_CORES_ONE_GPU)
    assert ranked[0] == ranked[1] == ranked[2] is not None
    assert scorer.bind(nodes[:2]) is not scorer.bind(nodes)


def test_the_best_ranked_node_short_of_memory_is_passed_over_and_kept_for_smaller_requests():
    # a-small's lone GPU is a fragment for the typical two-GPU request: the best place for one GPU,
    # but it has only 64 GiB of memory.
    nodes = [node("a-small").mem(64).gpus(1).build(), node("b-big").mem(512).gpus(4).build()]
    cluster = Cluster(nodes, node_scorer=fragmentation_scorer([Request(cpu=8000, mem=GIB, devices=2)]))
    big = cluster.place("a100-80g", Request(cpu=1000, mem=128 * GIB, devices=1), Constraints())
    small = cluster.place("a100-80g", Request(cpu=1000, mem=8 * GIB, devices=1), Constraints())
    assert (big[0].node, small[0].node) == ("b-big", "a-small")


def test_same_snapshot_same_decisions_with_a_warm_or_a_cold_scorer():
    def build():
        return snapshot(
            nodes=[node(f"a{i}").cpu(16 + 16 * (i % 3)).gpus(2 + 2 * (i % 2)) for i in range(6)],
            running=[job(10).queue("batch").fraction(300).on("a0", 0, milli=300)],
            pending=[job(i).queue("batch").cpu(2 + i % 3).flavors("a100-80g").submitted(i) for i in range(1, 4)]
            + [job(i).queue("batch").cpu(4).fraction(250 * (i % 3 + 1)).submitted(i) for i in range(4, 9)]
            + [job(i).queue("batch").cpu(8).gpus(1 + i % 2).submitted(i) for i in range(9, 14)],
            tenants=[TEAM], queue_policies=NO_RESERVATION,
        )
    typical = [EIGHT_CORES_ONE_GPU, Request(cpu=4000, mem=GIB, device_milli=500), Request(cpu=2000, mem=GIB)]
    warm = fragmentation_scorer(typical)
    first = Engine(node_scorer=warm).cycle(build())
    assert len(first.admissions) == 13
    assert Engine(node_scorer=warm).cycle(build()) == first
    assert Engine(node_scorer=fragmentation_scorer(typical)).cycle(build()) == first


# ---------------------------------------------------------------- the ranking against brute force

MIX = TypicalMix((Shape(4000, 500, 1), Shape(8000, 1000, 1), Shape(16000, 1000, 4), Shape(2000)), (4, 3, 1, 2))


@st.composite
def fleets(draw):
    nodes = []
    for i in range(draw(st.integers(2, 24))):
        devices = draw(st.sampled_from([0, 1, 2, 4, 8]))
        cores = draw(st.sampled_from([8, 16, 32, 64]))
        nodes.append(NodeState(
            name=f"n{i:02d}", flavor="pool", cpu=cores * 1000, mem=cores * 8 * GIB, free_cpu=cores * 1000,
            free_mem=cores * 8 * GIB, devices=[Device(d, 1000, 16 * GIB, 16 * GIB) for d in range(devices)],
            model=draw(st.sampled_from(["X", "Y"])) if devices else "",
        ))
    request = st.builds(
        lambda cpu, kind, n, milli: Request(
            cpu=cpu * 1000, mem=cpu * 4 * GIB, devices=n if kind == "whole" else 0,
            device_milli=milli if kind == "fraction" else 0, device_mem=2 * GIB if kind == "fraction" else 0,
        ),
        st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from(["whole", "fraction", "cpu"]), st.integers(1, 4),
        st.sampled_from([100, 250, 500, 700]),
    )
    steps = draw(st.lists(st.tuples(request, st.booleans()), min_size=1, max_size=40))
    return nodes, steps


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets(), st.sampled_from(["hetero", "fgd"]))
def test_every_replica_goes_to_the_best_ranked_eligible_node(fleet, policy):
    from jupyter_hetero.engine.scoring import FragmentationScorer

    nodes, steps = fleet
    scorer = FragmentationScorer(MIX, policy)
    cluster = Cluster(nodes, node_scorer=scorer)
    ranker = scorer.bind(nodes)
    placed = []
    for request, release_one in steps:
        if release_one and placed:
            cluster.release(*placed.pop(0))  # capacity comes back: the ranking must see it
        eligible = [n for n in cluster.eligibility("pool", request, Constraints()).nodes.values()
                    if n.free_mem >= request.mem]
        best = min(((scored[0], n.name) for n, scored in zip(eligible, ranker.rank(eligible, request)) if scored),
                   default=None)
        slots = cluster.place("pool", request, Constraints())
        assert (slots[0].node if slots else None) == (best[1] if best else None)
        if slots:
            placed.append((slots[0], request))
    for n in nodes:
        assert n.free_cpu >= 0 and n.free_mem >= 0
        assert all(0 <= d.free_milli <= 1000 and d.free_mem >= 0 for d in n.devices)


def test_a_share_of_a_device_goes_only_to_nodes_that_share_their_devices():
    whole = node("whole-0").gpus(8).build()
    whole.shares_devices = False  # a cluster node without HAMi: a pod gets whole devices or none
    shared = node("shared-0").gpus(8).build()
    snap = snapshot(nodes=[whole, shared], pending=[job(1).fraction(500)], tenants=[TEAM], queue_policies=NO_RESERVATION)
    [admission] = Engine().cycle(snap).admissions
    assert admission.placement.slots[0].node == "shared-0"

    alone = snapshot(nodes=[node("whole-1").gpus(8).build()], pending=[job(2).fraction(500)], tenants=[TEAM],
                     queue_policies=NO_RESERVATION)
    alone.nodes[0].shares_devices = False
    decisions = Engine().cycle(alone)
    assert not decisions.admissions
    assert [b.kind for b in decisions.pending[2].blockers] == ["device-sharing"]
