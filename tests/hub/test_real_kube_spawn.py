"""A hub user's server as a pod on the real control plane (issue 34): a real JupyterHub whose spawner is
HeteroKubeSpawner, the hetero service on the Kubernetes backend (as rbac.yaml's ServiceAccount), kube-apiserver
admitting the pod under Pod Security ``restricted``, kube-scheduler binding it to the node the engine chose, and
the local kubelet (tests/kube/real_kubelet.py) running its container as a process of this machine.

    .venv/bin/python -m pytest tests/hub/test_real_kube_spawn.py -v

The engine's choice is made unambiguous by the catalog: the tenant's one flavor, ``local-cpu``, selects nodes by
the local kubelet node's instance type. The hub speaks to the API server as its administrator (KubeSpawner's
client reads ``KUBECONFIG``); the pod's container runs ``python -m jupyterhub.singleuser``, which the kubelet runs
with this machine's interpreter, as an image with Python on its PATH would. Each pod listens on its own loopback
address (``tests.kube.containers.pod_ip``), which is the pod IP KubeSpawner gives the hub's proxy.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest
import yaml
from kubernetes import client

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from ..harness import free_port, until
from ..kube.cluster_fixtures import control_plane, hetero_namespace, kube_binaries, local_kubelet  # noqa: F401
from .harness import CHP, HubProcess, hetero_service

pytestmark = pytest.mark.slow

API = "services/hetero/hetero/api/v1/"
USER = "alice"  # of tenant vision in the team catalog
PROFILE = "interactive--local-cpu"
POD = f"jupyter-{USER}"  # KubeSpawner's pod name for the user's default server
# The local kubelet node's label (tests/kube/cluster_fixtures.local_kubelet) that the flavor selects.
INSTANCE_TYPE = ("node.kubernetes.io/instance-type", "local-cpu")


def _local_cpu_catalog(root) -> str:
    """The team catalog with a first flavor, ``local-cpu``, that only the local kubelet's node belongs to; vision
    may start the interactive template on it alone."""
    path = team_catalog(root, vision={"quotas": {"local-cpu": {"nominal": {"cpu": 8, "memory": "32Gi"}}}},
                        templates={"interactive": {"flavors": ["local-cpu"]}})
    with open(path, encoding="utf-8") as source:
        data = yaml.safe_load(source)
    # First: a node belongs to the first flavor it satisfies, and cpu-standard takes every CPU node.
    data["flavors"].insert(0, {
        "name": "local-cpu", "display": {"en": "Local CPU", "zh": "本地 CPU"}, "price_per_hour": 0.04,
        "accelerator_weight": 0,
        "selector": {"family": "cpu", "labels": [{"key": INSTANCE_TYPE[0], "operator": "In",
                                                   "values": [INSTANCE_TYPE[1]]}]},
    })
    with open(path, "w", encoding="utf-8") as target:
        yaml.safe_dump(data, target, allow_unicode=True)
    return path


@pytest.fixture(scope="module")
def admin(control_plane) -> client.CoreV1Api:
    return client.CoreV1Api(control_plane.api_client())


@pytest.fixture(scope="module")
def hub(tmp_path_factory, control_plane, hetero_namespace, local_kubelet, admin):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    # The engine places only on nodes it reads as admitted: the kubelet's node, once Ready and untainted.
    until(lambda: not admin.read_node(local_kubelet.name).spec.taints, f"{local_kubelet.name} to lose its taints",
          timeout=60)
    root = tmp_path_factory.mktemp("hub-real-kube")
    catalog = _local_cpu_catalog(root)
    settings = root / "kubernetes_config.py"
    settings.write_text(f"""
c.HeteroApp.backend = "kubernetes"
c.HeteroApp.discover_local = False
c.HeteroApp.emulated_nodes_file = ""
c.KubernetesConfig.kubeconfig = {str(hetero_namespace.kubeconfig)!r}
c.KubernetesConfig.namespace = {hetero_namespace.name!r}
c.KubernetesConfig.watch_timeout = 30
""", encoding="utf-8")
    service, url = hetero_service(root, catalog, DEMO_NODES, extra_args=(f"--config={settings}",))
    spawner = f"""
import os
import jupyter_hetero.hub
os.environ["KUBECONFIG"] = {str(control_plane.kubeconfig)!r}  # KubeSpawner's client loads it
c.JupyterHub.spawner_class = "jupyter_hetero.hub.HeteroKubeSpawner"
c.KubeSpawner.profile_list = jupyter_hetero.hub.profile_list
c.Spawner.pre_spawn_hook = jupyter_hetero.hub.pre_spawn_hook
c.HeteroHub.service_url = {url!r}
c.HeteroHub.catalog_file = {catalog!r}
c.HeteroKubeSpawner.hetero_poll_s = 0.2
c.KubeSpawner.namespace = {hetero_namespace.name!r}
c.KubeSpawner.cmd = ["python", "-m", "jupyterhub.singleuser"]
c.KubeSpawner.port = {free_port()}  # every pod has its own address; a free port keeps clear of this machine's
# What Pod Security's `restricted` asks of every container.
c.KubeSpawner.uid = 1000
c.KubeSpawner.container_security_context = {{"runAsNonRoot": True, "capabilities": {{"drop": ["ALL"]}},
                                             "seccompProfile": {{"type": "RuntimeDefault"}}}}
"""
    with HubProcess.start(root, groups={}, users=(USER,), extra_config=service + spawner) as running:
        yield running.with_service((USER,))


def _answers(url: str, token: str) -> int | None:
    """The HTTP status of GET ``url`` with ``token``; None when nothing listens there."""
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def _gone(admin: client.CoreV1Api, name: str, namespace: str) -> bool:
    try:
        admin.read_namespaced_pod(name, namespace)
    except client.ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def test_a_users_server_is_a_pod_bound_by_kube_scheduler_to_the_engines_node_and_run_by_its_kubelet(
        hub, admin, hetero_namespace, local_kubelet):
    namespace, token = hetero_namespace.name, hub.tokens[USER]
    status, _answer = hub._request(f"hub/api/users/{USER}/server", "POST", {"profile": PROFILE},
                                   token=hub.admin_token, check=False, with_status=True)
    assert status in (201, 202), hub.log()
    hub._wait(lambda: hub.api(f"users/{USER}")["servers"][""]["ready"], f"{USER}'s server to be ready", 120)

    # The engine placed the server workload on the kubelet's node, the one node of flavor local-cpu.
    status, found = hub.get(API + "workloads?kind=server&mine=true", token)
    assert status == 200, found
    (workload,) = [w for w in found if w["state"] == "running"]
    assert (workload["tenant"], workload["flavor"]) == ("vision", "local-cpu"), workload
    assert workload["placement"]["slots"][0]["node"] == local_kubelet.name, workload

    # Admitted in a namespace that enforces `restricted` (its create would have been refused otherwise), pinned to
    # that node by a required affinity, and bound there by kube-scheduler.
    labels = admin.read_namespace(namespace).metadata.labels
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted", labels
    pod = admin.read_namespaced_pod(POD, namespace)
    terms = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert [[(f.key, f.operator, f.values) for f in term.match_fields] for term in terms] == [
        [("metadata.name", "In", [local_kubelet.name])]], terms
    assert [[(e.key, e.operator, e.values) for e in term.match_expressions] for term in terms] == [
        [(INSTANCE_TYPE[0], "In", [INSTANCE_TYPE[1]])]], terms
    assert pod.metadata.labels["hetero.jupyter.org/tenant"] == "vision", pod.metadata.labels
    assert pod.spec.node_name == local_kubelet.name and pod.status.phase == "Running", (pod.spec.node_name,
                                                                                        pod.status.phase)
    events = admin.list_namespaced_event(namespace, field_selector=f"involvedObject.name={POD}")
    scheduled = [event for event in events.items if event.reason == "Scheduled"]
    assert scheduled and scheduled[-1].reporting_component == "default-scheduler", events.items
    assert f"Successfully assigned {namespace}/{POD} to {local_kubelet.name}" in scheduled[-1].message

    # The container runs here, as a process of the kubelet's, its log read through the API server.
    log = admin.read_namespaced_pod_log(POD, namespace)
    assert "JupyterHubSingleUser] Starting jupyterhub single-user server extension" in log, log[-2000:]

    # The hetero service counts the pod once, as the server workload's placement: its labels name that workload,
    # so what it requests is not held by "others" as well (which left no room on the node for a second server).
    assert {k: pod.metadata.labels[k] for k in ("hetero.jupyter.org/workload-id", "hetero.jupyter.org/kind")} == \
        {"hetero.jupyter.org/workload-id": str(workload["id"]), "hetero.jupyter.org/kind": "server"}
    deadline = time.monotonic() + 5  # several ticks, long after the service's watch has seen the running pod
    while time.monotonic() < deadline:
        status, nodes = hub.get(API + "nodes", token)
        (node,) = [n for n in nodes if n["name"] == local_kubelet.name]
        assert node["held_by_others"] == {"cpu_milli": 0, "memory_mib": 0, "devices": 0}, node
        time.sleep(0.5)

    # The user reaches it through the proxy; the hub's route leads to the pod's own address.
    status, answer = hub.get(f"user/{USER}/api/status", token)
    assert status == 200 and "started" in answer, (status, answer)
    port = pod.spec.containers[0].ports[0].container_port
    direct = f"http://{pod.status.pod_ip}:{port}/user/{USER}/api/status"
    assert pod.status.pod_ip.startswith("127.42.") and _answers(direct, token) == 200, direct

    # Stopping the server deletes its pod (the kubelet ends the process first) and gives the node back.
    hub._request(f"hub/api/users/{USER}/server", "DELETE", token=hub.admin_token, check=False)
    until(lambda: _gone(admin, POD, namespace), f"pod {namespace}/{POD} to be deleted", timeout=60)
    assert _answers(direct, token) is None, "the server's process outlived its pod"
    until(lambda: hub.get(API + f"workloads/{workload['id']}", token)[1]["state"] == "succeeded",
          "the server's workload to be released", timeout=30)
    assert hub.get(API + f"workloads/{workload['id']}", token)[1]["placement"] is None
