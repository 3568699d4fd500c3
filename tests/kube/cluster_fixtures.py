"""Pytest fixtures over a real control plane (:class:`tests.kube.control_plane.ControlPlane`). A module imports them:

```python
from tests.kube.cluster_fixtures import control_plane, hetero_namespace, kwok  # noqa: F401 - fixtures

def test_a_dry_run(control_plane):
    core = kubernetes.client.CoreV1Api(control_plane.api_client())   # admin (system:masters)
    subprocess.run(["helm", "--kubeconfig", str(control_plane.kubeconfig), ...])

def test_as_the_server(hetero_namespace):
    KubernetesConfig(kubeconfig=str(hetero_namespace.kubeconfig), namespace=hetero_namespace.name)
```

- ``control_plane`` (session): a started :class:`ControlPlane`; ``.kubeconfig`` is the admin's kubeconfig file,
  ``.url`` the API server, ``.binaries`` the directory of kube-build.sh's binaries (helm, kueue, kwok too),
  ``.started_in`` the seconds its start took, ``.logs()`` the tail of every component's log.
- ``hetero_namespace`` (session): the namespace ``hetero`` as a platform team sets it up (Pod Security
  ``restricted``, a ResourceQuota, a LimitRange), ``rbac.yaml`` applied, and ``.kubeconfig``: the ServiceAccount
  ``jupyter-hetero`` with a token of the TokenRequest API, so calls get exactly what rbac.yaml grants.
- ``kwok`` (session): kwok heartbeating the nodes annotated ``kwok.x-k8s.io/node=fake``; pods bound there
  go Running (no container runs: no exit code, no log).
- ``local_kubelet`` (session): a :class:`tests.kube.real_kubelet.RealKubelet` registered as the node
  ``local-kubelet-1`` (8 CPUs, 16 GiB, no accelerator): pods bound there run as local processes, with exit codes
  and logs read through the API server.
- ``kwok_nodes`` (session): the recorded nodes of tests/data/kubernetes/nodes (every vendor's label scheme) but
  the NotReady one, created under kwok and Ready: ``{name: the recorded object}``.

The binaries are found by ``scripts/kube-build.sh --check``: a missing one fails the test naming it (``make
test`` builds them first, through ``make kube``). Session scope is per pytest process: under ``make test``
(pytest-xdist, ``--dist loadfile``) each worker that runs a module using these starts its own control plane,
at most one per worker (two), on free ports of its own; keep real-cluster tests in few modules.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.kube.control_plane import ControlPlane, ControlPlaneError, Kwok
from tests.kube.nodes import kwok_node
from tests.kube.real_kubelet import RealKubelet

__all__ = ["FAST_FAILOVER", "HeteroNamespace", "WORKLOAD_LABEL", "control_plane", "hetero_namespace", "kube_binaries",
           "kwok", "kwok_nodes", "local_kubelet"]

REPO = Path(__file__).resolve().parents[2]
RBAC = REPO / "jupyter_hetero" / "backends" / "kubernetes" / "rbac.yaml"
RECORDED_NODES = REPO / "tests" / "data" / "kubernetes" / "nodes"
# kwok would post this one Ready: it stands for a node whose kubelet went silent, which kwok cannot play.
NOT_UNDER_KWOK = {"notready.yaml"}
# rbac.yaml's names: the server's ServiceAccount lives in SERVER_NAMESPACE, its workloads in WORKLOAD_NAMESPACE.
SERVER_NAMESPACE = "jupyter-hetero"
WORKLOAD_NAMESPACE = "hetero"
SERVICE_ACCOUNT = "jupyter-hetero"
# What a platform team caps a tenant's namespace at; generous enough for every test pod, device ones included.
QUOTA = {"pods": "50", "requests.cpu": "64", "requests.memory": "256Gi", "limits.cpu": "128",
         "limits.memory": "512Gi", "requests.nvidia.com/gpu": "16", "secrets": "100", "services": "50"}
# Containers without requests get these, so the quota (which needs every pod to declare cpu and memory) admits them.
LIMIT_RANGE = {"type": "Container", "default": {"cpu": "1", "memory": "512Mi"},
               "defaultRequest": {"cpu": "100m", "memory": "128Mi"}, "max": {"cpu": "64", "memory": "256Gi"}}
TOKEN_SECONDS = 4 * 3600  # longer than any test session; the API server's minimum is 10 minutes

# The label by which a test finds the pods of one workload, as the backend sets it.
WORKLOAD_LABEL = "hetero.jupyter.org/workload-id"
# Pods tolerate an unreachable node for 2 s, not the 300 s DefaultTolerationSeconds gives them, so that the
# taint-eviction controller evicts them within a test.
FAST_FAILOVER = [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                  "tolerationSeconds": 2}]


@dataclass(frozen=True)
class HeteroNamespace:
    """The workload namespace and a kubeconfig of the server's ServiceAccount (a TokenRequest token)."""

    name: str
    kubeconfig: Path
    service_account: str
    server_namespace: str


def _binaries() -> Path:
    script = REPO / "scripts" / "kube-build.sh"
    answer = subprocess.run(["bash", str(script), "--check"], capture_output=True, text=True, check=False)
    if answer.returncode != 0:
        pytest.fail(f"the Kubernetes binaries are missing: {answer.stderr.strip()}", pytrace=False)
    return Path(answer.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def kube_binaries() -> Path:
    """The directory of scripts/kube-build.sh's links: kube-apiserver, kube-scheduler, ..., kwok, kueue, helm."""
    return _binaries()


@pytest.fixture(scope="session")
def control_plane(kube_binaries):
    """A started :class:`ControlPlane` for this pytest process (see the module's docstring)."""
    etcd = shutil.which("etcd")
    if etcd is None:
        pytest.fail("etcd is not on PATH: `make kube` installs Debian's etcd-server", pytrace=False)
    root = Path(tempfile.mkdtemp(prefix="hetero-kube-"))
    plane = ControlPlane(binaries=kube_binaries, root=root, etcd=etcd)
    try:
        plane.start()
    except ControlPlaneError as exc:
        pytest.fail(f"the control plane did not start (logs in {root}): {exc}", pytrace=False)
    yield plane
    plane.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def kwok(control_plane, kube_binaries):
    """kwok over ``control_plane``, managing the nodes annotated ``kwok.x-k8s.io/node=fake``."""
    started = Kwok(kube_binaries / "kwok", control_plane).start()
    yield started
    started.stop()


@pytest.fixture(scope="session")
def local_kubelet(control_plane):
    """The node ``local-kubelet-1``, run by :class:`RealKubelet` over ``control_plane``."""
    kubelet = RealKubelet(control_plane, "local-kubelet-1", control_plane.root / "kubelet-1",
                          labels={"node.kubernetes.io/instance-type": "local-cpu"})
    kubelet.start()
    yield kubelet
    kubelet.stop()


@pytest.fixture(scope="session")
def kwok_nodes(control_plane, kwok) -> dict[str, dict]:
    """The recorded nodes, created in ``control_plane`` under ``kwok`` and Ready; by name."""
    from kubernetes import client

    core = client.CoreV1Api(control_plane.api_client())
    recorded = {}
    for path in sorted(RECORDED_NODES.glob("*.yaml")):
        if path.name not in NOT_UNDER_KWOK:
            node = yaml.safe_load(path.read_text(encoding="utf-8"))
            recorded[node["metadata"]["name"]] = node
            core.create_node(kwok_node(node))
    deadline = time.monotonic() + 60
    while True:
        ready = {node.metadata.name for node in core.list_node().items
                 if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or ())}
        if set(recorded) <= ready:
            return recorded
        if time.monotonic() > deadline:
            pytest.fail(f"kwok did not make these nodes Ready in 60 s: {sorted(set(recorded) - ready)}; "
                        f"kwok's log:\n{kwok.tail()}", pytrace=False)
        time.sleep(0.2)


@pytest.fixture(scope="session")
def hetero_namespace(control_plane) -> HeteroNamespace:
    """The namespace ``hetero`` set up as docs/kubernetes.md asks, and the server's ServiceAccount's kubeconfig."""
    from kubernetes import client, utils

    admin = control_plane.api_client()
    core = client.CoreV1Api(admin)
    restricted = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")}
    for name in (SERVER_NAMESPACE, WORKLOAD_NAMESPACE):
        core.create_namespace({"metadata": {"name": name, "labels": restricted}})
    core.create_namespaced_resource_quota(WORKLOAD_NAMESPACE, {"metadata": {"name": "tenant"},
                                                               "spec": {"hard": QUOTA}})
    core.create_namespaced_limit_range(WORKLOAD_NAMESPACE, {"metadata": {"name": "defaults"},
                                                            "spec": {"limits": [LIMIT_RANGE]}})
    # rbac.yaml as shipped, object by object, as `kubectl apply -f rbac.yaml` would.
    for document in yaml.safe_load_all(RBAC.read_text()):
        if document:
            utils.create_from_dict(admin, document)
    # The controller manager gives each new namespace its `default` ServiceAccount a moment later; until then
    # the ServiceAccount admission plugin refuses every pod there, as on any cluster just after the namespace.
    deadline = time.monotonic() + 30
    while not core.list_namespaced_service_account(WORKLOAD_NAMESPACE, field_selector="metadata.name=default").items:
        if time.monotonic() > deadline:
            pytest.fail(f"namespace {WORKLOAD_NAMESPACE} got no default ServiceAccount in 30 s:\n"
                        f"{control_plane.logs()}", pytrace=False)
        time.sleep(0.1)
    token = core.create_namespaced_service_account_token(
        SERVICE_ACCOUNT, SERVER_NAMESPACE, {"spec": {"expirationSeconds": TOKEN_SECONDS}}).status.token
    kubeconfig = control_plane.write_kubeconfig(control_plane.root / "jupyter-hetero.kubeconfig",
                                                user=f"system:serviceaccount:{SERVER_NAMESPACE}:{SERVICE_ACCOUNT}",
                                                token=token)
    return HeteroNamespace(WORKLOAD_NAMESPACE, kubeconfig, SERVICE_ACCOUNT, SERVER_NAMESPACE)
