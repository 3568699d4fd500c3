"""A kubelet of a real API server: one node, registered over HTTP, whose pods run as local processes.

```python
kubelet = RealKubelet(control_plane, "local-1", tmp_path / "kubelet",
                      labels={"hetero.example/pool": "local"}, capacity={"cpu": "8", "memory": "16Gi"}).start()
...                         # pods kube-scheduler binds to local-1 run; status and logs go through the API server
kubelet.stop_heartbeating() # the node lifecycle controller takes it from here (NotReady, taints, evictions)
kubelet.stop()              # nothing it started is left running
```

It authenticates as ``system:node:<name>`` (group ``system:nodes``), so the Node authorizer and the
NodeRestriction admission plugin judge every call as they judge a kubelet's. It renews a Lease in
``kube-node-lease`` and posts the node's Ready condition; lists and watches the pods whose ``spec.nodeName``
is its node; runs each one's first container as a process (:func:`tests.kube.containers.materialise`) in
a session of its own; writes status through ``pods/status``; and serves ``/containerLogs`` on HTTPS at the
node's ``daemonEndpoints`` port, which the API server proxies ``pods/log`` to (with no
``--kubelet-certificate-authority`` it does not check that port's certificate, as on most clusters).

Each container runs in a PID namespace of its own (``unshare --pid --fork``): its command is PID 1 there, as
in a container, so the kernel drops any signal it has no handler for. A stop signals that process alone (the
runner passes SIGTERM on to its command); SIGKILL after the grace period, or the end of PID 1, takes the
whole namespace down.
"""

from __future__ import annotations

import datetime
import itertools
import json
import logging
import os
import queue
import signal
import ssl
import subprocess
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

from kubernetes import client, watch
from kubernetes.client import ApiException

from tests.kube.containers import NODE_IP, ConfigError, container_status, materialise, pod_conditions, pod_ip
from tests.kube.control_plane import ControlPlane, free_port

__all__ = ["RealKubelet"]

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40  # a kubelet's default; the node lifecycle controller's grace period decides, not this
RENEW_S = 2.0  # how often the Lease is renewed (a kubelet's default is 10 s; the tests' grace period is short)
STATUS_S = 10.0  # how often the node's conditions are posted even when nothing changed
CONFIG_RETRY_S = 0.5  # a pod held by a Secret not yet readable tries again after this
WATCH_S = 60  # each watch ends after this and is started again from the last resourceVersion
# Pod addresses (tests.kube.containers.pod_ip numbers), apart from the in-process kubelet's (below 1,000) and, as
# 127.0.0.0/8 is the whole machine's, from another pytest-xdist worker's kubelets: 20,000 numbers per worker.
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
_ADDRESSES = itertools.count(1_000 + 20_000 * (_WORKER % 3))


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Run:
    """One pod taken on: its process once started, its log, and whether a deletion is stopping it."""

    uid: str
    container: dict
    ip: str
    log_path: Path
    process: subprocess.Popen | None = None  # unshare, in this machine's namespace
    init: int | None = None  # the container's PID 1, as this machine's namespace numbers it
    started_at: str = ""
    container_id: str = ""
    deleting: bool = False
    ended: bool = False  # its terminal status is written
    kill_timer: threading.Timer | None = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal_top(self, signum: int) -> None:
        """The container's PID 1 alone, as a runtime's stop does."""
        if self.alive() and self.init is not None:
            try:
                os.kill(self.init, signum)
            except ProcessLookupError:
                pass

    def kill_group(self) -> None:
        """Everything left in the container's process group (its cgroup, for a runtime)."""
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


class RealKubelet:
    """The node ``name`` of ``plane``: its pods run under ``root`` (see the module's docstring)."""

    def __init__(self, plane: ControlPlane, name: str, root: Path, *, labels: dict[str, str] | None = None,
                 capacity: dict[str, str] | None = None) -> None:
        self.plane, self.name, self.root = plane, name, Path(root)
        self.labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})}
        self.capacity = {"cpu": "8", "memory": "16Gi", "pods": "110", **(capacity or {})}
        self._runs: dict[str, _Run] = {}
        self._pods: dict[str, dict] = {}  # the watch's store: the only read path of the worker
        self._queue: queue.Queue = queue.Queue()
        self._stopped = threading.Event()
        self._silent = threading.Event()  # stop_heartbeating(): no lease, no status, no pod acted on
        self._threads: list[threading.Thread] = []
        self._addresses = _ADDRESSES  # one count for every kubelet of the process: no two pods share an address
        self._server: ThreadingHTTPServer | None = None

    # --- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> Self:
        self.root.mkdir(parents=True, exist_ok=True)
        kubeconfig = self.plane.node_kubeconfig(self.root / "kubelet.kubeconfig", self.name)
        api = self.plane.api_client(kubeconfig)
        self.core, self.leases = client.CoreV1Api(api), client.CoordinationV1Api(api)
        self._serve_logs()
        self.core.create_node({"metadata": {"name": self.name, "labels": self.labels}})
        self._post_status()
        self.leases.create_namespaced_lease(LEASE_NAMESPACE, {
            "metadata": {"name": self.name},
            "spec": {"holderIdentity": self.name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": _micro_now()}})
        for target in (self._heartbeat, self._watch_pods, self._work):
            self._spawn(target)
        return self

    def stop(self) -> None:
        """Kill every process this kubelet started, children included; the Node object is left to the test."""
        self._stopped.set()
        self._queue.put(None)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for run in list(self._runs.values()):
            if run.kill_timer is not None:
                run.kill_timer.cancel()
            run.kill_group()
            if run.process is not None:
                try:
                    run.process.wait(10)
                except subprocess.TimeoutExpired:
                    log.warning("pod process %s outlived SIGKILL", run.process.pid)

    def stop_heartbeating(self) -> None:
        """The node goes silent to the API server (a partition): no Lease renewal, no node or pod status, no
        deletion acted on; its processes run on, as on a node cut off from the network, until :meth:`stop`."""
        self._silent.set()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.stop()

    # --- node ------------------------------------------------------------------------------------------------
    def _post_status(self) -> None:
        now = _now()
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                 "lastHeartbeatTime": now, "lastTransitionTime": now}
        self.core.patch_node_status(self.name, {"status": {
            "capacity": self.capacity, "allocatable": self.capacity, "conditions": [ready],
            "addresses": [{"type": "InternalIP", "address": NODE_IP}, {"type": "Hostname", "address": NODE_IP}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self._port}}}})

    def _heartbeat(self) -> None:
        posted = time.monotonic()
        while not self._stopped.wait(RENEW_S):
            if self._silent.is_set():
                continue
            try:
                self.leases.patch_namespaced_lease(self.name, LEASE_NAMESPACE, {"spec": {"renewTime": _micro_now()}})
                if time.monotonic() - posted >= STATUS_S:
                    self._post_status()
                    posted = time.monotonic()
            except Exception:  # noqa: BLE001 - a missed beat is what the lifecycle controller is for
                log.exception("kubelet %s: heartbeat failed", self.name)

    # --- pods: list, watch, store, queue ---------------------------------------------------------------------
    def _watch_pods(self) -> None:
        selector = f"spec.nodeName={self.name}"
        while not self._stopped.is_set():
            try:
                listed = json.loads(self.core.list_pod_for_all_namespaces(
                    field_selector=selector, _preload_content=False).data)
                seen = {_key(pod): pod for pod in listed["items"]}
                for key in set(self._pods) - set(seen):
                    self._forget(key)
                for key, pod in seen.items():
                    self._put(key, pod)
                version = listed["metadata"]["resourceVersion"]
                while not self._stopped.is_set():
                    for event in watch.Watch().stream(self.core.list_pod_for_all_namespaces, field_selector=selector,
                                                      resource_version=version, timeout_seconds=WATCH_S):
                        pod = event["raw_object"]
                        if event["type"] == "ERROR":
                            raise RuntimeError(f"watch error: {pod}")  # 410 Gone: list again
                        version = pod["metadata"]["resourceVersion"]
                        if event["type"] == "DELETED":
                            self._forget(_key(pod))
                        else:
                            self._put(_key(pod), pod)
            except Exception:  # noqa: BLE001 - list and watch again, as a reflector does
                if not self._stopped.is_set():
                    log.exception("kubelet %s: pod watch failed; listing again", self.name)
                    self._stopped.wait(0.5)

    def _put(self, key: str, pod: dict) -> None:
        self._pods[key] = pod
        self._queue.put(("pod", key))

    def _forget(self, key: str) -> None:
        self._pods.pop(key, None)
        self._queue.put(("pod", key))

    def _work(self) -> None:
        while (item := self._queue.get()) is not None and not self._stopped.is_set():
            if self._silent.is_set():
                continue
            try:
                if item[0] == "pod":
                    self._reconcile(item[1])
                else:  # ("exited", key, uid)
                    run = self._runs.get(item[1])
                    if run is not None and run.uid == item[2]:
                        self._exited(item[1], run)
            except Exception:  # noqa: BLE001 - level-triggered: the next event of the pod reconciles again
                log.exception("kubelet %s failed on %r", self.name, item)

    def _reconcile(self, key: str) -> None:
        """Make the local process match the pod: start it, stop it for a deletion, kill it when the pod is gone."""
        pod, run = self._pods.get(key), self._runs.get(key)
        if run is not None and (pod is None or pod["metadata"]["uid"] != run.uid):
            if run.kill_timer is not None:
                run.kill_timer.cancel()
            run.kill_group()  # deleted with no grace, or replaced by a pod of the same name
            del self._runs[key]
            run = None
        if pod is None:
            return
        if pod["metadata"].get("deletionTimestamp"):
            self._delete(key, pod, run)
        elif run is None and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            self._start(key, pod)

    # --- starting --------------------------------------------------------------------------------------------
    def _secret(self, namespace: str, name: str) -> dict | None:
        try:
            return json.loads(self.core.read_namespaced_secret(name, namespace, _preload_content=False).data)
        except ApiException as exc:
            # 403: the Node authorizer has not yet linked the pod to its Secret (its graph follows the binding
            # a moment later); held, then tried again, as a missing one is.
            if exc.status in (403, 404):
                return None
            raise

    def _start(self, key: str, pod: dict) -> None:
        namespace, name = key.split("/", 1)
        container = pod["spec"]["containers"][0]
        pod_dir = self.root / "pods" / namespace / name
        run = _Run(uid=pod["metadata"]["uid"], container=container, ip=pod_ip(next(self._addresses)),
                   log_path=self.root / "logs" / namespace / name / f"{container['name']}.log")
        try:
            launch = materialise(pod, secrets=lambda secret: self._secret(namespace, secret), pod_dir=pod_dir,
                                 claims_dir=self.root / "claims", ip=run.ip)
        except ConfigError as error:
            self._waiting(pod, error.reason, error.message)
            timer = threading.Timer(CONFIG_RETRY_S, self._queue.put, args=(("pod", key),))
            timer.daemon = True
            timer.start()
            return
        run.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._runs[key] = run
        with run.log_path.open("wb") as out:
            run.process = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", *launch.command], env=launch.env, cwd=launch.cwd, stdin=subprocess.DEVNULL,
                                           stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        run.init = _first_child(run.process.pid)
        run.started_at, run.container_id = _now(), f"containerd://{uuid.uuid4().hex}"
        self._running(pod, run)
        self._spawn(self._wait, run.process, ("exited", key, run.uid))

    def _wait(self, process: subprocess.Popen, item: tuple) -> None:
        process.wait()
        self._queue.put(item)

    def _spawn(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name=f"kubelet-{self.name}")
        self._threads.append(thread)
        thread.start()

    # --- stopping --------------------------------------------------------------------------------------------
    def _delete(self, key: str, pod: dict, run: _Run | None) -> None:
        """A graceful deletion: SIGTERM to PID 1, SIGKILL to the group after the grace period, then the pod is
        removed (a delete with no grace, on the pod's uid) once its container has ended."""
        if run is None or not run.alive():
            if run is not None and not run.ended:
                return  # its exit is queued: the status is written first, then the pod removed
            self._runs.pop(key, None)
            self._remove(pod)
            return
        if run.deleting:
            return
        run.deleting = True
        run.signal_top(signal.SIGTERM)
        grace = pod["metadata"].get("deletionGracePeriodSeconds")
        run.kill_timer = threading.Timer(30 if grace is None else grace, run.kill_group)
        run.kill_timer.daemon = True
        run.kill_timer.start()

    def _remove(self, pod: dict) -> None:
        metadata = pod["metadata"]
        try:
            self.core.delete_namespaced_pod(metadata["name"], metadata["namespace"], _preload_content=False,
                                            body={"gracePeriodSeconds": 0, "preconditions": {"uid": metadata["uid"]}})
        except ApiException as exc:
            if exc.status not in (404, 409):  # gone already, or another pod of that name now
                raise

    def _exited(self, key: str, run: _Run) -> None:
        """PID 1 ended: the rest of its group goes with it, and the pod's status says how it ended."""
        if run.kill_timer is not None:
            run.kill_timer.cancel()
        run.kill_group()
        code = run.process.returncode
        code = 128 - code if code < 0 else code  # killed by signal N: 128 + N, as runtimes report
        pod = self._pods.get(key)
        if pod is None or pod["metadata"]["uid"] != run.uid:
            self._runs.pop(key, None)
            return
        self._terminated(pod, run, code)
        run.ended = True
        if pod["metadata"].get("deletionTimestamp"):
            self._runs.pop(key, None)
            self._remove(pod)

    # --- status ----------------------------------------------------------------------------------------------
    def _status(self, pod: dict, run: _Run | None, **fields) -> None:
        addresses = {"podIP": run.ip, "podIPs": [{"ip": run.ip}]} if run is not None else {}
        status = {"hostIP": NODE_IP, "hostIPs": [{"ip": NODE_IP}], **addresses,
                  "startTime": (pod.get("status") or {}).get("startTime") or _now(), **fields}
        metadata = pod["metadata"]
        # A merge patch: conditions and containerStatuses are replaced whole (a strategic one would merge a
        # running state into a terminated one, which validation refuses).
        self.core.patch_namespaced_pod_status(metadata["name"], metadata["namespace"], {"status": status},
                                              _content_type="application/merge-patch+json", _preload_content=False)

    def _waiting(self, pod: dict, reason: str, message: str) -> None:
        container = pod["spec"]["containers"][0]
        unready = f"containers with unready status: [{container['name']}]"
        self._status(pod, None, phase="Pending",
                     conditions=pod_conditions(_now(), ready=False, reason="ContainersNotReady", message=unready),
                     containerStatuses=[container_status(container, {"waiting": {"reason": reason, "message": message}})])

    def _running(self, pod: dict, run: _Run) -> None:
        self._status(pod, run, phase="Running", conditions=pod_conditions(_now(), ready=True),
                     containerStatuses=[container_status(run.container, {"running": {"startedAt": run.started_at}},
                                                         ready=True, container_id=run.container_id)])

    def _terminated(self, pod: dict, run: _Run, code: int) -> None:
        terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error", "startedAt": run.started_at,
                      "finishedAt": _now(), "containerID": run.container_id}
        self._status(pod, run, phase="Succeeded" if code == 0 else "Failed",
                     conditions=pod_conditions(_now(), ready=False, reason="PodCompleted"),
                     containerStatuses=[container_status(run.container, {"terminated": terminated},
                                                         container_id=run.container_id)])

    # --- logs ------------------------------------------------------------------------------------------------
    def _serve_logs(self) -> None:
        kubelet = self

        class ContainerLogs(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                url = urllib.parse.urlsplit(self.path)
                parts = url.path.strip("/").split("/")
                if len(parts) != 4 or parts[0] != "containerLogs":
                    self.send_error(404)
                    return
                run = kubelet._runs.get(f"{parts[1]}/{parts[2]}")
                if run is None or not run.log_path.exists():
                    self.send_error(404, f"container {parts[3]} of pod {parts[1]}/{parts[2]} is not on this node")
                    return
                follow = urllib.parse.parse_qs(url.query).get("follow") == ["true"]
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()  # no length: HTTP/1.0, the body ends when the connection closes
                with run.log_path.open("rb") as log_file:
                    while True:
                        chunk = log_file.read(65536)
                        if chunk:
                            self.wfile.write(chunk)
                            self.wfile.flush()
                        elif not follow or not run.alive() or kubelet._stopped.is_set():
                            if not log_file.read(1):  # written between the last read and the exit
                                return
                            log_file.seek(-1, os.SEEK_CUR)
                        else:
                            time.sleep(0.05)

            def log_message(self, *_args) -> None:
                pass

        self._port = free_port()
        server = ThreadingHTTPServer(("127.0.0.1", self._port), ContainerLogs)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.plane.pki.serving_cert, self.plane.pki.serving_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        server.daemon_threads = True
        self._server = server
        self._spawn(server.serve_forever)


def _first_child(pid: int, timeout: float = 5.0) -> int | None:
    """The process unshare forked (PID 1 of the new namespace); None if unshare ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except FileNotFoundError:
            return None
        if children:
            return int(children[0])
        time.sleep(0.01)
    return None


def _key(pod: dict) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
