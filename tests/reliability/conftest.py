"""Every test here runs a real server whose jobs, kernels and replicas are real processes: none may outlive its test,
even one that fails before it lets its work end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..builders import TOKENS, team_catalog
from ..conftest import DEMO_NODES
from ..harness import LabServer, ServerLayout, kill_runners_under, start_hetero_server


@pytest.fixture(autouse=True)
def no_process_outlives_its_test(tmp_path):
    # Autouse: set up first, so torn down last, once the test's server has stopped and restarts nothing.
    yield
    kill_runners_under(tmp_path)


@dataclass(frozen=True)
class TeamServer:
    """A real `jupyter server` with the two-tenant team catalog and personal tokens, and where its files are."""

    server: LabServer
    root: Path
    catalog: Path

    @property
    def api(self) -> str:
        return f"{self.server.base_url}hetero/api/v1"

    @property
    def store_url(self) -> str:
        return f"sqlite:///{ServerLayout(self.root).state / 'hetero.sqlite'}"

    @property
    def work_dir(self) -> Path:
        return ServerLayout(self.root).state / "work"


@pytest.fixture(scope="module")
def team_server(tmp_path_factory) -> Iterator[TeamServer]:
    """One real server for the module (vision: alice, carol its admin; nlp: bob; root a platform admin)."""
    root = tmp_path_factory.mktemp("team-server")
    layout = ServerLayout.create(root)
    catalog = team_catalog(root, vision_a100=2)
    config = {"ServerApp": {"identity_provider_class": "jupyter_hetero.auth.TeamIdentityProvider"},
              "TeamIdentityProvider": {"user_tokens": TOKENS},
              "HeteroApp": {"catalog_file": catalog, "owner_is_platform_admin": False}}
    (layout.jupyter_config / "jupyter_server_config.json").write_text(json.dumps(config), encoding="utf-8")
    try:
        with start_hetero_server(layout, "team", DEMO_NODES) as running:
            yield TeamServer(running, root, Path(catalog))
    finally:
        kill_runners_under(root)  # its jobs, kernels and service replicas, orphans included
