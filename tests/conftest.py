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
    }


@pytest.fixture
def jp_server_config(hetero_config):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_hetero": True}}, "HeteroApp": hetero_config}


@pytest.fixture
def api(jp_fetch):
    """``await api("nodes")`` -> decoded JSON of GET /hetero/api/v1/nodes; raises on HTTP errors."""

    async def call(path: str, method: str = "GET", body=None, **params):
        response = await jp_fetch(
            "hetero", "api", "v1", *path.split("/"),
            method=method,
            params=params or None,
            body=json.dumps(body) if body is not None else None,
            allow_nonstandard_methods=True,
        )
        return json.loads(response.body) if response.body else None

    return call


@pytest.fixture
def api_error(jp_fetch):
    """``await api_error("nodes", emulated="maybe")`` -> (status, decoded JSON) of a failing call."""
    from tornado.httpclient import HTTPClientError

    async def call(path: str, method: str = "GET", body=None, **params):
        with pytest.raises(HTTPClientError) as info:
            await jp_fetch(
                "hetero", "api", "v1", *path.split("/"),
                method=method,
                params=params or None,
                body=json.dumps(body) if body is not None else None,
                allow_nonstandard_methods=True,
            )
        return info.value.code, json.loads(info.value.response.body)

    return call
