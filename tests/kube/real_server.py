"""A real jupyter-server with the extension on the kubernetes backend, against the test control plane.

```python
from tests.kube.real_server import kubelet_job, real_cluster, work_claim, ...  # and the fixtures they build on

async def test_a_job(real_cluster, api, wait_for):      # real_cluster before api: it configures the server
    job = await api("workloads", "POST", kubelet_job("print(42)"))
    real_cluster.pods_of(job["id"])                     # its pods, as the admin lists them
    real_cluster.scheduled(pod_name)                    # kube-scheduler's Scheduled events of one of them
```

The server runs as rbac.yaml's ServiceAccount (``hetero_namespace.kubeconfig``, a TokenRequest token), never as
the admin, in the namespace ``hetero`` (Pod Security ``restricted``, a ResourceQuota, a LimitRange). Its work
directory reaches the pods as a platform team gives it: ``KubernetesConfig.work_volume = {"claim": "hetero-work"}``,
a PersistentVolumeClaim bound by the controller manager's PV controller to a PersistentVolume made for it (Pod
Security ``restricted`` forbids a pod's hostPath; kube-scheduler refuses a pod whose claim is unbound). The
:class:`RealKubelet` maps a pod's claim to ``<its root>/claims/<claim>``; there a link to the test's work
directory makes the runner's exit records, the job's checkpoints and outputs land where the server reads them,
as a shared volume does.

The catalog is the shipped one with one flavor more, ``local-kubelet``: CPU nodes whose instance type is a local
kubelet's (:data:`KUBELET_TYPES`). Kwok's nodes (the CPU-only ``cpu-worker-21`` among them) are in the same
cluster and run no container; the templates the tests use (data preprocessing, interactive, online inference)
ask only for ``local-kubelet``, so the engine places their work on a node whose pods really run.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from jupyter_hetero.backends.kubernetes.config import DEFAULT_TOLERATIONS
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH

from .cluster_fixtures import (  # noqa: F401 - fixtures this module's build on, re-exported for the tests
    FAST_FAILOVER,
    WORKLOAD_LABEL,
    HeteroNamespace,
    control_plane,
    hetero_namespace,
    kube_binaries,
    kwok,
    kwok_nodes,
    local_kubelet,
)
from .control_plane import ControlPlane
from .real_kubelet import RealKubelet

__all__ = ["KUBELET_FLAVOR", "KUBELET_NODE", "KUBELET_TYPES", "RealCluster", "WORK_CLAIM", "kubelet_catalog",
           "kubelet_job", "real_cluster", "work_claim"]

WORK_CLAIM = "hetero-work"
KUBELET_FLAVOR = "local-kubelet"
KUBELET_NODE = "local-kubelet-1"  # cluster_fixtures' local_kubelet
# The instance types of the local kubelets: cluster_fixtures' (local-cpu) and one a test starts (local-cpu-spare).
KUBELET_TYPES = ("local-cpu", "local-cpu-spare")
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
MANAGED = "app.kubernetes.io/managed-by=jupyter-hetero"


def kubelet_job(code: str, *args: str, queue: str = "batch", cpu: float = 1, **extra) -> dict:
    """The body of ``POST workloads``: a data-preprocessing job running ``python -c code *args`` on a kubelet node."""
    return {"kind": "job", "template": "data-preprocessing", "queue": queue,
            "command": ["python", "-c", code, *args], "parameters": {"cpu": cpu, "memory": "1Gi"}, **extra}


def kubelet_catalog(path: Path) -> str:
    """The shipped catalog, with the flavor ``local-kubelet`` first and the templates the tests use asking for it
    alone (small requests: the node has 8 CPUs and 16 GiB); the batch queue retries no failure (a failed job ends
    failed at once) but still requeues what a preemption or a lost node ended, and resumes it from its checkpoint."""
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    data["flavors"].insert(0, {
        "name": KUBELET_FLAVOR, "display": {"en": "Local kubelet CPU", "zh": "本地 kubelet CPU"},
        "selector": {"family": "cpu", "labels": [{"key": INSTANCE_TYPE, "operator": "In", "values": list(KUBELET_TYPES)}]},
        "price_per_hour": 0.04, "accelerator_weight": 0})
    small = {"cpu": 1, "memory": "1Gi"}
    sizes = [{"name": "cpu", "type": "float", "default": 1, "min": 1, "max": 8},
             {"name": "memory", "type": "memory", "default": "1Gi", "min": "512Mi", "max": "8Gi"}]
    cpu_variant = {"family": "cpu", "image": "quay.io/jupyter/scipy-notebook:2024-10-07"}
    changes = {
        "data-preprocessing": {"request": small, "flavors": [KUBELET_FLAVOR], "parameters": sizes},
        "interactive": {"request": small, "flavors": [KUBELET_FLAVOR], "parameters": sizes, "variants": [cpu_variant]},
        "online-inference": {"request": {"cpu": 1, "memory": "512Mi"}, "flavors": [KUBELET_FLAVOR],
                             "variants": [cpu_variant],
                             "parameters": [{"name": "replicas", "type": "int", "default": 1, "min": 1, "max": 4}]},
    }
    for template in data["templates"]:
        template.update(changes.get(template["name"], {}))
    for queue in data["queues"]:
        if queue["name"] == "batch":
            queue["failure"] = {"retries": 0, "requeue_on_node_loss": True, "resume_from_checkpoint": True}
    for tenant in data["tenants"]:
        tenant["quotas"][KUBELET_FLAVOR] = {"nominal": {"cpu": 64, "memory": "256Gi"}}
    target = path / "kubelet-catalog.yaml"
    target.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return str(target)


@pytest.fixture(scope="session")
def work_claim(control_plane, hetero_namespace) -> str:
    """The claim ``hetero-work`` in the workload namespace, bound by the PV controller to a volume made for it."""
    core = client.CoreV1Api(control_plane.api_client())
    volume = f"{hetero_namespace.name}-{WORK_CLAIM}"
    # Pre-bound both ways (the volume's claimRef, the claim's volumeName), with no storage class: the PV
    # controller completes the binding and no provisioner is involved. The path is never used: the local
    # kubelet serves claims from its own root.
    core.create_persistent_volume({
        "metadata": {"name": volume},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany"], "storageClassName": "",
                 "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/srv/hetero/work"},
                 "claimRef": {"namespace": hetero_namespace.name, "name": WORK_CLAIM}}})
    core.create_namespaced_persistent_volume_claim(hetero_namespace.name, {
        "metadata": {"name": WORK_CLAIM},
        "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": volume,
                 "resources": {"requests": {"storage": "10Gi"}}}})
    deadline = time.monotonic() + 30
    while core.read_namespaced_persistent_volume_claim(WORK_CLAIM, hetero_namespace.name).status.phase != "Bound":
        if time.monotonic() > deadline:
            pytest.fail(f"claim {WORK_CLAIM} was not bound in 30 s:\n{control_plane.logs()}", pytrace=False)
        time.sleep(0.1)
    return WORK_CLAIM


@dataclass
class RealCluster:
    """What a test sees of the cluster beside the server's API: the admin's client, the local kubelet, the server's
    work directory (shared with the pods through the claim)."""

    plane: ControlPlane
    admin: client.CoreV1Api
    namespace: str
    kubelet: RealKubelet
    work_dir: Path
    claim: str

    def share_work(self, kubelet: RealKubelet) -> None:
        """The kubelet's local copy of the claim is the server's work directory, as a shared volume would be."""
        claims = kubelet.root / "claims"
        claims.mkdir(parents=True, exist_ok=True)
        link = claims / self.claim
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(self.work_dir, target_is_directory=True)

    def pods_of(self, workload_id: int) -> list[client.V1Pod]:
        return self.admin.list_namespaced_pod(self.namespace, label_selector=f"{WORKLOAD_LABEL}={workload_id}").items

    def scheduled(self, pod: str) -> list[client.CoreV1Event]:
        """The ``Scheduled`` events of the pod ``pod`` (its name): kube-scheduler's word on where it bound it."""
        events = self.admin.list_namespaced_event(self.namespace, field_selector=f"involvedObject.name={pod}").items
        return [event for event in events if event.reason == "Scheduled"]

    def node_ready(self, node: str) -> client.V1NodeCondition:
        return next(c for c in self.admin.read_node(node).status.conditions if c.type == "Ready")

    def taints(self, node: str) -> set[tuple[str, str]]:
        return {(t.key, t.effect) for t in self.admin.read_node(node).spec.taints or ()}

    def cordon(self, node: str, cordoned: bool = True) -> None:
        self.admin.patch_node(node, {"spec": {"unschedulable": cordoned}})

    @contextlib.contextmanager
    def extra_kubelet(self, name: str, root: Path, instance_type: str) -> Iterator[RealKubelet]:
        """A second local kubelet node sharing the work volume; afterwards its processes are gone, its pods removed
        by force (nothing answers for a silent node) and its Node deleted."""
        kubelet = RealKubelet(self.plane, name, root, labels={INSTANCE_TYPE: instance_type})
        self.share_work(kubelet)
        kubelet.start()
        try:
            yield kubelet
        finally:
            kubelet.stop()
            for pod in self.admin.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}").items:
                with contextlib.suppress(client.ApiException):
                    self.admin.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
            self.admin.delete_node(name)

    def clean(self) -> None:
        """Our pods, Secrets and Services gone from the namespace, and its events: the next test's server finds none
        of them, and its pods' events are their own (each server numbers its workloads from 1, so pod names recur)."""
        for kind in ("pod", "secret", "service"):
            listing = getattr(self.admin, f"list_namespaced_{kind}")
            delete = getattr(self.admin, f"delete_namespaced_{kind}")
            for item in listing(self.namespace, label_selector=MANAGED).items:
                with contextlib.suppress(client.ApiException):
                    delete(item.metadata.name, self.namespace, grace_period_seconds=0)
        deadline = time.monotonic() + 30
        while self.admin.list_namespaced_pod(self.namespace, label_selector=MANAGED).items:
            assert time.monotonic() < deadline, "the tests' pods were not gone 30 s after their deletion"
            time.sleep(0.1)
        self.admin.delete_collection_namespaced_event(self.namespace)


@pytest.fixture
def real_cluster(control_plane, hetero_namespace: HeteroNamespace, kwok_nodes, local_kubelet, work_claim, tmp_path,
                 hetero_config, server_config) -> Iterator[RealCluster]:
    """The test's server on the kubernetes backend of the test control plane (see the module's docstring); list it
    before ``api`` in a test's arguments."""
    work_dir = Path(hetero_config["work_dir"])
    work_dir.mkdir(parents=True, exist_ok=True)
    hetero_config.update(backend="kubernetes", emulated_nodes_file="", discover_local=False,
                         catalog_file=kubelet_catalog(tmp_path))
    server_config["KubernetesConfig"] = {
        "kubeconfig": str(hetero_namespace.kubeconfig),
        "namespace": hetero_namespace.name,
        "work_volume": {"claim": work_claim},
        "tolerations": [*DEFAULT_TOLERATIONS, *FAST_FAILOVER],
        "watch_timeout": 30,
        "kernel_start_timeout": 60,
        "unschedulable_timeout": 60,
        "image_pull_timeout": 60,
    }
    cluster = RealCluster(plane=control_plane, admin=client.CoreV1Api(control_plane.api_client()),
                          namespace=hetero_namespace.name, kubelet=local_kubelet, work_dir=work_dir, claim=work_claim)
    cluster.share_work(local_kubelet)
    cluster.clean()
    yield cluster
    cluster.clean()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(local_kubelet.root / "claims" / work_claim)
