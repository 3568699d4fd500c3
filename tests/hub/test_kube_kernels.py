"""A hub whose service runs on the Kubernetes backend (the wire-level fake API server, its local kubelet
running pods as real processes): a kernel started in a user's server is placed by the service and runs
in a pod on the placed node, which the user's server connects to; a restart starts a new pod, a shutdown
ends the pod and gives the devices back."""

from __future__ import annotations

import time

import pytest

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from ..kube.apiserver import FakeApiServer
from ..kube.kubelet import LocalKubelet
from ..kube.test_backend import CPU_NODE, GPU_NODE, NAMESPACE, node_object
from .harness import CHP, HubProcess, hetero_service, run_in_kernel

pytestmark = pytest.mark.slow

API = "services/hetero/hetero/api/v1/"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    api = FakeApiServer().start()
    for name in ("cpu-only", "dgx-a100"):
        api.put(node_object(name))
    kubelet = LocalKubelet(api, (CPU_NODE, GPU_NODE), tmp_path_factory.mktemp("kubelet")).start()
    yield api
    kubelet.stop()
    api.stop()


@pytest.fixture(scope="module")
def hub(tmp_path_factory, cluster):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub-kube")
    catalog = team_catalog(root)
    settings = root / "kubernetes_config.py"
    settings.write_text(f"""
c.HeteroApp.backend = "kubernetes"
c.HeteroApp.discover_local = False
c.HeteroApp.emulated_nodes_file = ""
c.KubernetesConfig.kubeconfig = {str(cluster.kubeconfig(root / 'kubeconfig'))!r}
c.KubernetesConfig.namespace = {NAMESPACE!r}
c.KubernetesConfig.work_volume = {{"host_path": {str(root / 'work')!r}}}
c.KubernetesConfig.kernel_start_timeout = 60
c.KubernetesConfig.watch_timeout = 5
""", encoding="utf-8")
    service, _url = hetero_service(root, catalog, DEMO_NODES, extra_args=(f"--config={settings}",))
    with HubProcess.start(root, groups={}, users=("alice",), extra_config=service) as running:
        yield running.with_service(("alice",))


def kernel_pod(cluster, workload_id: int) -> dict | None:
    return next((pod for pod in cluster.list("Pod")
                 if pod["metadata"].get("labels", {}).get("hetero.jupyter.org/workload-id") == str(workload_id)), None)


def until(predicate, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)
    return value


def test_a_kernel_of_a_users_server_runs_in_a_pod_the_service_starts(hub, cluster):
    status, version = hub.get(API + "version", hub.tokens["alice"])
    assert version["backend"] == "kubernetes", version
    hub.spawn("alice")
    own, token = "user/alice/", hub.tokens["alice"]
    status, started = hub._request(own + "hetero/api/v1/kernels", "POST", {"template": "interactive"},
                                   token=token, check=False, with_status=True)
    assert status == 201, (started, hub.log()[-3000:])
    workload = hub.get(API + f"workloads/{started['workload_id']}", token)[1]
    assert (workload["state"], workload["kind"], workload["user"]) == ("running", "kernel", "alice"), workload
    pod = kernel_pod(cluster, workload["id"])
    assert pod is not None and pod["status"]["phase"] == "Running", pod
    env = {item["name"]: item.get("value") for item in pod["spec"]["containers"][0].get("env", [])}
    assert env["HETERO_NODE"] == workload["node"] and env["HETERO_USER"] == "alice", env
    # alice's server is connected to the kernel in the pod: it runs her code there, with the pod's environment.
    printed = run_in_kernel(hub, "alice", started["kernel_id"], "import os; print(os.environ['HETERO_NODE'], 6 * 7)",
                            token)
    assert printed.split() == [workload["node"], "42"], printed

    hub._request(own + f"api/kernels/{started['kernel_id']}/restart", "POST", {}, token=token)
    second = until(lambda: (p := kernel_pod(cluster, workload["id"])) and p["metadata"]["name"] != pod["metadata"]["name"]
                   and p, "a new pod for the restart")
    assert "-a2-" in second["metadata"]["name"], second["metadata"]["name"]
    until(lambda: cluster.get("Pod", pod["metadata"]["name"], NAMESPACE) is None, "the first pod to be deleted")

    assert run_in_kernel(hub, "alice", started["kernel_id"], "print('again')", token).strip() == "again"

    hub._request(own + f"api/kernels/{started['kernel_id']}", "DELETE", token=token, check=False)
    ended = until(lambda: (w := hub.get(API + f"workloads/{workload['id']}", token)[1])["state"] == "succeeded" and w,
                  "the kernel's workload to be released")
    assert ended["placement"] is None
    until(lambda: kernel_pod(cluster, workload["id"]) is None, "the kernel's pod to be deleted")
