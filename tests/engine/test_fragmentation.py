"""Fragmentation of one node against a typical mix, and the GPU choice of each placement policy."""

from __future__ import annotations

import numpy as np
import pytest

from jupyter_hetero.engine.fragmentation import (
    FragmentationIndex,
    Shape,
    TypicalMix,
    choose_gpus,
    fgd_score,
    model_exclusivity,
    node_fragmentation,
    typical_mix,
)

HALF = Shape(4000, 500, 1)  # half a GPU and four cores
WHOLE = Shape(8000, 1000, 1)
PAIR = Shape(8000, 1000, 2)
CPU_ONLY = Shape(4000)
ONLY_V100 = Shape(4000, 500, 1, frozenset({"V100M32"}))


def mix_of(*weighted: tuple[Shape, int]) -> TypicalMix:
    return TypicalMix(tuple(s for s, _ in weighted), tuple(w for _, w in weighted))


@pytest.mark.parametrize(
    ("free", "cpu", "mix", "expected"),
    [
        pytest.param([1000, 1000], 32000, mix_of((HALF, 1)), 0, id="empty node fits the shape: nothing fragmented"),
        pytest.param([1000, 300], 32000, mix_of((HALF, 1)), 300, id="fit: only the too-small GPU counts"),
        pytest.param([400, 300], 32000, mix_of((HALF, 1)), 700, id="no GPU big enough: all idle milli counts"),
        pytest.param([1000, 1000], 2000, mix_of((HALF, 1)), 2000, id="not enough CPU: all idle milli counts"),
        pytest.param([1000, 1000], 32000, mix_of((ONLY_V100, 1)), 2000, id="spec excludes the T4: all idle milli counts"),
        pytest.param([1000, 500], 32000, mix_of((CPU_ONLY, 1)), 1500, id="a CPU-only shape uses no GPU milli"),
        pytest.param([1000, 1000, 1000, 250], 32000, mix_of((PAIR, 1)), 250, id="two-GPU shape fits: the 250 slot counts"),
        pytest.param([1000, 400, 400], 32000, mix_of((PAIR, 1)), 1800, id="two-GPU shape lacks a second GPU"),
        pytest.param([1000, 600, 200], 32000, mix_of((HALF, 3), (PAIR, 1)), (3 * 200 + 1 * 1800) / 4, id="weighted mean over the mix"),
        pytest.param([0, 0], 32000, mix_of((HALF, 1)), 0, id="a full node has nothing to fragment"),
    ],
)
def test_node_fragmentation(free, cpu, mix, expected):
    assert node_fragmentation(free, cpu, "T4", mix) == pytest.approx(expected)


def test_index_matches_the_single_node_function_row_by_row():
    mix = mix_of((HALF, 5), (WHOLE, 3), (PAIR, 2), (CPU_ONLY, 1), (ONLY_V100, 1))
    index = FragmentationIndex(mix)
    rng = np.random.default_rng(0)
    free = rng.choice([0, 150, 500, 700, 1000], size=(40, 4))
    cpu = rng.choice([1000, 6000, 40000], size=40)
    models = rng.choice(["T4", "V100M32"], size=40)
    amounts = index.amounts(free, cpu, np.array([index.model_id(m) for m in models]))
    expected = [node_fragmentation(f, c, m, mix) for f, c, m in zip(free.tolist(), cpu.tolist(), models)]
    assert (amounts / index.total_weight).tolist() == pytest.approx(expected)


@pytest.mark.parametrize(
    ("counts", "coverage", "step", "expected"),
    [
        pytest.param({HALF: 6, WHOLE: 3, PAIR: 1}, 0.95, 1, [HALF, WHOLE, PAIR], id="all shapes needed for 95%"),
        pytest.param({HALF: 6, WHOLE: 3, PAIR: 1}, 0.9, 1, [HALF, WHOLE], id="two shapes cover 90%"),
        pytest.param({HALF: 6, WHOLE: 3, PAIR: 1}, 0.5, 2, [HALF, WHOLE], id="taken a step of two at a time"),
        pytest.param({WHOLE: 2, HALF: 2}, 0.5, 1, [WHOLE], id="equal counts: the larger shape first"),
    ],
)
def test_typical_mix(counts, coverage, step, expected):
    requests = [shape for shape, n in counts.items() for _ in range(n)]
    mix = typical_mix(requests, coverage=coverage, step=step)
    assert list(mix.shapes) == expected
    assert list(mix.weights) == [counts[s] for s in expected]


@pytest.mark.parametrize(
    ("decrease", "expected"),
    [
        pytest.param(0, 50, id="no change scores 50"),
        pytest.param(39, 50, id="small decreases truncate to 50"),
        pytest.param(1000, 73, id="one GPU less fragmented"),
        pytest.param(-1000, 26, id="one GPU more fragmented"),
    ],
)
def test_fgd_score(decrease, expected):
    assert int(fgd_score(decrease)) == expected


# One 500-milli request against a node with a fresh GPU and a 600 slot; the mix holds only half-GPU shapes
# (and whole GPUs for the second case), so the choices below follow from the definitions by hand.
@pytest.mark.parametrize(
    ("policy", "free", "request_shape", "mix", "gpus"),
    [
        pytest.param("fgd", [1000, 600], Shape(1000, 200, 1), mix_of((HALF, 1)), (0,), id="fgd keeps the 600 slot usable"),
        pytest.param("binpack", [1000, 600], Shape(1000, 200, 1), None, (1,), id="binpack takes the tightest GPU"),
        pytest.param("spread", [1000, 600], Shape(1000, 200, 1), None, (0,), id="spread takes the freest GPU"),
        pytest.param("fgd", [1000, 500], Shape(1000, 500, 1), mix_of((WHOLE, 1)), (1,), id="fgd fills the slot no whole GPU can use"),
        pytest.param("hetero", [1000, 500], Shape(1000, 500, 1), mix_of((WHOLE, 1)), (1,), id="hetero agrees with fgd"),
        pytest.param("hetero", [1000, 1000, 1000], PAIR, mix_of((WHOLE, 1)), (0, 1), id="whole GPUs: the lowest free indexes"),
        pytest.param("hetero", [1000, 1000], CPU_ONLY, mix_of((WHOLE, 1)), (), id="CPU-only requests take no GPU"),
    ],
)
def test_choose_gpus(policy, free, request_shape, mix, gpus):
    choice = choose_gpus(free, 32000, "T4", request_shape, mix, policy=policy)
    assert choice is not None and choice.gpus == gpus


@pytest.mark.parametrize(
    ("free", "cpu", "request_shape"),
    [
        pytest.param([400, 300], 32000, HALF, id="no GPU has 500 free"),
        pytest.param([1000, 1000], 1000, HALF, id="not enough CPU"),
        pytest.param([1000, 600], 32000, PAIR, id="only one whole GPU free"),
        pytest.param([1000, 1000], 32000, ONLY_V100, id="the request excludes the T4"),
    ],
)
def test_choose_gpus_returns_none_when_nothing_fits(free, cpu, request_shape):
    assert choose_gpus(free, cpu, "T4", request_shape, mix_of((HALF, 1)), policy="fgd") is None


def test_choose_gpus_reports_the_fragmentation_change():
    choice = choose_gpus([1000, 500], 32000, "T4", Shape(1000, 500, 1), mix_of((WHOLE, 1)), policy="fgd")
    assert choice.frag_delta == pytest.approx(-500)  # the 500 slot no whole GPU could use is gone
    assert choice.score == (62.0,)  # int(100 * sigmoid(0.5))


@pytest.mark.parametrize(
    ("policy", "mix", "message"),
    [
        pytest.param("tetris", None, "unknown placement policy", id="unknown policy"),
        pytest.param("fgd", None, "needs the typical mix", id="fgd without a mix"),
    ],
)
def test_choose_gpus_rejects_bad_arguments(policy, mix, message):
    with pytest.raises(ValueError, match=message):
        choose_gpus([1000], 1000, "T4", HALF, mix, policy=policy)


ANY_GPU = Shape(4000, 1000, 1)
T4_GPU = Shape(4000, 1000, 1, frozenset({"T4"}))


@pytest.mark.parametrize(
    ("mix", "gpus_by_model", "expected"),
    [
        # Demand shares 1/2 each over 8 GPUs: T4-only claims 0.5 * 8 / 2 = 2 per T4 unit, anything 0.5 everywhere.
        pytest.param(mix_of((ANY_GPU, 1), (T4_GPU, 1)), {"T4": 2, "G2": 6}, {"T4": 0.8, "G2": 0.0}, id="T4-only demand on few T4"),
        pytest.param(mix_of((ANY_GPU, 1)), {"T4": 2, "G2": 6}, {"T4": 0.0, "G2": 0.0}, id="no constrained demand"),
        pytest.param(
            mix_of((Shape(4000, 1000, 1, frozenset({"T4", "G2"})), 1)), {"T4": 2, "G2": 6}, {"T4": 0.0, "G2": 0.0},
            id="a spec naming every model is unconstrained",
        ),
        pytest.param(mix_of((T4_GPU, 1)), {"T4": 2, "G2": 6, "A10": 0}, {"T4": 1.0, "G2": 0.0}, id="models without GPUs are left out"),
    ],
)
def test_model_exclusivity(mix, gpus_by_model, expected):
    assert model_exclusivity(mix, gpus_by_model) == pytest.approx(expected)


def test_hetero_discounts_gpus_that_only_constrained_requests_can_use():
    mix = mix_of((ANY_GPU, 1), (T4_GPU, 1))
    plain = choose_gpus([1000, 1000], 32000, "T4", ANY_GPU, mix, policy="hetero")
    contested = choose_gpus([1000, 1000], 32000, "T4", ANY_GPU, mix, policy="hetero", exclusivity=0.8)
    assert plain.frag_delta == contested.frag_delta == 0  # FGD alone sees nothing wrong
    assert contested.score[0] == int(fgd_score(-800)) < plain.score[0] == 50


# ---------------------------------------------------------------- score_nodes, the one vectorised scoring


@pytest.mark.parametrize("policy", ["hetero", "fgd", "binpack", "spread"])
@pytest.mark.parametrize("request_shape", [HALF, WHOLE, PAIR, CPU_ONLY, Shape(2000, 150, 1)], ids=str)
def test_score_nodes_agrees_with_choose_gpus_node_by_node(policy, request_shape):
    from jupyter_hetero.engine.fragmentation import score_nodes

    mix = mix_of((HALF, 5), (WHOLE, 3), (PAIR, 2), (CPU_ONLY, 1))
    index = FragmentationIndex(mix)
    rng = np.random.default_rng(3)
    free = rng.choice([0, 150, 500, 700, 1000], size=(30, 4))
    cpu = rng.choice([1000, 6000, 40000], size=30)
    scores = score_nodes(free, cpu, np.full(30, index.model_id("T4")), request_shape, index, policy, 0.25)
    for row in range(30):
        one = choose_gpus(free[row].tolist(), int(cpu[row]), "T4", request_shape, mix, policy, 0.25)
        assert bool(scores.fits[row]) == (one is not None)
        if one is not None:
            assert tuple(float(k[row]) for k in scores.keys) == one.score
            if request_shape.is_fractional:
                assert (int(scores.gpu[row]),) == one.gpus


def test_score_nodes_on_nodes_without_gpus():
    from jupyter_hetero.engine.fragmentation import score_nodes

    index = FragmentationIndex(mix_of((HALF, 1), (CPU_ONLY, 1)))
    free, cpu, ids = np.zeros((2, 0), dtype=np.int64), np.array([8000, 2000]), np.full(2, index.model_id("", "cpu"))
    cpu_only = score_nodes(free, cpu, ids, CPU_ONLY, index)
    assert cpu_only.fits.tolist() == [True, False]
    assert cpu_only.frag_delta[0] == 0  # nothing to fragment on a node without accelerators
    assert not score_nodes(free, cpu, ids, HALF, index).fits.any()


def test_a_shape_that_names_flavors_finds_no_room_on_other_flavors():
    index = FragmentationIndex(mix_of((Shape(4000, 500, 1, flavors=frozenset({"t4"})), 1)))
    free, cpu = np.array([[1000, 1000], [1000, 1000]]), np.array([32000, 32000])
    ids = np.array([index.model_id("T4", "t4"), index.model_id("T4", "nvidia-gpu")])
    assert index.amounts(free, cpu, ids).tolist() == [0, 2000]
