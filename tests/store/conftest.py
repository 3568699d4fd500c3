"""Every store test runs on SQLite and on a real PostgreSQL (skipped, saying why, where it is not installed)."""

from __future__ import annotations

import pytest

from jupyter_hetero.store import Repository

from ..postgres import DATABASES, database


@pytest.fixture(params=DATABASES)
def db_url(request, tmp_path):
    """A fresh empty database, once SQLite and once PostgreSQL."""
    with database(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def postgres_url(tmp_path):
    """A fresh empty PostgreSQL database, for what only PostgreSQL can get wrong."""
    with database("postgresql", tmp_path) as url:
        yield url


@pytest.fixture
def repo(db_url):
    """A repository on ``db_url`` whose clock ticks one second a call."""
    clock = iter(range(1000, 100000))
    repository = Repository(db_url, clock=lambda: float(next(clock)))
    yield repository
    repository.close()
