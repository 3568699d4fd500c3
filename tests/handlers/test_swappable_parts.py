"""Swappable parts chosen by configuration, as a platform team sets them: ``HeteroApp.backend_class`` follows
``HeteroApp.backend`` unless set, a backend of the team's own runs a real server's work, and
``HeteroApp.engine_class`` makes the server's engine."""

from __future__ import annotations

import pytest
from traitlets.config import Config

from jupyter_hetero.app import HeteroApp
from jupyter_hetero.backends.local import load_emulated_nodes
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.engine.scoring import FragmentationScorer
from jupyter_hetero.startup import build_engine

from ..conftest import DEMO_NODES
from ..fakes import TroubledEngine

JOB = {"kind": "job", "template": "data-preprocessing", "queue": "batch", "command": ["python", "-c", "print(42)"]}


def _app(**settings) -> HeteroApp:
    return HeteroApp(config=Config({"HeteroApp": settings}))


@pytest.mark.parametrize(("settings", "expected"), [
    pytest.param({}, "jupyter_hetero.backends.local.processes.LocalBackend", id="this machine by default"),
    pytest.param({"backend": "kubernetes"}, "jupyter_hetero.backends.kubernetes.backend.KubernetesBackend",
                 id="backend kubernetes names the Kubernetes backend"),
    pytest.param({"backend": "Kubernetes"}, "jupyter_hetero.backends.kubernetes.backend.KubernetesBackend",
                 id="the name in any case"),
    pytest.param({"backend": "kubernetes", "backend_class": "tests.fakes.ListedNodes"}, "tests.fakes.ListedNodes",
                 id="a class set wins over the name"),
    pytest.param({"backend_class": "tests.fakes.GatedBackend"}, "tests.fakes.GatedBackend",
                 id="a local backend's subclass"),
])
def test_backend_class_is_the_one_backend_names_unless_set(settings, expected):
    chosen = _app(**settings).backend_class
    assert f"{chosen.__module__}.{chosen.__qualname__}" == expected


def test_engine_class_makes_the_servers_engine_with_its_policy_and_damping():
    app = _app(engine_class="tests.fakes.TroubledEngine", preemption_limit=5, preemption_window=60.0)
    engine = build_engine(app, load_catalog(DEFAULT_CATALOG_PATH))
    assert type(engine) is TroubledEngine
    assert (engine.preemption_limit, engine.preemption_window_s) == (5, 60.0)
    assert isinstance(engine.node_scorer, FragmentationScorer)  # fragmentation-aware, the default policy


@pytest.fixture
def listed_nodes(hetero_config, server_config):
    """A server on a backend of a kind of its own, configured through its own traits."""
    hetero_config.update(backend_class="tests.fakes.ListedNodes", emulated_nodes_file="", discover_local=False)
    server_config["ListedNodes"] = {"nodes_file": str(DEMO_NODES)}


async def test_a_backend_of_the_teams_own_lists_the_nodes_and_runs_the_work(listed_nodes, api, wait_for):
    assert (await api("version"))["backend"] == "listed"
    nodes = await api("nodes")
    assert sorted(node["name"] for node in nodes) == sorted(node.name for node in load_emulated_nodes(DEMO_NODES))
    created = await api("workloads", "POST", JOB)
    done = await wait_for(created["id"], lambda w: w["state"] in ("succeeded", "failed"))
    assert done["state"] == "succeeded", done
    assert "42" in await api.text(f"workloads/{created['id']}/logs")
