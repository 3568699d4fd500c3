"""A kubelet for the fake cluster: pods bound to its nodes run as real local processes.

```python
kubelet = LocalKubelet(server, ["node-a", "node-b"], tmp_path / "kubelet").start()
...                       # pods bound to node-a/node-b run; their status and logs reach the API
kubelet.lose_node("node-a")
kubelet.stop()            # nothing it started is left running
```
One worker thread makes every status change, in order; process waiters, probes and timers only queue
work for it. Status goes through the server's status path in-process, so watchers see ordinary
MODIFIED events.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import signal
import subprocess
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import psutil

from tests.kube.apiserver import FakeApiServer
from tests.kube.containers import (
    NODE_IP,
    ConfigError,
    container_status,
    materialise,
    pod_conditions,
    pod_ip,
)
from tests.kube.nodes import ready_node
from tests.kube.store import now_rfc3339

__all__ = ["LocalKubelet", "leftover_processes"]

log = logging.getLogger(__name__)

IMAGE_PULL_BACKOFF_S = 0.3
PROBE_INTERVAL_S = 0.1
UNREACHABLE = "node.kubernetes.io/unreachable"


def leftover_processes(root: Path) -> list[psutil.Process]:
    """Live processes working under ``root``: every pod without a ``workingDir`` starts in its directory there."""
    found = []
    for process in psutil.process_iter(["cwd", "status"]):
        cwd = process.info.get("cwd") or ""
        if process.info.get("status") != psutil.STATUS_ZOMBIE and cwd.startswith(str(root)):
            found.append(process)
    return found



@dataclass
class _Run:
    """One pod this kubelet took on: its process (once started) and how it is being ended."""

    uid: str
    node: str
    container: dict
    ip: str
    process: subprocess.Popen | None = None
    started_at: str = ""
    container_id: str = ""
    ending: str = ""  # "" | "deleting" | "oom" | "evicted" | "lost"
    message: str = ""
    ready: bool = False
    waiting_for_config: bool = False  # held by a missing secret: retried when secrets change
    timers: list[threading.Timer] = field(default_factory=list)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, signum: int) -> None:
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass


class LocalKubelet:
    """Runs the pods bound to ``nodes`` as local processes under ``root``, reporting through ``server``."""

    def __init__(self, server: FakeApiServer, nodes: Iterable[str], root: Path) -> None:
        self.server = server
        self.nodes = tuple(nodes)
        self.root = Path(root)
        self._runs: dict[tuple[str, str], _Run] = {}
        self._lost: set[str] = set()
        self._queue: queue.Queue = queue.Queue()
        self._stopped = threading.Event()
        self._worker: threading.Thread | None = None
        self._threads: list[threading.Thread] = []
        self._pods_started = itertools.count()  # each pod its own address

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self) -> LocalKubelet:
        """Register any of the nodes the server lacks as Ready (as a kubelet does), then run their pods."""
        self.root.mkdir(parents=True, exist_ok=True)
        for node in self.nodes:
            if self.server.get("Node", node) is None:
                self.server.put(ready_node(node))
        self.server.subscribe(self._on_change)
        self._worker = threading.Thread(target=self._work, name="local-kubelet", daemon=True)
        self._worker.start()
        for pod in self.server.list("Pod"):
            self._queue.put(("pod", pod["metadata"]["namespace"], pod["metadata"]["name"]))
        return self

    def stop(self) -> None:
        """Stop reporting and kill every process this kubelet started, children included."""
        self.server.unsubscribe(self._on_change)
        self._stopped.set()
        self._queue.put(None)
        if self._worker is not None:
            self._worker.join(10)
        for run in list(self._runs.values()):
            for timer in run.timers:
                timer.cancel()
            run.signal(signal.SIGKILL)
            if run.process is not None:
                try:
                    run.process.wait(10)
                except subprocess.TimeoutExpired:
                    log.warning("pod process %s outlived SIGKILL", run.process.pid)
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.stop()

    # --- test hooks ------------------------------------------------------------------------------
    def lose_node(self, name: str) -> None:
        """The node goes silent: its processes die unreported, the node turns Ready=Unknown and unreachable."""
        self._call(lambda: self._lose_node(name))

    def oom_kill(self, namespace: str, pod: str) -> None:
        """The kernel's OOM killer ends the pod's container: SIGKILL, reported as OOMKilled with 137."""
        self._call(lambda: self._end(namespace, pod, "oom", ""))

    def evict(self, namespace: str, pod: str, message: str) -> None:
        """The kubelet evicts the pod under node pressure: killed, phase Failed, reason Evicted."""
        self._call(lambda: self._end(namespace, pod, "evicted", message))

    # --- the worker ------------------------------------------------------------------------------
    def _on_change(self, _type: str, obj: dict) -> None:
        if obj["kind"] == "Pod":
            self._queue.put(("pod", obj["metadata"]["namespace"], obj["metadata"]["name"]))
        elif obj["kind"] == "Secret":
            self._queue.put(("secrets", obj["metadata"]["namespace"]))

    def _call(self, action: Callable[[], None]) -> None:
        """Run ``action`` in the worker, between its status writes; its exception is raised here."""
        done, failure = threading.Event(), []

        def guarded() -> None:
            try:
                action()
            except Exception as error:  # noqa: BLE001 - raised again in the caller
                failure.append(error)

        self._queue.put(("call", guarded, done))
        if not done.wait(10):
            raise TimeoutError("the local kubelet did not act within 10 s")
        if failure:
            raise failure[0]

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None or self._stopped.is_set():
                return
            try:
                if item[0] == "call":
                    try:
                        item[1]()
                    finally:
                        item[2].set()
                elif item[0] == "pod":
                    self._reconcile(item[1], item[2])
                elif item[0] == "secrets":
                    self._retry_config(item[1])
                else:  # ("exited" | "ready" | "backoff", namespace, name, uid)
                    handler = {"exited": self._exited, "ready": self._ready, "backoff": self._backoff}[item[0]]
                    run = self._runs.get((item[1], item[2]))
                    if run is not None and run.uid == item[3]:
                        handler(item[1], item[2], run)
            except Exception:
                log.exception("local kubelet failed on %r", item)

    def _reconcile(self, namespace: str, name: str) -> None:
        """Make the local process match the pod: start it, stop it for a deletion, forget it when gone."""
        key = (namespace, name)
        pod = self.server.get("Pod", name, namespace)
        run = self._runs.get(key)
        if run is not None and (pod is None or pod["metadata"]["uid"] != run.uid):
            run.signal(signal.SIGKILL)  # removed by force, or replaced by a pod of the same name
            self._runs.pop(key)
            run = None
        if pod is None:
            return
        node = pod["spec"].get("nodeName")
        if node not in self.nodes or node in self._lost:
            return
        if pod["metadata"].get("deletionTimestamp"):
            self._delete(pod, run)
        elif run is None and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            self._start(pod)

    def _retry_config(self, namespace: str) -> None:
        """A secret changed: pods held for a missing one try again."""
        for (pod_namespace, name), run in list(self._runs.items()):
            if pod_namespace == namespace and run.waiting_for_config:
                del self._runs[(pod_namespace, name)]
                self._reconcile(pod_namespace, name)

    def _delete(self, pod: dict, run: _Run | None) -> None:
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        if run is None or not run.alive():
            self._runs.pop((namespace, name), None)
            self.server.remove("Pod", name, namespace)
            return
        if run.ending == "deleting":
            return
        run.ending = "deleting"
        self.server.record_event(pod=pod, reason="Killing", type="Normal",
                                 message=f"Stopping container {run.container['name']}")
        run.signal(signal.SIGTERM)
        grace = pod["metadata"].get("deletionGracePeriodSeconds", 30)
        timer = threading.Timer(grace, run.signal, args=(signal.SIGKILL,))
        timer.daemon = True
        run.timers.append(timer)
        timer.start()

    # --- starting --------------------------------------------------------------------------------
    def _start(self, pod: dict) -> None:
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        container = pod["spec"]["containers"][0]
        run = _Run(uid=pod["metadata"]["uid"], node=pod["spec"]["nodeName"], container=container,
                   ip=pod_ip(next(self._pods_started)))
        now = now_rfc3339()
        image = container.get("image", "")
        if "does-not-exist" in image:
            self._runs[(namespace, name)] = run
            why = f'failed to pull and unpack image "{image}": not found'
            self._waiting(pod, "ErrImagePull", why, now)
            self.server.record_event(pod=pod, reason="Failed", message=f'Failed to pull image "{image}": {why}')
            self.server.record_event(pod=pod, reason="Failed", message="Error: ErrImagePull")
            self._later(run, IMAGE_PULL_BACKOFF_S, ("backoff", namespace, name, run.uid))
            return
        try:
            launch = materialise(pod, secrets=lambda secret: self.server.get("Secret", secret, namespace),
                                 pod_dir=self.root / name, claims_dir=self.root / "claims", ip=run.ip)
        except ConfigError as error:
            run.waiting_for_config = True
            self._runs[(namespace, name)] = run
            self._waiting(pod, error.reason, error.message, now)
            self.server.record_event(pod=pod, reason=error.event_reason, message=error.message)
            return
        log_path = self.root / name / f"{container['name']}.log"
        self.server.serve_logs(namespace, name, log_path)
        self._runs[(namespace, name)] = run
        try:
            with log_path.open("wb") as log_file:
                run.process = subprocess.Popen(
                    launch.command, env=launch.env, cwd=launch.cwd, stdin=subprocess.DEVNULL,
                    stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
                )
        except OSError as error:
            run.started_at = now
            self._finish(pod, run, exit_code=128, reason="StartError", message=str(error))
            return
        run.started_at, run.container_id = now, f"containerd://{uuid.uuid4().hex}"
        for reason, message in (("Pulled", f'Container image "{image}" already present on machine'),
                                ("Created", f"Created container: {container['name']}"),
                                ("Started", f"Started container {container['name']}")):
            self.server.record_event(pod=pod, reason=reason, message=message, type="Normal")
        probe = (container.get("readinessProbe") or {}).get("httpGet")
        run.ready = probe is None
        self._running(pod, run)
        self._spawn(self._wait, run.process, ("exited", namespace, name, run.uid))
        if probe is not None:
            self._spawn(self._probe, run, container, probe, ("ready", namespace, name, run.uid))

    def _spawn(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _later(self, run: _Run, delay: float, item: tuple) -> None:
        timer = threading.Timer(delay, self._queue.put, args=(item,))
        timer.daemon = True
        run.timers.append(timer)
        timer.start()

    def _wait(self, process: subprocess.Popen, item: tuple) -> None:
        process.wait()
        self._queue.put(item)

    def _probe(self, run: _Run, container: dict, probe: dict, item: tuple) -> None:
        """Poll an HTTP readiness probe until it answers 2xx, then tell the worker."""
        port = probe.get("port")
        if isinstance(port, str) and not port.isdigit():
            port = next((p["containerPort"] for p in container.get("ports") or [] if p.get("name") == port), 0)
        url = f"http://{probe.get('host') or run.ip}:{port}{probe.get('path') or '/'}"
        while run.alive() and not self._stopped.is_set():
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if 200 <= response.status < 300:
                        self._queue.put(item)
                        return
            except (urllib.error.URLError, OSError):
                pass
            self._stopped.wait(PROBE_INTERVAL_S)

    # --- status ----------------------------------------------------------------------------------
    def _status(self, pod: dict, **fields) -> None:
        run = self._runs.get((pod["metadata"]["namespace"], pod["metadata"]["name"]))
        addresses = {"podIP": run.ip, "podIPs": [{"ip": run.ip}]} if run is not None else {}
        base = {"hostIP": NODE_IP, "hostIPs": [{"ip": NODE_IP}], **addresses,
                "qosClass": (pod.get("status") or {}).get("qosClass", "BestEffort"),
                "startTime": (pod.get("status") or {}).get("startTime") or now_rfc3339()}
        self.server.update_status("Pod", pod["metadata"]["name"], {**base, **fields}, pod["metadata"]["namespace"])

    def _waiting(self, pod: dict, reason: str, message: str, now: str) -> None:
        container = pod["spec"]["containers"][0]
        unready = f"containers with unready status: [{container['name']}]"
        self._status(pod, phase="Pending",
                     conditions=pod_conditions(now, ready=False, reason="ContainersNotReady", message=unready),
                     containerStatuses=[container_status(container, {"waiting": {"reason": reason, "message": message}})])

    def _running(self, pod: dict, run: _Run) -> None:
        unready = f"containers with unready status: [{run.container['name']}]"
        self._status(pod, phase="Running",
                     conditions=pod_conditions(now_rfc3339(), ready=run.ready, reason="ContainersNotReady",
                                               message=unready),
                     containerStatuses=[container_status(run.container, {"running": {"startedAt": run.started_at}},
                                                         ready=run.ready, container_id=run.container_id)])

    def _ready(self, namespace: str, name: str, run: _Run) -> None:
        pod = self.server.get("Pod", name, namespace)
        if pod is not None and run.alive() and not run.ending:
            run.ready = True
            self._running(pod, run)

    def _backoff(self, namespace: str, name: str, run: _Run) -> None:
        pod = self.server.get("Pod", name, namespace)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        image = run.container.get("image", "")
        self._waiting(pod, "ImagePullBackOff", f'Back-off pulling image "{image}"', now_rfc3339())
        self.server.record_event(pod=pod, reason="BackOff", message=f'Back-off pulling image "{image}"')
        self.server.record_event(pod=pod, reason="Failed", message="Error: ImagePullBackOff")

    def _exited(self, namespace: str, name: str, run: _Run) -> None:
        """The container's main process ended: clean up its group and report why it ended."""
        for timer in run.timers:
            timer.cancel()
        run.signal(signal.SIGKILL)  # what it left behind in its group ends with it, as in a container
        if run.ending == "lost":
            return
        pod = self.server.get("Pod", name, namespace)
        if pod is None:
            self._runs.pop((namespace, name), None)
            return
        if run.ending == "deleting" or pod["metadata"].get("deletionTimestamp"):
            self._runs.pop((namespace, name), None)
            self.server.remove("Pod", name, namespace)
            return
        code = run.process.returncode
        code = 128 - code if code < 0 else code  # killed by signal N -> 128 + N, as runtimes report
        if run.ending == "oom":
            self._finish(pod, run, exit_code=137, reason="OOMKilled")
        elif run.ending == "evicted":
            self._finish(pod, run, exit_code=137, reason="Error", evicted=run.message)
        else:
            self._finish(pod, run, exit_code=code, reason="Completed" if code == 0 else "Error")

    def _finish(self, pod: dict, run: _Run, *, exit_code: int, reason: str, message: str = "",
                evicted: str | None = None) -> None:
        now = now_rfc3339()
        terminated = {"exitCode": exit_code, "reason": reason, "startedAt": run.started_at, "finishedAt": now}
        if message:
            terminated["message"] = message
        if run.container_id:
            terminated["containerID"] = run.container_id
        phase = "Succeeded" if exit_code == 0 and evicted is None else "Failed"
        conditions = pod_conditions(now, ready=False, reason="PodCompleted")
        fields: dict = {"phase": phase, "conditions": conditions,
                        "containerStatuses": [container_status(run.container, {"terminated": terminated},
                                                               container_id=run.container_id)]}
        if evicted is not None:
            fields.update(reason="Evicted", message=evicted)
            conditions.insert(0, {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                                  "message": evicted, "lastTransitionTime": now, "lastProbeTime": None})
        self._status(pod, **fields)

    # --- node loss, OOM, eviction ----------------------------------------------------------------
    def _end(self, namespace: str, name: str, ending: str, message: str) -> None:
        run = self._runs.get((namespace, name))
        if run is None or not run.alive():
            raise LookupError(f"pod {namespace}/{name} is not running on this kubelet")
        run.ending, run.message = ending, message
        if ending == "evicted":
            pod = self.server.get("Pod", name, namespace)
            self.server.record_event(pod=pod, reason="Evicted", message=message)
        run.signal(signal.SIGKILL)

    def _lose_node(self, name: str) -> None:
        if name not in self.nodes:
            raise LookupError(f"{name} is not one of this kubelet's nodes")
        self._lost.add(name)
        for run in self._runs.values():
            if run.node == name:
                run.ending = "lost"
                for timer in run.timers:
                    timer.cancel()
                run.signal(signal.SIGKILL)
        node = self.server.get("Node", name)
        if node is None:
            return
        now = now_rfc3339()
        for condition in node["status"]["conditions"]:
            condition.update(status="Unknown", reason="NodeStatusUnknown",
                             message="Kubelet stopped posting node status.", lastTransitionTime=now)
        # What the node lifecycle controller adds to a node that stopped answering.
        taints = [t for t in node["spec"].get("taints") or [] if t.get("key") != UNREACHABLE]
        taints += [{"key": UNREACHABLE, "effect": "NoSchedule", "timeAdded": now},
                   {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": now}]
        node["spec"]["taints"] = taints
        self.server.put(node)
        for pod in self.server.list("Pod"):
            if pod["spec"].get("nodeName") != name or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                continue
            status = pod.get("status") or {}
            conditions = [
                {**c, "status": "False", "lastTransitionTime": now} if c.get("type") == "Ready" else c
                for c in status.get("conditions") or []
            ]
            self.server.update_status("Pod", pod["metadata"]["name"], {**status, "conditions": conditions},
                                      pod["metadata"]["namespace"])
            self.server.record_event(pod=pod, reason="NodeNotReady", message="Node is not ready",
                                     component="node-controller")
