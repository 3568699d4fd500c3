"""Every test here starts services, whose replicas run until scaled down: none may outlive its test."""

from __future__ import annotations

import pytest

from ..harness import kill_runners_under


@pytest.fixture(autouse=True)
def no_replica_outlives_its_test(tmp_path):
    # Autouse: set up first, so torn down last, once the test's server has stopped and restarts nothing.
    yield
    kill_runners_under(tmp_path)
