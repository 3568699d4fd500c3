"""A Kubernetes API server for tests: real HTTP on 127.0.0.1, the core/v1 semantics clients rely on.

```python
server = FakeApiServer().start()
v1 = kubernetes.client.CoreV1Api(server.api_client())
server.put({"kind": "Node", "metadata": {"name": "node-a"}, "status": {...}})
v1.list_node()                 # a NodeList with metadata.resourceVersion
server.stop()
```
It keeps one global resourceVersion and a bounded history that watches replay, answers versions
older than that history with 410 Expired, sends bookmarks, and plays kube-scheduler for new pods.
The test hooks (``put``, ``patch_labels``, ``update_status``, ...) change objects in-process, and
watchers see those changes exactly as they see changes made through HTTP.
"""

from __future__ import annotations

import copy
import random
import secrets
import threading
import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Self

import kubernetes
import yaml

from jupyter_hetero.platform.workloads.credentials import CREDENTIAL_PREFIX
from tests.kube import patches
from tests.kube.admission import (
    check_pod_update,
    secret_data,
    validate,
    with_pod_defaults,
)
from tests.kube.scheduler import place
from tests.kube.store import ObjectStore, now_rfc3339
from tests.kube.wire import ApiError, ApiHandler

__all__ = ["KINDS", "ApiError", "FakeApiServer"]

# plural (as in the URL and RBAC) -> kind
KINDS = {"nodes": "Node", "pods": "Pod", "events": "Event", "services": "Service", "secrets": "Secret"}
PLURALS = {kind: plural for plural, kind in KINDS.items()}
NAMESPACED = {"Pod", "Event", "Service", "Secret"}
# Kinds whose `status` only the status subresource changes.
WITH_STATUS = {"Node", "Pod", "Service"}
TERMINAL_PHASES = ("Succeeded", "Failed")

# Who the double's client is, as RBAC names a user in a refusal.
DOUBLE_USER = "system:serviceaccount:default:tester"
_GENERATED_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet Kubernetes uses for generateName


class FakeApiServer:
    """A threading HTTP server speaking the core/v1 API for nodes, pods, events, services and secrets."""

    def __init__(self, *, history: int = 20_000, bookmark_interval: float = 1.0) -> None:
        self.store = ObjectStore(history=history)
        self.bookmark_interval = bookmark_interval
        self.token = secrets.token_hex(16)
        self.requests: list[tuple[str, str, str]] = []
        self.url = ""
        self.stopping = False
        self.watch_epoch = 0  # drop_watches() bumps it; a watch started in an older epoch ends
        self._logs: dict[tuple[str, str], Path] = {}
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set = set()
        self._connections_lock = threading.Lock()
        self._random = random.Random()
        self._last_event_stamp = 0
        self._services_allocated = 0
        self._faults: list[list] = []  # [verb, resource, code, delay_s, times left], see fail()
        self.faults_served = 0
        # [verb, resource, namespace (None: any), times left (None: until allow()), reason], see forbid()
        self._refusals: list[list] = []
        # The schedulerNames the double's kube-scheduler serves, as a real one serves only its own: a pod naming
        # another (or every pod, once cleared: a scheduler that is down) is left as created, with no PodScheduled.
        self.schedulers: set[str] = {"default-scheduler"}
        self._omissions: list[list] = []  # [verb, resource, dotted field, times left], see answer_without()
        # "pod/container/VAR" of each workload credential a pod was sent with in its plain env (readable by anyone
        # who may read pods): stop() fails the test that made one.
        self.plain_credentials: list[str] = []

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self) -> FakeApiServer:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), ApiHandler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        httpd.api = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self.stopping = True
        with self.store.changed:
            self.store.changed.notify_all()
        self._httpd.shutdown()
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(2)
            except OSError:
                pass
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._httpd = None
        assert not self.plain_credentials, f"workload credentials in pods' plain env: {self.plain_credentials}"

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.stop()

    def track(self, connection, open_: bool) -> None:
        with self._connections_lock:
            (self._connections.add if open_ else self._connections.discard)(connection)

    def kubeconfig(self, path: Path) -> Path:
        """Write a kubeconfig with a bearer token pointing at this server; return its path."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": self.token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester", "namespace": "default"}}],
            "current-context": "fake",
        }
        path = Path(path)
        path.write_text(yaml.safe_dump(config))
        return path

    def api_client(self) -> kubernetes.client.ApiClient:
        configuration = kubernetes.client.Configuration()
        configuration.host = self.url
        configuration.api_key = {"authorization": self.token}
        configuration.api_key_prefix = {"authorization": "Bearer"}
        return kubernetes.client.ApiClient(configuration)

    # --- test hooks ------------------------------------------------------------------------------
    def put(self, obj: dict) -> dict:
        """Create or replace an object (kind from ``obj["kind"]``); a new pod goes through the scheduler."""
        kind = obj["kind"]
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace") or ("default" if kind in NAMESPACED else "")
        with self.store.changed:
            old = self.store.get(kind, namespace, metadata["name"])
            if old is None:
                return copy.deepcopy(self.create(kind, namespace, copy.deepcopy(obj)))
            body = copy.deepcopy(obj)
            body["metadata"] = {**body.get("metadata", {}), "namespace": namespace} if namespace else body["metadata"]
            stored = self.store.write({**body, "apiVersion": "v1", "kind": kind}, old=old)
            if kind == "Node":
                self._schedule_pending()
            return copy.deepcopy(stored)

    def patch_labels(self, kind: str, name: str, labels: dict, namespace: str | None = None) -> dict:
        """Merge labels into an object (a None value removes the label)."""
        patch = {"metadata": {"labels": labels}}
        return copy.deepcopy(self.patch(kind, namespace or "", name, patch, "application/merge-patch+json"))

    def update_status(self, kind: str, name: str, status: dict, namespace: str | None = None) -> dict:
        """Replace an object's status as a PUT on its status subresource does (the kubelet's path)."""
        with self.store.changed:
            old = self._existing(kind, namespace or "", name)
            return copy.deepcopy(self.store.write({**old, "status": copy.deepcopy(status)}, old=old))

    def remove(self, kind: str, name: str, namespace: str | None = None) -> None:
        """Delete an object at once (DELETED for watchers), whatever its state."""
        self.store.delete((kind, namespace or "", name))

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        found = self.store.get(kind, namespace or "", name)
        return copy.deepcopy(found) if found is not None else None

    def list(self, kind: str, namespace: str | None = None) -> list[dict]:
        return copy.deepcopy(self.store.items(kind, namespace))

    def fail(self, verb: str, resource: str, code: int = 500, *, times: int = 1, delay_s: float = 0.0) -> None:
        """The next ``times`` ``verb`` calls on ``resource`` ("create", "pods") answer ``code`` (0: as usual) after
        ``delay_s`` seconds, as an overloaded or failing API server does."""
        self._faults.append([verb, resource, code, delay_s, times])

    def fault_for(self, verb: str, resource: str) -> tuple[int, float] | None:
        """The injected fault this call meets, if any (the wire calls it for each request)."""
        with self._connections_lock:
            for fault in self._faults:
                if fault[0] == verb and fault[1] == resource and fault[4] > 0:
                    fault[4] -= 1
                    self.faults_served += 1
                    return fault[2], fault[3]
        return None

    def forbid(self, verb: str, resource: str, *, namespace: str | None = None, user: str = DOUBLE_USER,
               times: int | None = None) -> None:
        """RBAC denies ``user`` ``verb`` on ``resource`` (in ``namespace``, else anywhere) for the next ``times``
        calls (None: until :meth:`allow`), answered as kube-apiserver answers: 403, reason Forbidden."""
        self._refusals.append([verb, resource, namespace, times, ("rbac", user)])

    def exceed_quota(self, resource: str, *, quota: str, requested: str, used: str, limited: str,
                     namespace: str | None = None, times: int | None = 1) -> None:
        """A ResourceQuota admission plugin refuses the next ``times`` creates of ``resource``, as
        kube-apiserver does when a namespace's quota ``quota`` would be exceeded: 403, reason Forbidden."""
        why = f"exceeded quota: {quota}, requested: {requested}, used: {used}, limited: {limited}"
        self._refusals.append(["create", resource, namespace, times, ("quota", why)])

    def allow(self) -> None:
        """Every permission granted and every quota lifted again."""
        with self._connections_lock:
            self._refusals.clear()

    def refusal_for(self, verb: str, resource: str, namespace: str, name: str) -> ApiError | None:
        """The 403 this call meets, if any (the wire asks for each request after faults)."""
        with self._connections_lock:
            for refusal in self._refusals:
                wanted_verb, wanted_resource, where, times, (kind, said) = refusal
                if wanted_verb != verb or wanted_resource != resource or where not in (None, namespace):
                    continue
                if times is not None:
                    if times <= 0:
                        continue
                    refusal[3] -= 1
                if kind == "rbac":
                    # k8s.io/apiserver's responsewriters.forbiddenMessage, then errors.NewForbidden.
                    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
                    said = f'User "{said}" cannot {verb} resource "{resource}" in API group "" {scope}'
                subject = f'{resource} "{name}"' if name else resource
                details = {"name": name, "kind": resource} if name else {"kind": resource}
                return ApiError(403, "Forbidden", f"{subject} is forbidden: {said}", details)
        return None

    def answer_without(self, verb: str, resource: str, field: str, *, times: int = 1) -> None:
        """The next ``times`` answers to ``verb`` on ``resource`` lack ``field`` ("spec.containers"), as a server
        of another version may send an object the client's models hold required: the call itself is done."""
        self._omissions.append([verb, resource, field, times])

    def answered(self, verb: str, resource: str, obj: dict) -> dict:
        """``obj`` as the wire sends it back (the wire calls it for each object it answers with)."""
        with self._connections_lock:
            for omission in self._omissions:
                if omission[0] == verb and omission[1] == resource and omission[3] > 0:
                    omission[3] -= 1
                    obj = copy.deepcopy(obj)
                    *parents, last = omission[2].split(".")
                    held = obj
                    for part in parents:
                        held = held.get(part) or {}
                    held.pop(last, None)
        return obj

    def compact(self) -> None:
        """Forget the history: watches and exact lists from an older version answer 410 Expired."""
        self.store.compact()

    def drop_watches(self) -> None:
        """End every open watch now, as an API server restart or a load balancer would."""
        with self.store.changed:
            self.watch_epoch += 1
            self.store.changed.notify_all()

    def subscribe(self, callback: Callable[[str, dict], None]) -> None:
        """Call ``callback(type, obj)`` after every change, in the thread that made it."""
        self.store.subscribe(callback)

    def unsubscribe(self, callback: Callable[[str, dict], None]) -> None:
        self.store.unsubscribe(callback)

    def record_event(
        self, *, pod: dict, reason: str, message: str, type: str = "Warning", component: str = "kubelet"
    ) -> dict:
        """Create an Event about a pod, shaped as the scheduler and kubelet write them."""
        metadata = pod["metadata"]
        namespace = metadata.get("namespace") or "default"
        now = now_rfc3339()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{metadata['name']}.{self._event_stamp():x}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": metadata["name"],
                "namespace": namespace,
                "uid": metadata.get("uid"),
                "resourceVersion": metadata.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": type,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": "",
        }
        if (pod.get("spec") or {}).get("nodeName") and component == "kubelet":
            event["source"]["host"] = pod["spec"]["nodeName"]
        return copy.deepcopy(self.store.write(event, old=None))

    def _event_stamp(self) -> int:
        """Nanoseconds, never repeated: event names sort in the order events happened, as the API's do."""
        with self.store.changed:
            self._last_event_stamp = max(self._last_event_stamp + 1, time.time_ns())
            return self._last_event_stamp

    def serve_logs(self, namespace: str, pod: str, path: Path) -> None:
        """Serve ``path`` as the log of the pod's container (the kubelet calls this when it starts one)."""
        self._logs[(namespace, pod)] = Path(path)

    def log_path(self, namespace: str, pod: str) -> Path | None:
        return self._logs.get((namespace, pod))

    # --- the API's semantics (the HTTP layer in wire.py calls these) -----------------------------
    def create(self, kind: str, namespace: str, body: dict) -> dict:
        metadata = dict(body.get("metadata") or {})
        if body.get("kind") not in (None, kind):
            raise ApiError.bad_request(f"the kind of the body ({body.get('kind')}) is not {kind}")
        if not metadata.get("name"):
            if not metadata.get("generateName"):
                raise ApiError.invalid(
                    kind, "", "metadata.name: Required value: name or generateName is required"
                )
            suffix = "".join(self._random.choice(_GENERATED_SUFFIX) for _ in range(5))
            metadata["name"] = metadata["generateName"] + suffix
        if kind in NAMESPACED:
            if metadata.get("namespace") and namespace and metadata["namespace"] != namespace:
                raise ApiError.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            metadata["namespace"] = namespace or metadata.get("namespace") or "default"
        else:
            metadata.pop("namespace", None)
        for system_field in ("resourceVersion", "uid", "creationTimestamp", "deletionTimestamp"):
            metadata.pop(system_field, None)
        obj = secret_data({**body, "apiVersion": "v1", "kind": kind, "metadata": metadata})
        validate(obj)
        if kind == "Pod":
            obj = with_pod_defaults(obj)
            self.plain_credentials += _plain_credentials(obj)
        elif kind == "Service":
            obj = self._with_cluster_ip(obj)
        with self.store.changed:
            if self.store.get(kind, metadata.get("namespace", ""), metadata["name"]) is not None:
                raise ApiError(
                    409, "AlreadyExists", f'{PLURALS[kind]} "{metadata["name"]}" already exists',
                    {"name": metadata["name"], "kind": PLURALS[kind]},
                )
            stored = self.store.write(obj, old=None)
            if kind == "Pod" and not stored["spec"].get("nodeName") and self._served(stored):
                self._schedule(stored)
            elif kind == "Node":
                self._schedule_pending()
        return stored

    def replace(self, kind: str, namespace: str, name: str, body: dict, subresource: str = "") -> dict:
        if (body.get("metadata") or {}).get("name") not in (None, name):
            raise ApiError.bad_request("the name of the object does not match the name on the URL")
        with self.store.changed:
            old = self._existing(kind, namespace, name)
            self._check_version(old, body)
            if subresource == "status":
                return self.store.write({**old, "status": body.get("status") or {}}, old=old)
            return self._write(kind, old, {**body, "apiVersion": "v1", "kind": kind})

    def patch(self, kind: str, namespace: str, name: str, patch, content_type: str, subresource: str = "") -> dict:
        with self.store.changed:
            old = self._existing(kind, namespace, name)
            patched = patches.apply(copy.deepcopy(old), patch, content_type)
            if isinstance(patch, dict):
                self._check_version(old, patch)
            if subresource == "status":
                return self.store.write({**old, "status": patched.get("status") or {}}, old=old)
            return self._write(kind, old, patched)

    def delete(self, kind: str, namespace: str, name: str, options: dict) -> dict:
        grace = options.get("gracePeriodSeconds")
        preconditions = options.get("preconditions") or {}
        with self.store.changed:
            old = self._existing(kind, namespace, name)
            for field in ("uid", "resourceVersion"):
                if preconditions.get(field) and preconditions[field] != old["metadata"].get(field):
                    raise ApiError.conflict(
                        kind, name, f"Precondition failed: {field}: {preconditions[field]}, "
                        f"object's {field}: {old['metadata'].get(field)}",
                    )
            graceful = (
                kind == "Pod"
                and old["spec"].get("nodeName")
                and (old.get("status") or {}).get("phase") not in TERMINAL_PHASES
                and grace != 0
            )
            if not graceful:
                return self.store.delete((kind, namespace, name))
            if grace is None:
                grace = old["spec"].get("terminationGracePeriodSeconds", 30)
            current = old["metadata"].get("deletionGracePeriodSeconds")
            if current is not None and current <= grace:
                return old
            metadata = {
                **old["metadata"],
                "deletionTimestamp": old["metadata"].get("deletionTimestamp") or now_rfc3339(),
                "deletionGracePeriodSeconds": int(grace),
            }
            return self.store.write({**old, "metadata": metadata}, old=old)

    # --- helpers ---------------------------------------------------------------------------------
    def _existing(self, kind: str, namespace: str, name: str) -> dict:
        found = self.store.get(kind, namespace, name)
        if found is None:
            raise ApiError.not_found(PLURALS[kind], name)
        return found

    @staticmethod
    def _check_version(old: dict, body: dict) -> None:
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            raise ApiError.conflict(
                old["kind"], old["metadata"]["name"],
                "the object has been modified; please apply your changes to the latest version and try again",
            )

    def _write(self, kind: str, old: dict, new: dict) -> dict:
        """An update through the main resource: system metadata and (where a subresource owns it) status stay."""
        metadata = dict(new.get("metadata") or {})
        for system_field in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                             "deletionGracePeriodSeconds"):
            if system_field in old["metadata"]:
                metadata[system_field] = old["metadata"][system_field]
            else:
                metadata.pop(system_field, None)
        new = secret_data({**new, "metadata": metadata})
        if kind in WITH_STATUS and "status" in old:
            new["status"] = old["status"]
        if kind == "Pod":
            check_pod_update(old, new)
        validate(new)
        stored = self.store.write(new, old=old)
        if kind == "Node":
            self._schedule_pending()
        return stored

    def _schedule(self, pod: dict) -> None:
        """Bind a new pod to the node its affinity allows, or mark it unschedulable with an event."""
        node, why = place(pod, self.store.items("Node"))
        status = dict(pod.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        now = now_rfc3339()
        if node is not None:
            conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now})
            bound = {**pod, "spec": {**pod["spec"], "nodeName": node}, "status": {**status, "conditions": conditions}}
            bound = self.store.write(bound, old=pod)
            namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            self.record_event(pod=bound, reason="Scheduled", type="Normal", component="default-scheduler",
                              message=f"Successfully assigned {namespace}/{name} to {node}")
            return
        previous = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        if previous and previous.get("message") == why:
            return
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                           "message": why, "lastTransitionTime": now})
        pending = self.store.write({**pod, "status": {**status, "conditions": conditions}}, old=pod)
        self.record_event(pod=pending, reason="FailedScheduling", message=why, component="default-scheduler")

    def _served(self, pod: dict) -> bool:
        return pod["spec"].get("schedulerName", "default-scheduler") in self.schedulers

    def _with_cluster_ip(self, service: dict) -> dict:
        """A Service gets a virtual IP from the service range unless it is headless (``clusterIP: None``)."""
        spec = dict(service.get("spec") or {})
        if not spec.get("clusterIP"):
            self._services_allocated += 1
            spec["clusterIP"] = f"10.96.{self._services_allocated // 250}.{self._services_allocated % 250 + 1}"
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("type", "ClusterIP")
        return {**service, "spec": spec}

    def _schedule_pending(self) -> None:
        """Retry unbound pods after a node changed, as kube-scheduler requeues unschedulable pods."""
        for pod in self.store.items("Pod"):
            if not pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp") and self._served(pod):
                self._schedule(pod)



def _plain_credentials(pod: dict) -> list[str]:
    """The pod's variables whose literal value is a workload credential (by its name or by its value's form)."""
    spec = pod.get("spec") or {}
    return [f"{pod['metadata']['name']}/{container.get('name')}/{var['name']}"
            for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
            for var in container.get("env") or []
            if "value" in var and (var["name"] == "JUPYTER_HETERO_TOKEN"
                                   or str(var["value"]).startswith(CREDENTIAL_PREFIX))]
