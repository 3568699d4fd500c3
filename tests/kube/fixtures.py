"""Pytest fixtures for the fake cluster. A test module loads them with

```python
pytest_plugins = ("tests.kube.fixtures",)

def test_a_job_runs(kube_api, kubelet):
    v1 = kubernetes.client.CoreV1Api(kube_api.api_client())
```
(or imports ``kube_api`` and ``kubelet`` from here).
"""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tests.kube.apiserver import FakeApiServer
from tests.kube.kubelet import LocalKubelet
from tests.kube.nodes import ready_node

__all__ = ["KUBELET_NODES", "kube_api", "kubelet", "leftover_processes"]

KUBELET_NODES = ("node-a", "node-b")


@pytest.fixture
def kube_api():
    """A started :class:`FakeApiServer`, stopped after the test."""
    server = FakeApiServer().start()
    yield server
    server.stop()


@pytest.fixture
def kubelet(kube_api, tmp_path):
    """A :class:`LocalKubelet` over the Ready nodes ``node-a`` (zone-a) and ``node-b`` (zone-b)."""
    for name, zone in zip(KUBELET_NODES, ("zone-a", "zone-b"), strict=True):
        if kube_api.get("Node", name) is None:
            kube_api.put(ready_node(name, labels={"topology.kubernetes.io/zone": zone}))
    local = LocalKubelet(kube_api, KUBELET_NODES, tmp_path / "kubelet").start()
    yield local
    local.stop()
    assert leftover_processes(local.root) == [], "the local kubelet left processes running"


def leftover_processes(root: Path) -> list[psutil.Process]:
    """Live processes working under ``root`` (every pod process starts in its pod's directory there)."""
    found = []
    for process in psutil.process_iter(["cwd", "status"]):
        cwd = process.info.get("cwd") or ""
        if process.info.get("status") != psutil.STATUS_ZOMBIE and cwd.startswith(str(root)):
            found.append(process)
    return found
