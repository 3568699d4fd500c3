"""The kernel start benchmark drives a real server and real kernels (one run here; no timing asserted)."""

from __future__ import annotations

import pytest

from jupyter_hetero.sim.kernel_start import run_kernel_start

from ..conftest import DEMO_NODES


@pytest.mark.slow
def test_one_run_measures_both_kernels():
    result = run_kernel_start(runs=1, emulated_nodes=str(DEMO_NODES))
    assert set(result["median_s"]) == {"python3", "hetero-cpu"}
    assert all(value > 0 for value in result["median_s"].values())
    assert len(result["samples_s"]["hetero-cpu"]) == 1
