"""An online service's life on the Kubernetes backend, as a test drives it through the server's REST API: the same on
the API-server double (test_services.py) and on the real control plane (test_real_server.py).

```python
await api("services", "POST", {"name": "doubler", "command": MODEL, "replicas": 2})
replicas = await ready_replicas(api)                         # its two replica workloads, once both are ready
...                                                          # what the test checks of their pods
await assert_each_replica_answers_in_turn(jp_fetch, replicas)
await delete_and_see_it_go(api, wait_for, replicas, pod_gone=..., service_gone=...)
```
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from ..harness import until_async

__all__ = ["MODEL", "assert_each_replica_answers_in_turn", "delete_and_see_it_go", "ready_replicas"]

# tests/serving's model server: it doubles its inputs and names the replica that answered.
MODEL = [sys.executable, str(Path(__file__).parents[1] / "serving" / "model_server.py")]


async def ready_replicas(api, name: str = "doubler", count: int = 2) -> list[dict]:
    """The service's replica workloads, once ``count`` of them are ready."""
    async def ready() -> dict | None:
        service = await api(f"services/{name}")
        return service if service["ready_replicas"] == count else None

    service = await until_async(ready, "two ready replicas in pods", timeout=90)
    return service["replica_workloads"]


async def assert_each_replica_answers_in_turn(jp_fetch, replicas: list[dict], name: str = "doubler") -> None:
    """Four requests through the service's endpoint: each answered right, and by every replica in turn."""
    answers = []
    for _ in range(4):
        response = await jp_fetch("hetero", "endpoints", "default", name, "predict", method="POST",
                                  body=json.dumps({"inputs": [1, 2]}))
        answers.append(json.loads(response.body))
    assert all(answer["outputs"] == [2, 4] for answer in answers)
    assert {answer["replica"].split(":")[0] for answer in answers} == {str(r["id"]) for r in replicas}  # both, in turn


async def delete_and_see_it_go(api, wait_for, replicas: list[dict], pod_gone: Callable[[int], bool],
                               service_gone: Callable[[], bool], name: str = "doubler") -> None:
    """Deletes the service: its replicas end cancelled, then their pods (``pod_gone(workload_id)``) and its
    Service (``service_gone()``) go from the cluster."""
    await api(f"services/{name}", "DELETE")
    for replica in replicas:
        await wait_for(replica["id"], lambda w: w["state"] == "cancelled", timeout=60)
    await until_async(lambda: all(pod_gone(r["id"]) for r in replicas), "the replicas' pods to go")
    await until_async(service_gone, "the service's Service to go with it", timeout=30)
