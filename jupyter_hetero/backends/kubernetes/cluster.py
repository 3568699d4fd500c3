"""The cluster as the backend follows it: nodes, our pods, their events, the pods we did not place and, where Kueue
admits our pods, Kueue's Workloads of them.

    cluster = ClusterReflector(api_client, namespace="hetero", track_foreign=True, track_kueue=False)
    cluster.wake(loop.wake)                # called (coalesced) from a worker thread after changes
    cluster.start(); cluster.wait_synced(30)
    cluster.nodes.items()                  # {"gpu-a1": {...raw Node JSON...}}
    cluster.requests_by_node()             # what other pods ask of each node
    cluster.kueue_workload_of(pod_uid)     # Kueue's Workload of one of our pods (with track_kueue)

What the caches keep of each object (see `trim_node`, `trim_pod`, `trim_foreign_pod`): the API's
`metadata.managedFields` never, a Node's `status.images` never (together about half of a GPU node's
JSON), and of pods we did not place only what their requests and node need.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .errors import ApiForbidden
from .pod_identity import placed_server, server_labels
from .kueue_status import owner_pod_uid
from .reflector import Backoff, Reflector, key_of, rv_order

__all__ = ["KUEUE_API", "MANAGED_BY", "ClusterReflector", "event_pod_key", "trim_foreign_pod", "trim_node", "trim_pod",
           "trim_workload"]

log = logging.getLogger(__name__)

MANAGED_BY = "app.kubernetes.io/managed-by=jupyter-hetero"
_LIVE_PHASES = "status.phase!=Succeeded,status.phase!=Failed"
KUEUE_API = ("kueue.x-k8s.io", "v1beta2")  # the group and version of Kueue's Workloads (Kueue v0.16 and later)


def trim_node(node: dict) -> dict:
    """A Node without what the backend never reads (managed fields, the image list)."""
    node.get("metadata", {}).pop("managedFields", None)
    node.get("status", {}).pop("images", None)
    return node


def trim_pod(pod: dict) -> dict:
    pod.get("metadata", {}).pop("managedFields", None)
    return pod


def trim_foreign_pod(pod: dict) -> dict:
    """What a pod we did not place costs its node: name, node, phase and the containers' resources."""
    meta, spec = pod.get("metadata", {}), pod.get("spec") or {}

    def resources(containers: list | None) -> list[dict]:
        return [{"name": c.get("name"), "resources": c.get("resources") or {},
                 **({"restartPolicy": c["restartPolicy"]} if "restartPolicy" in c else {})}
                for c in containers or ()]

    kept_spec: dict[str, Any] = {"nodeName": spec.get("nodeName"), "containers": resources(spec.get("containers"))}
    if spec.get("initContainers"):
        kept_spec["initContainers"] = resources(spec["initContainers"])
    if spec.get("overhead"):
        kept_spec["overhead"] = spec["overhead"]
    kept_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp") if k in meta}
    server = placed_server(pod)
    if server is not None:  # a hub user's server the engine placed: its two labels say which
        kept_meta["labels"] = server_labels(server)
    return {"metadata": kept_meta, "spec": kept_spec, "status": {"phase": (pod.get("status") or {}).get("phase")}}


def trim_workload(workload: dict) -> dict:
    """What Kueue's Workload says of admission: its owner, LocalQueue, conditions, admission and requeue state."""
    meta, status = workload.get("metadata") or {}, workload.get("status") or {}
    return {"metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "ownerReferences")
                         if k in meta},
            "spec": {"queueName": (workload.get("spec") or {}).get("queueName")},
            "status": {k: status[k] for k in ("conditions", "admission", "admissionChecks", "requeueState")
                       if k in status}}


def _total(requests: Any) -> Any:
    """The sum of one node's pods' requests (at least one)."""
    pods = list(requests)
    total = pods[0]
    for more in pods[1:]:
        total = total + more
    return total


def _event_time(event: dict) -> str:
    # RFC 3339 strings in UTC sort as text; series events update lastTimestamp or series.lastObservedTime.
    series = event.get("series") or {}
    return (series.get("lastObservedTime") or event.get("lastTimestamp") or event.get("eventTime")
            or event.get("metadata", {}).get("creationTimestamp") or "")


def event_pod_key(event: dict) -> str:
    involved = event.get("involvedObject") or {}
    return f"{involved.get('namespace') or event.get('metadata', {}).get('namespace')}/{involved.get('name')}"


def _event_order(event: dict) -> tuple[str, tuple[int, str]]:
    return (_event_time(event), rv_order(event))




class ClusterReflector:
    """Nodes, our pods and their events (and, with `track_foreign`, every other live pod), kept current.

    Pods are ours by label (`MANAGED_BY`) in `namespace`, or in every namespace when it is None.
    Events are those of pods in the same scope, only the newest `events_per_pod` of each pod.
    """

    def __init__(self, api_client: Any, *, namespace: str | None, track_foreign: bool = False,
                 requests_of: Callable[[dict], Any] | None = None, events_per_pod: int = 20,
                 timeout_s: int = 300, resync_s: float = 600, wake_delay_s: float = 0.05,
                 backoff: Callable[[], Backoff] = Backoff, track_kueue: bool = False):
        from kubernetes.client import CoreV1Api, CustomObjectsApi

        core = CoreV1Api(api_client)
        self.namespace = namespace
        if namespace:
            pods_call = functools.partial(core.list_namespaced_pod, namespace)
            events_call = functools.partial(core.list_namespaced_event, namespace)
        else:
            pods_call, events_call = core.list_pod_for_all_namespaces, core.list_event_for_all_namespaces
        common = {"timeout_s": timeout_s, "resync_s": resync_s}
        self.nodes = Reflector(list_call=core.list_node, kind="Node", trim=trim_node, backoff=backoff(),
                               on_change=self._changed, **common)
        self.pods = Reflector(list_call=pods_call, kind="Pod", label_selector=MANAGED_BY, trim=trim_pod,
                              backoff=backoff(), on_change=self._changed, **common)
        self.events = Reflector(list_call=events_call, kind="Event", field_selector="involvedObject.kind=Pod",
                                trim=trim_pod, group_by=event_pod_key, keep_latest=events_per_pod,
                                order_by=_event_order, backoff=backoff(), on_change=self._changed, **common)
        self.foreign: Reflector | None = None
        if track_foreign:
            if requests_of is None:
                from .nodes import pod_requests as requests_of
            self._requests_of = requests_of
            # Every namespace: what other pods hold on a node is not ours to scope. The phase filter runs
            # on the server; `_is_foreign` repeats it and drops unbound pods and our own.
            self.foreign = Reflector(list_call=core.list_pod_for_all_namespaces, kind="Pod",
                                     field_selector=_LIVE_PHASES, trim=trim_foreign_pod, keep=self._is_foreign,
                                     backoff=backoff(), on_change=self._foreign_changed, **common)
        self.workloads: Reflector | None = None
        if track_kueue:
            custom = CustomObjectsApi(api_client)
            workloads_call = (functools.partial(custom.list_namespaced_custom_object, *KUEUE_API, namespace, "workloads")
                              if namespace else
                              functools.partial(custom.list_cluster_custom_object, *KUEUE_API, "workloads"))
            # Kueue's pod integration makes one Workload per pod, owned by it: grouped by that pod, the newest kept.
            self.workloads = Reflector(list_call=workloads_call, kind="Workload", keep=owner_pod_uid,
                                       trim=trim_workload, group_by=owner_pod_uid, keep_latest=1, backoff=backoff(),
                                       on_change=self._changed, **common)
        self._by_node: dict[str, dict[str, Any]] = {}
        self._sums: dict[str, Any] = {}
        self._servers: dict[int, tuple[str, str]] = {}  # hub server workload -> (node, key) of its live pod
        self._server_of_pod: dict[str, int] = {}  # and back
        self._index_lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._wake_delay_s = wake_delay_s
        self._waker: threading.Thread | None = None

    @property
    def reflectors(self) -> list[Reflector]:
        return [r for r in (self.nodes, self.pods, self.events, self.foreign, self.workloads) if r is not None]

    def start(self) -> None:
        self._waker = threading.Thread(target=self._wake_loop, name="hetero-reflector-wake", daemon=True)
        self._waker.start()
        for reflector in self.reflectors:
            reflector.start()

    def stop(self) -> None:
        self._stop.set()
        self._dirty.set()
        for reflector in self.reflectors:
            reflector._stop.set()
            reflector._close_response()
        for reflector in self.reflectors:
            reflector.stop()
        if self._waker is not None and self._waker is not threading.current_thread():
            self._waker.join(5)

    def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return all(r.wait_synced(max(0.0, deadline - time.monotonic())) for r in self.reflectors)

    def refused(self) -> ApiForbidden | None:
        """The first permission the API refuses one of the caches (None when it refuses none)."""
        return next((r.refused for r in self.reflectors if r.refused is not None), None)

    def wake(self, callback: Callable[[], None]) -> None:
        """Call `callback` from the wake thread after changes; a burst of changes makes one call."""
        self._callbacks.append(callback)

    def events_of(self, namespace: str, pod: str) -> list[dict]:
        """The cached events of one pod, oldest first."""
        return self.events.group(f"{namespace}/{pod}")

    def kueue_workload_of(self, pod_uid: str) -> dict | None:
        """Kueue's Workload of the pod with ``pod_uid``, as last seen (None: none yet, or Kueue is not tracked)."""
        found = self.workloads.group(pod_uid) if self.workloads is not None and pod_uid else []
        return found[-1] if found else None

    def requests_by_node(self, placed_servers: frozenset[int] = frozenset()) -> dict[str, Any]:
        """What pods we did not place request of each node (`requests_of` summed), by node name. The pods of hub
        servers in ``placed_servers`` (workload ids whose placement the engine holds) are left out: the engine
        counts what they hold already, as their workloads'."""
        with self._index_lock:
            for node in [n for n in self._by_node if n not in self._sums]:
                self._sums[node] = _total(self._by_node[node].values())
            sums = dict(self._sums)
            left_out: dict[str, set[str]] = {}
            for workload_id in placed_servers:
                if (found := self._servers.get(workload_id)) is not None:
                    left_out.setdefault(found[0], set()).add(found[1])
            for node, keys in left_out.items():
                rest = [requests for key, requests in self._by_node.get(node, {}).items() if key not in keys]
                if rest:
                    sums[node] = _total(rest)
                else:
                    sums.pop(node, None)
            return sums

    def placed_servers_seen(self, placed_servers: frozenset[int]) -> frozenset[int]:
        """Those of ``placed_servers`` whose pod is in the cache: what :meth:`requests_by_node` leaves out."""
        with self._index_lock:
            return frozenset(workload_id for workload_id in placed_servers if workload_id in self._servers)

    # -- from the reflectors' threads --------------------------------------------------------------
    def _changed(self, kind: str, obj: dict) -> None:
        self._dirty.set()

    def _is_foreign(self, pod: dict) -> bool:
        if not (pod.get("spec") or {}).get("nodeName"):
            return False
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return False
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            # A pod being deleted holds its node's devices until it is gone, and kube-scheduler counts it so; the
            # engine released it when it asked for the delete, so it counts here, ours or not.
            return True
        ours = (meta.get("labels") or {}).get("app.kubernetes.io/managed-by") == "jupyter-hetero"
        return not (ours and (self.namespace is None or meta.get("namespace") == self.namespace))

    def _foreign_changed(self, kind: str, pod: dict) -> None:
        key, node = key_of(pod), (pod.get("spec") or {}).get("nodeName")
        requests = None
        if kind != "DELETED":
            try:
                requests = self._requests_of(pod)
            except Exception:  # one strange pod must not stop the cache
                log.warning("cannot read the requests of pod %s; counted as none", key, exc_info=True)
        with self._index_lock:
            # A pod never moves between nodes, but drop it everywhere in case a replacement reused its name.
            for name, pods in list(self._by_node.items()):
                if key in pods and (name != node or requests is None):
                    del pods[key]
                    self._sums.pop(name, None)
                    if not pods:
                        del self._by_node[name]
            if requests is not None and node:
                self._by_node.setdefault(node, {})[key] = requests
                self._sums.pop(node, None)
            # A server pod being deleted holds its node until it is gone, whatever its workload: never left out.
            if (was := self._server_of_pod.pop(key, None)) is not None:
                self._servers.pop(was, None)
            server = placed_server(pod)
            if server is not None and requests is not None and node and not pod["metadata"].get("deletionTimestamp"):
                self._servers[server], self._server_of_pod[key] = (node, key), server
        self._dirty.set()

    def _wake_loop(self) -> None:
        while not self._stop.is_set():
            self._dirty.wait()
            if self._stop.is_set():
                return
            # A short pause gathers a burst of changes into one call.
            self._stop.wait(self._wake_delay_s)
            self._dirty.clear()
            for callback in list(self._callbacks):
                try:
                    callback()
                except Exception:
                    log.exception("reflector wake callback failed")
