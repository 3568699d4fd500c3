"""Every test here runs a real server whose jobs, kernels and replicas are real processes: none may outlive its test,
even one that fails before it lets its work end."""

from __future__ import annotations

import pytest

from ..harness import kill_runners_under


@pytest.fixture(autouse=True)
def no_process_outlives_its_test(tmp_path):
    # Autouse: set up first, so torn down last, once the test's server has stopped and restarts nothing.
    yield
    kill_runners_under(tmp_path)
