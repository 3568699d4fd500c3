"""The openb replay: trace loading, the FGD protocol's mechanics, each policy's choices, and a real slice."""

from __future__ import annotations

import csv
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from jupyter_hetero.cli import main
from jupyter_hetero.engine.fragmentation import Shape, TypicalMix
from jupyter_hetero.sim.openb import (
    POLICIES,
    Node,
    Pod,
    allocation_at,
    arrival_order,
    load_nodes,
    load_pods,
    place_pods,
    replay,
)

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
ALL_NODES = TRACES / "openb_node_list_all_node.csv"
GPU_NODES = TRACES / "openb_node_list_gpu_node.csv"
DEFAULT_PODS = TRACES / "openb_pod_list_default.csv"
SPEC_PODS = TRACES / "openb_pod_list_gpuspec33.csv"

needs_traces = pytest.mark.skipif(not GPU_NODES.exists(), reason="shared openb traces not available")


def gpu_node(name: str, gpus: int, cpu: int = 96_000, model: str = "G2") -> Node:
    return Node(name, cpu, 512 * 1024, gpus, model)


def pod(name: str, milli: int = 1000, gpus: int = 1, cpu: int = 4000, models: set[str] | None = None) -> Pod:
    return Pod(name, cpu, 1024, gpus, milli if gpus else 0, frozenset(models) if models else None)


def whole_gpu_mix() -> TypicalMix:
    return TypicalMix((Shape(4000, 1000, 1),), (1,))


# ---------------------------------------------------------------- trace loading


@needs_traces
@pytest.mark.parametrize(
    "path", [pytest.param(ALL_NODES, id="all-node list"), pytest.param(GPU_NODES, id="GPU-node list")]
)
def test_load_nodes_keeps_the_1213_gpu_nodes(path):
    nodes = load_nodes(path)
    assert (len(nodes), sum(n.gpus for n in nodes)) == (1213, 6212)


@needs_traces
def test_load_pods_sorts_by_name_and_splits_the_gpu_spec():
    pods = load_pods(SPEC_PODS)
    assert len(pods) == 8152 and [p.name for p in pods] == sorted(p.name for p in pods)
    assert sum(p.gpu_demand for p in pods) == 6_086_800
    assert frozenset({"V100M16", "V100M32"}) in {p.models for p in pods}


# ---------------------------------------------------------------- protocol mechanics


@pytest.mark.parametrize(
    ("demands", "capacity", "expected_total"),
    [
        pytest.param([1000] * 5, 10_000, 13_000, id="equal pods fill exactly up to 1.3x"),
        pytest.param([8000, 1000, 1000], 10_000, None, id="a draw that would pass 1.3x ends inflation"),
        pytest.param([0, 500], 1000, 1000, id="CPU-only pods add no GPU demand"),
    ],
)
def test_arrival_order_inflates_to_just_below_1_3_capacity(demands, capacity, expected_total):
    pods = [pod(f"p{i}", milli=d, gpus=1 if d else 0) if d <= 1000 else pod(f"p{i}", gpus=d // 1000) for i, d in enumerate(demands)]
    order = arrival_order(pods, capacity, np.random.default_rng(7))
    assert sorted(order[: len(pods)]) == list(range(len(pods)))  # every original once, shuffled
    total = sum(pods[i].gpu_demand for i in order)
    assert total <= 1.3 * capacity
    if expected_total is not None:
        assert total == expected_total


def test_arrival_order_is_one_stream_per_seed():
    pods = [pod(f"p{i}", milli=100 * (i + 1)) for i in range(9)]
    first = arrival_order(pods, 4000, np.random.default_rng(42))
    assert first == arrival_order(pods, 4000, np.random.default_rng(42))
    assert first != arrival_order(pods, 4000, np.random.default_rng(43))


@pytest.mark.parametrize(
    ("arrived", "used", "capacity", "level", "expected"),
    [
        pytest.param([100, 100], [40, 60], 100, 100, 50.0, id="mean over the snapshots of the bucket"),
        pytest.param([98, 99, 101, 102], [10, 20, 40, 80], 100, 100, 30.0, id="empty bucket falls back to 99..101"),
        pytest.param([100], [1], 20_000, 0, 0.0, id="0.005% rounds half to even, down to 0.00"),
        pytest.param([100], [3], 20_000, 0, 0.02, id="0.015% rounds half to even, up to 0.02"),
        pytest.param([300], [5], 20_000, 2, 0.02, id="bucket 1.5% rounds to 2, 0.025% to 0.02"),
    ],
)
def test_allocation_at(arrived, used, capacity, level, expected):
    assert allocation_at(arrived, used, capacity, levels=[level])[level] == pytest.approx(expected)


# ---------------------------------------------------------------- policy choices on tiny clusters

BIG, SMALL = gpu_node("big", 8), gpu_node("small", 2, cpu=16_000)


@pytest.mark.parametrize(
    ("policy", "nodes", "pods", "expected"),
    [
        pytest.param("bestfit", [BIG, SMALL], [pod("a")], [(1, (0,))], id="bestfit picks the tightest node"),
        pytest.param("dotprod", [BIG, SMALL], [pod("a")], [(1, (0,))], id="dotprod picks the least aligned free vector"),
        pytest.param(
            "gpupacking", [SMALL, SMALL], [pod("a", 400), pod("b", 200)], [(0, (0,)), (0, (0,))],
            id="gpupacking stacks onto the partly used GPU",
        ),
        pytest.param(
            "gpuclustering", [BIG, BIG], [pod("a"), pod("b", 500), pod("c")], [(0, (0,)), (1, (0,)), (0, (1,))],
            id="gpuclustering keeps shared and whole-GPU pods on separate nodes",
        ),
        pytest.param(
            "fgd", [SMALL, SMALL], [pod("a", 500), pod("b", 500)], [(0, (0,)), (0, (0,))],
            id="fgd fills the half GPU no whole-GPU pod could use",
        ),
        pytest.param("fgd", [SMALL], [pod("a", gpus=4)], [None], id="a pod that fits nowhere is dropped"),
        pytest.param(
            "bestfit", [gpu_node("t4", 2, model="T4"), gpu_node("v100", 2, model="V100M32")],
            [pod("a", models={"V100M32"})], [(1, (0,))], id="gpu_spec restricts the models",
        ),
    ],
)
def test_policy_choices(policy, nodes, pods, expected):
    placements = place_pods(nodes, pods, policy, np.random.default_rng(0), mix=whole_gpu_mix())
    assert placements == expected


def test_hetero_keeps_a_scarce_model_for_the_requests_that_need_it():
    # FGD counts idle GPUs of the scarce model X as fragments for the more frequent Y-only shape, so it sends an
    # unconstrained pod there; hetero also weighs that X capacity is the only home of X-only requests.
    only_x, only_y = frozenset({"X"}), frozenset({"Y"})
    mix = TypicalMix((Shape(4000, 1000, 1), Shape(4000, 1000, 1, only_x), Shape(4000, 1000, 1, only_y)), (3, 1, 2))
    nodes = [gpu_node("x", 2, model="X"), gpu_node("y1", 8, model="Y"), gpu_node("y2", 8, model="Y")]
    pods = [pod("anything"), pod("x-only-1", models={"X"}), pod("x-only-2", models={"X"})]
    placed = {
        policy: sum(p is not None for p in place_pods(nodes, pods, policy, np.random.default_rng(0), mix=mix))
        for policy in ("fgd", "hetero")
    }
    assert placed == {"fgd": 2, "hetero": 3}


def test_random_places_every_pod_somewhere_feasible():
    pods = [pod(f"p{i}", 300) for i in range(6)]
    placements = place_pods([SMALL, SMALL], pods, "random", np.random.default_rng(1))
    assert all(p is not None for p in placements)


# ---------------------------------------------------------------- a real slice of the traces

SLICE_NODE_STRIDE = 20  # 61 of the 1,213 GPU nodes


@pytest.fixture(scope="module")
def real_slice():
    nodes = load_nodes(GPU_NODES)[::SLICE_NODE_STRIDE]
    pods = load_pods(SPEC_PODS)
    # Keep the full trace's demand-to-capacity ratio (6,212 GPUs) by taking every k-th pod.
    stride = round(6212 / sum(n.gpus for n in nodes))
    return nodes, pods[::stride]


@needs_traces
@pytest.mark.parametrize("policy", [pytest.param(p, id=p) for p in POLICIES])
def test_real_slice_invariants(real_slice, policy):
    nodes, pods = real_slice
    capacity = 1000 * sum(n.gpus for n in nodes)
    rng = np.random.default_rng(42)  # the protocol's stream, drawn in its order, by hand
    order = arrival_order(pods, capacity, rng)
    placements = place_pods(nodes, pods, policy, rng, order=order, priority=rng.permutation(len(nodes)))
    gpu_used = {(i, g): 0 for i, n in enumerate(nodes) for g in range(n.gpus)}
    cpu_used = [0] * len(nodes)
    for i, placement in zip(order, placements):
        if placement is None:
            continue
        node, gpus = placement
        assert len(gpus) == pods[i].gpu_count
        assert pods[i].models is None or nodes[node].model in pods[i].models
        for g in gpus:
            gpu_used[node, g] += pods[i].gpu_milli
        cpu_used[node] += pods[i].cpu_milli
    assert max(gpu_used.values()) <= 1000, "a GPU is over-allocated"
    assert all(used <= n.cpu_milli for used, n in zip(cpu_used, nodes))

    arrived, used = replay(nodes, pods, policy, 42)
    assert np.all(used <= arrived) and np.all(np.diff(used) >= 0)
    assert arrived[-1] <= 1.3 * capacity
    by_hand = np.cumsum([pods[i].gpu_demand if p else 0 for i, p in zip(order, placements)])
    assert np.array_equal(used, by_hand), "a seed must replay identically"


def write_slice(path: Path, header: str, rows: list[list]) -> Path:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header.split(","))
        writer.writerows(rows)
    return path


@needs_traces
@pytest.mark.parametrize(
    ("policy", "keys"),
    [pytest.param("hetero", {"policy", "trace", "seeds", "alloc_pct", "per_seed", "seconds"}, id="product default"),
     pytest.param("all", set(POLICIES), id="every policy")],
)
def test_cli_prints_one_json_object(tmp_path, real_slice, policy, keys):
    nodes, pods = real_slice
    nodes_csv = write_slice(tmp_path / "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model",
                            [[n.name, n.cpu_milli, n.memory_mib, n.gpus, n.model] for n in nodes])
    pods_csv = write_slice(
        tmp_path / "openb_pod_list_slice.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec",
        [[p.name, p.cpu_milli, p.memory_mib, p.gpu_count, p.gpu_milli, "|".join(sorted(p.models or ()))] for p in pods],
    )
    args = ["simulate", "placement", "--nodes", str(nodes_csv), "--pods", str(pods_csv), "--seeds", "42", "--json"]
    if policy != "hetero":
        args += ["--policy", policy]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(args) == 0
    result = json.loads(out.getvalue())
    assert set(result) == keys
    one = result if policy == "hetero" else result["hetero"]
    assert one["trace"] == "slice" and one["seeds"] == [42]
    assert set(one["alloc_pct"]) == {"100", "130"} and 0 < one["alloc_pct"]["100"] <= 100
