"""Kueue's order of its pending Workloads, read from its visibility API for the pods of ours that it holds.

    queues = KueueQueues(api_client, timeout_s=5)
    queues.position_of("hetero", "training", pod_uid)     # Position(local_queue=2, cluster_queue=5) | None

``GET /apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues/{name}/pendingworkloads`` lists
a LocalQueue's pending Workloads in the order Kueue's scheduler takes them. It is an aggregated API (Kueue's
``VisibilityOnDemand``, on by default since v0.9) that the API server proxies to Kueue's controller; each answer is
kept ``ttl_s`` seconds, so a tick that asks about many pods of one LocalQueue reads it once. Where it is not served
(turned off, not reachable, not granted) the place is unknown and said so once in the log; the blockers, which come
from the Workloads themselves, stand without it. Called from the scheduler's thread, never the event loop.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable

import urllib3
from kubernetes.client.rest import ApiException

from .errors import brief
from .kueue_status import Position, positions

__all__ = ["PENDING_PATH", "KueueQueues", "get_json"]

log = logging.getLogger(__name__)

# A LocalQueue's pending Workloads, in Kueue's order.
PENDING_PATH = "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues/{name}/pendingworkloads"


class KueueQueues:
    """Places in Kueue's LocalQueues, each LocalQueue's read at most once per ``ttl_s``."""

    def __init__(self, api_client, *, timeout_s: float, ttl_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic):
        self.api_client = api_client
        self.timeout_s, self.ttl_s, self.clock = timeout_s, ttl_s, clock
        self._read: dict[tuple[str, str], tuple[float, dict[str, Position]]] = {}
        self._lock = threading.Lock()
        self._unserved_said = False

    def position_of(self, namespace: str, local_queue: str, pod_uid: str) -> Position | None:
        """The place of the pod's Workload among its LocalQueue's pending ones; None when Kueue does not list it
        (admitted meanwhile, not made yet) or its visibility API does not answer."""
        key = (namespace, local_queue)
        with self._lock:
            read = self._read.get(key)
        if read is None or self.clock() - read[0] >= self.ttl_s:
            read = (self.clock(), self._pending(namespace, local_queue))
            with self._lock:
                self._read[key] = read
        return read[1].get(pod_uid)

    def _pending(self, namespace: str, local_queue: str) -> dict[str, Position]:
        try:
            return positions(get_json(self.api_client, PENDING_PATH, self.timeout_s, namespace=namespace,
                                      name=local_queue))
        except (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as error:
            if not self._unserved_said:  # once: a cluster without the API would say it every tick
                self._unserved_said = True
                log.warning("Kueue's visibility API did not answer for LocalQueue %s/%s, so places in Kueue's queues "
                            "are not shown: %s", namespace, local_queue, brief(error))
            return {}


def get_json(api_client, path: str, timeout_s: float, **path_params: str) -> dict:
    """A GET of ``path`` (its ``{names}`` filled from ``path_params``) as JSON; any answer but 200 raises the
    ApiException the client's own calls raise."""
    method, url, headers, body, post = api_client.param_serialize(
        "GET", path, path_params=path_params, header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"])
    response = api_client.call_api(method, url, headers, body, post, _request_timeout=timeout_s)
    data = response.read()
    if response.status != 200:
        raise ApiException(status=response.status, reason=response.reason, body=data.decode(errors="replace"))
    return json.loads(data)
