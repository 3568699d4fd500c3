"""Pytest fixtures for the fake cluster. A test module loads them with

```python
pytest_plugins = ("tests.kube.fixtures",)

def test_a_job_runs(kube_api, kubelet):
    v1 = kubernetes.client.CoreV1Api(kube_api.api_client())
```
(or imports ``kube_api`` and ``kubelet`` from here).
"""

from __future__ import annotations

import pytest

from tests.kube.apiserver import FakeApiServer
from tests.kube.kubelet import LocalKubelet, leftover_processes
from tests.kube.nodes import ready_node

__all__ = ["KUBELET_NODES", "kube_api", "kubelet"]

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

