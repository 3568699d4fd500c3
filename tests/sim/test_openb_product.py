"""The openb replay's product policy is the server engine's placement, and the loader takes every published list."""

from __future__ import annotations

import csv
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from jupyter_hetero.cli import main
from jupyter_hetero.engine import (
    Constraints,
    Device,
    Engine,
    LabelReq,
    NodeState,
    Placement,
    Request,
    Workload,
)
from jupyter_hetero.engine.fragmentation import typical_mix
from jupyter_hetero.engine.scoring import FragmentationScorer
from jupyter_hetero.sim.openb import Node, Pod, load_pods, place_pods

from ..builders import queues, snapshot, tenant

EXCERPT = Path(__file__).parent / "data" / "openb_pod_list_multigpu50_excerpt.csv"


def tiny_trace(seed: int = 5) -> tuple[list[Node], list[Pod]]:
    """Eight nodes of two models, forty pods: fractions, whole and multi-GPU, CPU only, some bound to a model."""
    rng = np.random.default_rng(seed)
    nodes = [Node(f"node-{i}", int(rng.choice([32, 64, 96])) * 1000, 256 * 1024, int(rng.choice([2, 4, 8])),
                  "X" if i < 3 else "Y") for i in range(8)]
    pods = []
    for i in range(40):
        kind = rng.choice(["fraction", "whole", "multi", "cpu"], p=[0.45, 0.25, 0.1, 0.2])
        gpus = {"fraction": 1, "whole": 1, "multi": int(rng.choice([2, 4])), "cpu": 0}[kind]
        milli = int(rng.choice([200, 250, 500, 600])) if kind == "fraction" else (1000 if gpus else 0)
        models = frozenset({"X"}) if gpus and rng.random() < 0.3 else None
        pods.append(Pod(f"pod-{i:02d}", int(rng.choice([2, 4, 8, 16])) * 1000, 4096, gpus, milli, models))
    return nodes, pods


def as_engine_nodes(nodes: list[Node], priority: np.ndarray) -> list[NodeState]:
    # Names in the seed's priority order: the engine's tie-break (by name) is then the protocol's.
    return [NodeState(f"{rank:02d}-{n.name}", "openb", n.cpu_milli, n.memory_mib, n.cpu_milli, n.memory_mib,
                      [Device(g) for g in range(n.gpus)], model=n.model, labels={"gpu": n.model})
            for n, rank in zip(nodes, priority.tolist())]


def as_workload(i: int, pod: Pod) -> Workload:
    fraction = pod.gpu_count == 1 and pod.gpu_milli < 1000
    request = Request(pod.cpu_milli, pod.memory_mib, devices=0 if fraction else pod.gpu_count,
                      device_milli=pod.gpu_milli if fraction else 0)
    labels = (LabelReq("gpu", "In", tuple(sorted(pod.models))),) if pod.models and pod.gpu_count else ()
    return Workload(i, "t", "training", request, ("openb",), float(i), constraints=Constraints(labels=labels))


def test_the_replay_places_every_pod_where_the_server_engine_would():
    nodes, pods = tiny_trace()
    mix = typical_mix(p.shape for p in pods)
    priority = np.random.default_rng(1).permutation(len(nodes))
    replayed = place_pods(nodes, pods, "hetero", np.random.default_rng(0), priority=priority, mix=mix)

    # The same pods, one at a time, through Engine.cycle as the server runs it, with the trace's
    # request mix as the typical one.
    states = as_engine_nodes(nodes, priority)
    index = {state.name: i for i, state in enumerate(states)}
    engine = Engine(node_scorer=FragmentationScorer(mix))
    team = tenant("t").quota("openb", devices=10_000, cpu=10_000, mem_gib=100_000)
    running: list[Workload] = []
    for i, pod in enumerate(pods):
        workload = as_workload(i, pod)
        decisions = engine.cycle(snapshot(nodes=[s.clone() for s in states], running=running, pending=[workload],
                                          tenants=[team], queue_policies=queues(inference={"reserved": {}})))
        if not decisions.admissions:
            assert replayed[i] is None, pod
            continue
        slot = decisions.admissions[0].placement.slots[0]
        assert replayed[i] == (index[slot.node], tuple(d for d, _milli, _mem in slot.devices)), pod
        workload.placement = Placement("openb", (slot,))
        running.append(workload)
    assert sum(p is not None for p in replayed) > 20  # the comparison covered real placements


def test_the_excerpt_of_a_five_column_list_loads():
    with open(EXCERPT, newline="") as f:
        assert next(csv.reader(f)) == ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"]
    pods = load_pods(EXCERPT)
    assert len(pods) == 40 and all(p.models is None for p in pods)
    assert {p.gpu_count for p in pods} == {0, 1, 2, 8}


def test_a_list_without_a_core_column_is_refused_by_name(tmp_path):
    broken = tmp_path / "pods.csv"
    broken.write_text("name,cpu_milli,memory_mib,num_gpu\np,1000,1024,0\n")
    with pytest.raises(ValueError, match="missing column.*gpu_milli"):
        load_pods(broken)


def test_the_cli_replays_a_five_column_list(tmp_path):
    # Twelve 8-GPU nodes: the excerpt's 102 GPUs of demand pass both 100% and 130% of them.
    nodes_csv = tmp_path / "nodes.csv"
    nodes_csv.write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                         + "".join(f"n{i},96000,786432,8,{'V100M32' if i % 2 else 'G2'}\n" for i in range(12)))
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["simulate", "placement", "--nodes", str(nodes_csv), "--pods", str(EXCERPT), "--seeds", "42",
                     "--json"]) == 0
    result = json.loads(out.getvalue())
    assert result["trace"] == "multigpu50_excerpt" and result["policy"] == "hetero"
    assert 80 < result["alloc_pct"]["100"] <= result["alloc_pct"]["130"] <= 100


