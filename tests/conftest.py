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
def jp_server_config(hetero_config):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_hetero": True}}, "HeteroApp": hetero_config}


@pytest.fixture
def api(jp_fetch):
    """``await api("nodes")`` -> decoded JSON of GET /hetero/api/v1/nodes; raises on HTTP errors."""

    async def fetch(path: str, method: str, body, params):
        return await jp_fetch(
            "hetero", "api", "v1", *path.split("/"),
            method=method,
            params=params or None,
            body=json.dumps(body) if body is not None else None,
            allow_nonstandard_methods=True,
        )

    class Api:
        async def __call__(self, path: str, method: str = "GET", body=None, **params):
            response = await fetch(path, method, body, params)
            return json.loads(response.body) if response.body else None

        async def text(self, path: str, **params) -> str:
            return (await fetch(path, "GET", None, params)).body.decode()

    return Api()


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


@pytest.fixture
def wait_for(api):
    """``await wait_for(5, lambda w: w["state"] == "succeeded")`` polls GET workloads/5 until true (30 s max)."""
    import asyncio
    import time

    async def poll(workload_id: int, predicate, timeout: float = 30.0, path: str = ""):
        deadline = time.monotonic() + timeout
        while True:
            workload = await api(f"workloads/{workload_id}{path}")
            if predicate(workload):
                return workload
            if time.monotonic() > deadline:
                raise AssertionError(f"workload {workload_id} never reached the expected state: {workload}")
            await asyncio.sleep(0.1)

    return poll
