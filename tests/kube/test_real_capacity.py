"""Free capacity as kube-scheduler counts it, on the test control plane (issue 34, defect 4).

    .venv/bin/python -m pytest tests/kube/test_real_capacity.py -v

What the engine counts free on a node must be what kube-scheduler will bind there: devices held by pods
the engine did not place (a DaemonSet's, another scheduler's) and by pods being deleted (ours included: a
pod holds its devices until it is gone) are not free. Each test fills a node's devices that way, reads the
node through the backend's ``poll_nodes`` (the inventory the engine places on), and asks kube-scheduler for
one more device there: it must refuse, as the inventory says, or the engine would place a pod kube-scheduler
then leaves Pending with ``FailedScheduling`` over and over.
"""

from __future__ import annotations

import copy
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest
from kubernetes import client

from jupyter_hetero.backends.base import Launch, Placed
from jupyter_hetero.backends.kubernetes.backend import KubernetesBackend
from jupyter_hetero.backends.kubernetes.config import KubernetesConfig

from ..harness import until
from .cluster_fixtures import control_plane, hetero_namespace, kube_binaries, kwok, kwok_nodes  # noqa: F401
from .nodes import KWOK_ANNOTATION, kwok_node

GPU = "nvidia.com/gpu"
# A namespace without Pod Security's `restricted`, where a platform's node agents run.
AGENTS = "node-agents"


@pytest.fixture(scope="module")
def admin(control_plane) -> client.CoreV1Api:
    return client.CoreV1Api(control_plane.api_client())


@pytest.fixture(scope="module")
def agents(admin):
    admin.create_namespace({"metadata": {"name": AGENTS}})
    yield AGENTS
    admin.delete_namespace(AGENTS)


@pytest.fixture
def backend(hetero_namespace, kwok_nodes):
    started = KubernetesBackend(config=KubernetesConfig(kubeconfig=str(hetero_namespace.kubeconfig),
                                                        namespace=hetero_namespace.name, watch_timeout=30))
    started.start(timeout=60)
    yield started
    started.close()


class Inventory:
    """The backend's inventory as the engine last got it (``poll_nodes`` answers only when something changed)."""

    def __init__(self, backend: KubernetesBackend):
        self.backend = backend
        self.seen = None

    def now(self):
        seen = self.backend.poll_nodes()
        if seen is not None:
            self.seen = seen
        return self.seen

    def held_devices(self, node: str) -> int:
        held = self.now().held.get(node)
        return held.devices if held is not None else 0

    def state(self, node: str) -> str | None:
        return self.now().states.get(node)

    def capability(self, node: str):
        return next(c for c in self.now().capabilities if c.name == node)


@pytest.fixture
def inventory(backend) -> Inventory:
    return Inventory(backend)


def _gpus(node: dict) -> int:
    return int(node["status"]["allocatable"][GPU])


def _one_more_gpu_is_refused(admin: client.CoreV1Api, namespace: str, node: str) -> str:
    """kube-scheduler's answer to a pod asking one device of ``node``: the Unschedulable message (fails if bound)."""
    name = f"one-more-{node}"
    admin.create_namespaced_pod(namespace, {
        "metadata": {"name": name},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "tolerations": [{"operator": "Exists"}],
                 "containers": [{"name": "probe", "image": "probe",
                                 "resources": {"requests": {GPU: "1", "cpu": "10m", "memory": "16Mi"},
                                               "limits": {GPU: "1", "cpu": "10m", "memory": "16Mi"}}}]}})
    try:
        def answered():
            pod = admin.read_namespaced_pod(name, namespace)
            assert not pod.spec.node_name, f"kube-scheduler bound {name} to {pod.spec.node_name}: a device was free"
            return next((c.message for c in pod.status.conditions or () if c.type == "PodScheduled"
                         and c.status == "False" and c.reason == "Unschedulable"), None)
        return until(answered, f"kube-scheduler to answer pod {name}", timeout=30)
    finally:
        admin.delete_namespaced_pod(name, namespace, grace_period_seconds=0)


def test_a_daemonsets_pod_and_another_schedulers_pod_hold_a_nodes_devices(admin, agents, inventory, kwok_nodes):
    node = "dgx-a100-01"
    half = _gpus(kwok_nodes[node]) // 2
    resources = {"requests": {GPU: str(half), "cpu": "100m", "memory": "64Mi"},
                 "limits": {GPU: str(half), "cpu": "100m", "memory": "64Mi"}}
    apps = client.AppsV1Api(admin.api_client)
    labels = {"app": "gpu-agent"}
    apps.create_namespaced_daemon_set(agents, {
        "metadata": {"name": "gpu-agent"},
        "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node}, "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "agent", "image": "agent", "resources": resources}]}}}})
    # Bound by its own scheduler (here: named at creation, as a scheduler's bind would), never kube-scheduler.
    admin.create_namespaced_pod(agents, {"metadata": {"name": "batch-elsewhere"}, "spec": {
        "schedulerName": "volcano", "nodeName": node, "tolerations": [{"operator": "Exists"}],
        "containers": [{"name": "main", "image": "main", "resources": resources}]}})
    try:
        until(lambda: inventory.held_devices(node) == 2 * half,
              f"the inventory to count the {2 * half} devices the DaemonSet's and volcano's pods hold on {node}")
        message = _one_more_gpu_is_refused(admin, agents, node)
        assert f"Insufficient {GPU}" in message, message
    finally:
        apps.delete_namespaced_daemon_set("gpu-agent", agents)
        admin.delete_namespaced_pod("batch-elsewhere", agents, grace_period_seconds=0)
    until(lambda: inventory.held_devices(node) == 0, f"the devices on {node} to be free once the pods are gone")


def _heartbeat(admin: client.CoreV1Api, name: str, stop: threading.Event) -> None:
    """Posts the node Ready every 2 s, as a kubelet does, until ``stop``; it never runs or deletes a pod."""
    while True:
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        admin.patch_node_status(name, {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
             "lastHeartbeatTime": now, "lastTransitionTime": now}]}})
        if stop.wait(2):
            return


def test_our_pod_being_deleted_holds_its_devices_until_it_is_gone(admin, agents, backend, inventory, kwok_nodes,
                                                                     tmp_path: Path):
    # kwok deletes a pod the moment it is asked to (it drops finalizers too), so the node here is one whose
    # "kubelet" only heartbeats: a pod deleted on it stays Terminating, holding its devices, as on a node whose
    # kubelet is slow to stop the containers.
    node = "a100-slow-kubelet"
    body = kwok_node(copy.deepcopy(kwok_nodes["dgx-a100-01"]))
    body["metadata"]["name"] = body["metadata"]["labels"]["kubernetes.io/hostname"] = node
    del body["metadata"]["annotations"][KWOK_ANNOTATION]
    admin.create_node(body)
    stop = threading.Event()
    beating = threading.Thread(target=_heartbeat, args=(admin, node, stop), daemon=True)
    beating.start()
    handle = None
    try:
        until(lambda: inventory.state(node) == "ready", f"{node} to be ready")
        devices = _gpus(body)
        accelerator = inventory.capability(node).accelerator
        placed = Placed(kind="job", tenant="test", user="capacity-test", queue="batch", template="capacity-test",
                        flavor="a100", replicas=1, image="python:3.12-slim", cpu_milli=500, memory_mib=512,
                        devices=tuple((1000, accelerator.memory_mib) for _ in range(devices)),
                        accelerator=accelerator)
        launch = Launch(workload_id=900_000_101, attempt=1, replica=0, node=node,
                        argv=["command", "--", "sleep", "3600"], env={}, cwd=tmp_path,
                        log_path=tmp_path / "job.log", exit_path=tmp_path / "exit.json", placed=placed)
        handle = backend.launch(launch)
        namespace, name = handle.pod.split("/", 1)
        until(lambda: admin.read_namespaced_pod(name, namespace).spec.node_name == node,
              f"kube-scheduler to bind {handle.pod} to {node}")
        assert inventory.held_devices(node) == 0, "our running pod is the engine's own reservation, not held"
        # The engine released the workload when it asked for the stop; the pod keeps the devices until it is gone.
        backend.signal_stop(handle)
        until(lambda: admin.read_namespaced_pod(name, namespace).metadata.deletion_timestamp, f"{name} terminating")
        until(lambda: inventory.held_devices(node) == devices,
              f"the inventory to count the {devices} devices our terminating pod {handle.pod} holds on {node}")
        message = _one_more_gpu_is_refused(admin, agents, node)
        assert f"Insufficient {GPU}" in message, message
        admin.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        until(lambda: inventory.held_devices(node) == 0, f"the devices on {node} to be free once {name} is gone")
    finally:
        stop.set()
        beating.join(5)
        if handle is not None:
            backend.kill(handle)
        admin.delete_node(node)

