"""Shared fixtures: a real jupyter-server (pytest-jupyter) with the extension, a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ("pytest_jupyter.jupyter_server",)

REPO = Path(__file__).resolve().parent.parent
DEMO_NODES = REPO / "binder" / "demo-nodes.yaml"
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def hetero_config(tmp_path) -> dict:
    """HeteroApp settings for a test server; tests may update this dict before the server starts."""
    return {
        "db_url": f"sqlite:///{tmp_path / 'hetero.sqlite'}",
        "emulated_nodes_file": str(DEMO_NODES),
        "local_node_name": "local",
        "work_dir": str(tmp_path / "work"),
        "schedule_interval": 0.2,
    }


@pytest.fixture
def server_config() -> dict:
    """Extra server settings; a test updates it (e.g. with :func:`team`) before the server starts."""
    return {}


@pytest.fixture
def jp_server_config(hetero_config, server_config):
    config = {"ServerApp": {"jpserver_extensions": {"jupyter_hetero": True}}, "HeteroApp": hetero_config}
    for section, values in server_config.items():
        config[section] = {**config.get(section, {}), **values}
    return config


@pytest.fixture
def team(request, tmp_path, hetero_config, server_config):
    """The two-tenant team catalog with personal tokens; ``@pytest.mark.team(vision_a100=2, ...)`` changes it.

    List it before ``api`` in a test's arguments: it must configure the server before it starts."""
    from .builders import TOKENS, team_catalog

    marker = request.node.get_closest_marker("team")
    hetero_config["catalog_file"] = team_catalog(tmp_path, **(marker.kwargs if marker else {}))
    hetero_config["owner_is_platform_admin"] = False
    server_config["ServerApp"] = {"identity_provider_class": "jupyter_hetero.auth.TeamIdentityProvider"}
    server_config["TeamIdentityProvider"] = {"user_tokens": TOKENS}


def _hetero_fetch(jp_fetch):
    """One call to /hetero/api/v1/<path>, as the server's owner or as a team member (``as_user``)."""

    async def fetch(route: str, method: str = "GET", body=None, as_user: str | None = None,
                    headers: dict[str, str] | None = None, **params):
        token = _token(as_user)
        return await jp_fetch(
            "hetero", "api", "v1", *route.split("/"),
            method=method,
            params=params or None,
            body=json.dumps(body) if body is not None else None,
            allow_nonstandard_methods=True,
            headers={**({"Authorization": f"token {token}"} if token else {}), **(headers or {})} or None,
        )

    return fetch


def _token(user: str | None) -> str | None:
    from .builders import TOKENS

    if user is None:
        return None
    return next(token for token, entry in TOKENS.items() if (entry if isinstance(entry, str) else entry["name"]) == user)


@pytest.fixture
def api(jp_fetch):
    """``await api("nodes")`` -> decoded JSON of GET /hetero/api/v1/nodes; raises on HTTP errors;
    ``await api.text("workloads/3/logs")`` -> the body as text."""
    fetch = _hetero_fetch(jp_fetch)

    class Api:
        async def __call__(self, route: str, method: str = "GET", body=None, **options):
            response = await fetch(route, method, body, **options)
            return json.loads(response.body) if response.body else None

        async def text(self, route: str, **options) -> str:
            return (await fetch(route, **options)).body.decode()

    return Api()


@pytest.fixture
def api_error(jp_fetch):
    """``await api_error("nodes", emulated="maybe")`` -> (status, decoded JSON) of a failing call."""
    from tornado.httpclient import HTTPClientError

    fetch = _hetero_fetch(jp_fetch)

    async def call(route: str, method: str = "GET", body=None, **options):
        with pytest.raises(HTTPClientError) as info:
            await fetch(route, method, body, **options)
        return info.value.code, json.loads(info.value.response.body)

    return call


@pytest.fixture
def wait_for(api):
    """``await wait_for(5, lambda w: w["state"] == "succeeded")`` polls GET workloads/5 until true (30 s max)."""
    import asyncio
    import time

    async def poll(workload_id: int, predicate, timeout: float = 30.0, as_user: str | None = None):
        deadline = time.monotonic() + timeout
        while True:
            workload = await api(f"workloads/{workload_id}", as_user=as_user)
            if predicate(workload):
                return workload
            if time.monotonic() > deadline:
                raise AssertionError(f"workload {workload_id} never reached the expected state: {workload}")
            await asyncio.sleep(0.1)

    return poll
