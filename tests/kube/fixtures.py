"""Pytest fixtures for the fake cluster; import them into a test module:

```python
from tests.kube.fixtures import kube_api, kubelet  # noqa: F401 - pytest fixtures
```
"""

from __future__ import annotations

import pytest

from tests.kube.apiserver import FakeApiServer

__all__ = ["kube_api"]


@pytest.fixture
def kube_api():
    """A started :class:`FakeApiServer`, stopped after the test."""
    server = FakeApiServer().start()
    yield server
    server.stop()
