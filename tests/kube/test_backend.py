"""The Kubernetes backend end to end: a real jupyter-server with the extension on the wire-level fake API
server, its local kubelet running the pods as real processes, and real kernels in "pods"."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from jupyter_hetero.backends.kubernetes import rbac
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH

from ..handlers.test_kernels import kernelspecs, run_code, start_kernel  # noqa: F401 - a fixture among them
from ..harness import until_async
from .apiserver import FakeApiServer
from .fixtures import kube_api  # noqa: F401 - a fixture
from .kubelet import LocalKubelet

NODE_DATA = Path(__file__).resolve().parent.parent / "data" / "kubernetes" / "nodes"
CPU_NODE, GPU_NODE = "cpu-worker-21", "dgx-a100-01"
NAMESPACE = "hetero"
JOB = {"kind": "job", "template": "data-preprocessing", "queue": "batch"}


def python_job(code: str, **extra) -> dict:
    return {**JOB, "command": ["python", "-c", code], **extra}


@dataclass
class Cluster:
    api: FakeApiServer
    kubelet: LocalKubelet

    def pods(self) -> list[dict]:
        """Our pods, in whichever namespace."""
        return [pod for pod in self.api.list("Pod")
                if pod["metadata"].get("labels", {}).get("app.kubernetes.io/managed-by") == "jupyter-hetero"]

    def pod_of(self, workload_id: int) -> dict | None:
        return next((p for p in self.pods()
                     if p["metadata"]["labels"].get("hetero.jupyter.org/workload-id") == str(workload_id)), None)


def node_object(name: str) -> dict:
    return yaml.safe_load((NODE_DATA / f"{name}.yaml").read_text(encoding="utf-8"))


def kubernetes_settings(api: FakeApiServer, tmp_path: Path, work_dir: str, namespace: str = NAMESPACE) -> dict:
    return {
        "kubeconfig": str(api.kubeconfig(tmp_path / "kubeconfig")),
        "namespace": namespace,
        "work_volume": {"host_path": work_dir},
        "image_pull_timeout": 0.5,
        "watch_timeout": 5,
        "kernel_start_timeout": 60,
    }


@pytest.fixture
def namespace() -> str:
    """The server's namespace setting; a test parametrizes it to try one namespace per tenant."""
    return NAMESPACE


@pytest.fixture
def cluster(kube_api, tmp_path, hetero_config, server_config, namespace):  # noqa: F811 - the imported fixture
    """A CPU node and a DGX A100 node run by a local kubelet; the server (started after) on the kubernetes
    backend. Every call the backend made must be one rbac.yaml grants."""
    for name in ("cpu-only", "dgx-a100"):
        kube_api.put(node_object(name))
    kubelet = LocalKubelet(kube_api, (CPU_NODE, GPU_NODE), tmp_path / "kubelet").start()
    hetero_config.update(backend="kubernetes", emulated_nodes_file="", discover_local=False)
    server_config["KubernetesConfig"] = kubernetes_settings(kube_api, tmp_path, hetero_config["work_dir"], namespace)
    yield Cluster(kube_api, kubelet)
    kubelet.stop()
    used = {(verb, f"{resource}/{sub}" if sub else resource) for verb, resource, sub in kube_api.requests}
    assert used <= rbac.granted(), f"calls rbac.yaml does not grant: {sorted(used - rbac.granted())}"


async def test_the_clusters_nodes_are_the_inventory_and_follow_the_cluster(cluster, api, jp_serverapp):
    jp_serverapp.web_app.settings["hetero_platform"].loop.start()  # as the server's start does (tests start it lazily)
    nodes = {node["name"]: node for node in await api("nodes")}
    assert {name: (node["flavor"], node["source"], node["state"]) for name, node in nodes.items()} == {
        CPU_NODE: ("cpu-standard", "kubernetes", "ready"), GPU_NODE: ("a100-80g", "kubernetes", "ready")}
    assert nodes[GPU_NODE]["accelerator"]["resource"] == "nvidia.com/gpu"

    cordoned = node_object("dgx-a100")
    cordoned["spec"]["unschedulable"] = True
    cluster.api.put(cordoned)
    await until_async(lambda: _node_is(api, GPU_NODE, lambda n: n["state"] == "cordoned" and not n["schedulable"]),
                      "the cordoned node to be cordoned in the inventory")

    # A pod we did not place takes two GPUs and 4 cores: the node keeps them, the engine may not use them.
    cluster.api.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "someone-else", "namespace": "other"},
                     "spec": {"nodeName": GPU_NODE, "containers": [{
                         "name": "main", "image": "registry.example/other:1", "command": ["python", "-c", "import time; time.sleep(60)"],
                         "resources": {"requests": {"cpu": "4", "memory": "1Gi", "nvidia.com/gpu": "2"},
                                       "limits": {"nvidia.com/gpu": "2"}}}]}})
    node = await until_async(lambda: _node_is(api, GPU_NODE, lambda n: n["held_by_others"]["devices"] == 2),
                             "the other pod's GPUs to be held")
    assert node["held_by_others"] == {"cpu_milli": 4000, "memory_mib": 1024, "devices": 2}
    assert node["accelerator"]["count"] == 8

    cluster.api.remove("Node", CPU_NODE)
    await until_async(lambda: _names(api, [GPU_NODE]), "the deleted node to leave the inventory")


async def _node(api, name: str) -> dict:
    return next(node for node in await api("nodes") if node["name"] == name)


async def _node_is(api, name: str, predicate) -> dict | None:
    node = await _node(api, name)
    return node if predicate(node) else None


async def _names(api, expected: list[str]) -> bool:
    return [node["name"] for node in await api("nodes")] == expected


def running_pod(cluster: Cluster, workload_id: int):
    """A coroutine function for until_async: the workload's pod once its container runs."""
    async def check():
        pod = cluster.pod_of(workload_id)
        return pod if pod and pod.get("status", {}).get("phase") == "Running" else None
    return check


async def first_attempt(wait_for, workload_id: int) -> dict:
    """The workload's first attempt once it has ended (the queue's policy may retry it later)."""
    workload = await wait_for(workload_id, lambda w: w["attempts"] and w["attempts"][0]["outcome"], timeout=60)
    return workload["attempts"][0]


def pod_gone(cluster: Cluster, workload_id: int):
    return lambda: cluster.pod_of(workload_id) is None


async def test_a_job_runs_in_a_pod_on_the_node_the_engine_chose(cluster, api, wait_for):
    seen: list[dict] = []
    cluster.api.subscribe(lambda kind, obj: seen.append(obj) if obj.get("kind") == "Pod" else None)
    code = "import os; print('on', os.environ['HETERO_NODE'], os.environ['HETERO_FLAVOR'], '中文输出')"
    job = await api("workloads", "POST", python_job(code))
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), timeout=60)
    assert done["state"] == "succeeded", done
    assert "on cpu-worker-21 cpu-standard 中文输出" in await api.text(f"workloads/{job['id']}/logs")
    pod = next(p for p in seen if p["metadata"]["labels"].get("hetero.jupyter.org/workload-id") == str(job["id"]))
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [CPU_NODE]
    assert pod["spec"]["containers"][0]["image"] == "quay.io/jupyter/scipy-notebook:2024-10-07"
    started = next(e for e in await api(f"workloads/{job['id']}/events") if e["type"] == "started")
    assert started["reason"].startswith(f"attempt 1 running as pod {NAMESPACE}/hetero-job-{job['id']}-a1-r0")
    await until_async(pod_gone(cluster, job["id"]), "the ended job's pod to be deleted")
    await until_async(lambda: not cluster.api.list("Secret", NAMESPACE), "the ended job's credential Secret to go")


async def test_a_jobs_credential_is_in_its_own_secret_never_in_its_pod_spec(cluster, api, wait_for):
    code = "import os, time; print('credential', os.environ['JUPYTER_HETERO_TOKEN'][:10], flush=True); time.sleep(120)"
    job = await api("workloads", "POST", python_job(code))
    pod = await until_async(running_pod(cluster, job["id"]), "the job's container to run")
    secret_name = f"{pod['metadata']['name']}-credential"
    [credential] = [var for var in pod["spec"]["containers"][0]["env"] if var["name"] == "JUPYTER_HETERO_TOKEN"]
    assert credential == {"name": "JUPYTER_HETERO_TOKEN",
                          "valueFrom": {"secretKeyRef": {"name": secret_name, "key": "JUPYTER_HETERO_TOKEN"}}}
    secret = cluster.api.get("Secret", secret_name, NAMESPACE)
    assert secret["metadata"]["labels"]["hetero.jupyter.org/workload-id"] == str(job["id"])  # orphans are found
    assert base64.b64decode(secret["data"]["JUPYTER_HETERO_TOKEN"]).startswith(b"hetero_wc_")

    async def printed():
        return "credential hetero_wc_" in await api.text(f"workloads/{job['id']}/logs")
    await until_async(printed, "the job to read its credential")
    await api(f"workloads/{job['id']}", "DELETE")
    await until_async(lambda: cluster.api.get("Secret", secret_name, NAMESPACE) is None,
                      "the cancelled job's credential Secret to be deleted")


async def test_a_failing_job_an_out_of_memory_kill_and_an_eviction_read_as_their_reasons(cluster, api, wait_for):
    failing = await api("workloads", "POST", python_job("import sys; sys.exit(3)"))
    attempt = await first_attempt(wait_for, failing["id"])
    assert (attempt["outcome"], attempt["reason"], attempt["exit_code"]) == ("failed", "exit code 3", 3)

    hungry = await api("workloads", "POST", python_job("import time; time.sleep(120)"))
    await wait_for(hungry["id"], lambda w: w["state"] == "running", timeout=60)
    pod = await until_async(running_pod(cluster, hungry["id"]), "the job's container to run")
    cluster.kubelet.oom_kill(NAMESPACE, pod["metadata"]["name"])
    attempt = await first_attempt(wait_for, hungry["id"])
    assert attempt["outcome"] == "failed" and attempt["reason"].startswith("exit code 137: out of memory"), attempt

    evicted = await api("workloads", "POST", python_job("import time; time.sleep(120)"))
    await wait_for(evicted["id"], lambda w: w["state"] == "running", timeout=60)
    pod = await until_async(running_pod(cluster, evicted["id"]), "the job's container to run")
    cluster.kubelet.evict(NAMESPACE, pod["metadata"]["name"], "The node was low on memory.")
    lost = await wait_for(evicted["id"], lambda w: w["node_losses"] >= 1, timeout=60)
    events = await api(f"workloads/{evicted['id']}/events")
    assert any(e["type"] == "lost" and "evicted by the kubelet: The node was low on memory." in e["reason"]
               for e in events), events
    assert lost["failures"] == 0  # not the job's own failure: no retry used


async def test_a_lost_node_ends_its_work_by_policy(cluster, api, wait_for):
    body = {"kind": "job", "template": "training", "parameters": {"devices": 2},
            "command": ["python", "-c", "import time; time.sleep(120)"]}
    job = await api("workloads", "POST", body)
    running = await wait_for(job["id"], lambda w: w["state"] == "running", timeout=60)
    assert running["attempts"][-1]["node"] == GPU_NODE
    await until_async(running_pod(cluster, job["id"]), "the job's container to run")
    cluster.kubelet.lose_node(GPU_NODE)
    requeued = await wait_for(job["id"], lambda w: w["node_losses"] == 1, timeout=60)
    # Requeued by its queue's policy; no other node has A100s, so it waits as inadmissible.
    assert requeued["state"] in ("queued", "inadmissible") and requeued["failures"] == 0
    assert (await _node(api, GPU_NODE))["state"] == "lost"
    await until_async(pod_gone(cluster, job["id"]), "the lost job's pod to be deleted")


@pytest.fixture
def unpullable(tmp_path, hetero_config):
    """The shipped catalog with data preprocessing's CPU image one no registry has."""
    catalog = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    template = next(t for t in catalog["templates"] if t["name"] == "data-preprocessing")
    template["variants"][0]["image"] = "registry.example/does-not-exist:1"
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(catalog, allow_unicode=True), encoding="utf-8")
    hetero_config["catalog_file"] = str(path)


async def test_an_image_that_cannot_be_pulled_fails_the_attempt_with_the_reason(unpullable, cluster, api, wait_for):
    job = await api("workloads", "POST", python_job("print('never')"))
    attempt = await first_attempt(wait_for, job["id"])
    assert attempt["outcome"] == "failed", attempt
    # ErrImagePull, or ImagePullBackOff once the kubelet has backed off: either way the image and why.
    assert re.match(r"image registry.example/does-not-exist:1 cannot be pulled \((ErrImagePull|ImagePullBackOff)\): ",
                    attempt["reason"]), attempt
    assert (await api(f"workloads/{job['id']}"))["failures"] == 1  # the queue's failure policy: a retry, later
    await until_async(pod_gone(cluster, job["id"]), "the stuck pod to be deleted")


async def test_a_kernel_runs_in_a_pod_is_interrupted_restarted_and_shut_down(cluster, kernelspecs, api, jp_fetch,  # noqa: F811
                                                                             jp_serverapp):
    kernel_id = await start_kernel(jp_fetch, "hetero-cpu")
    workload = next(w for w in await api("workloads", kind="kernel") if w["spec"]["kernel_id"] == kernel_id)
    first = cluster.pod_of(workload["id"])
    secret = cluster.api.get("Secret", f"{first['metadata']['name']}-connection", NAMESPACE)
    assert secret is not None and "connection.json" in secret["data"]
    [owner] = secret["metadata"]["ownerReferences"]  # Kubernetes deletes it with its pod, whatever we do
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Pod", first["metadata"]["name"], first["metadata"]["uid"])
    assert json.loads(base64.b64decode(secret["data"]["connection.json"]))["ip"] == "0.0.0.0"
    printed = await run_code(jp_serverapp, kernel_id, "import os; print(os.environ['HETERO_NODE'], 'ok')")
    assert printed.split() == [CPU_NODE, "ok"]

    # Interrupted by message: the kernel's pod gets no signal from the server.
    kernel = jp_serverapp.kernel_manager.get_kernel(kernel_id)
    assert kernel.kernel_spec.interrupt_mode == "message"
    client = kernel.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        msg_id = client.execute("import time; time.sleep(60)")
        await asyncio.sleep(1)
        await jp_fetch("api", "kernels", kernel_id, "interrupt", method="POST", body="")
        reply = await client.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = await client.get_shell_msg(timeout=30)
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
    finally:
        client.stop_channels()

    await jp_fetch("api", "kernels", kernel_id, "restart", method="POST", body="")
    second = await until_async(lambda: (p := cluster.pod_of(workload["id"])) and
                               p["metadata"]["name"] != first["metadata"]["name"] and p, "a new pod for the restart")
    assert "-a2-" in second["metadata"]["name"]
    assert (await run_code(jp_serverapp, kernel_id, "print(6 * 7)")).strip() == "42"
    assert cluster.api.get("Pod", first["metadata"]["name"], NAMESPACE) is None

    # The magics, unchanged: the kernel in its pod submits a job with its workload credential; it runs in a pod too.
    printed = await run_code(jp_serverapp, kernel_id, "%load_ext jupyter_hetero\ndata = [1, 2, 3]")
    printed = await run_code(jp_serverapp, kernel_id, "%%hetero_submit --template data-preprocessing --push data "
                                                      "--pull total --wait\ntotal = sum(data) * 2")
    assert "pulled total from workload" in printed, printed
    assert (await run_code(jp_serverapp, kernel_id, "print('total is', total)")).strip() == "total is 12"
    [job] = await api("workloads", kind="job")
    assert (await api(f"workloads/{job['id']}"))["attempts"][0]["node"] == CPU_NODE

    await jp_fetch("api", "kernels", kernel_id, method="DELETE")
    await until_async(pod_gone(cluster, workload["id"]), "the kernel's pod to go with its shutdown")
    assert not [s for s in cluster.api.list("Secret", NAMESPACE)], "a kernel's connection Secret was left behind"
    assert (await api(f"workloads/{workload['id']}"))["state"] == "succeeded"


async def test_a_multi_replica_job_gets_one_pod_per_replica_and_a_headless_service(cluster, api, wait_for):
    services: list[dict] = []
    cluster.api.subscribe(lambda kind, obj: services.append(obj) if obj.get("kind") == "Service" else None)
    code = "import os; print('replica', os.environ['HETERO_REPLICA'], 'of', os.environ['HETERO_REPLICAS'], " \
           "'at', os.environ['HETERO_RENDEZVOUS_HOST'])"
    job = await api("workloads", "POST", {"kind": "job", "template": "training", "parameters": {"devices": 2, "replicas": 2},
                                          "command": ["python", "-c", code]})
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), timeout=60)
    assert done["state"] == "succeeded", done
    service = f"hetero-job-{job['id']}-a1"
    log = await api.text(f"workloads/{job['id']}/logs")
    for replica in (0, 1):  # replica 0's pod (its name ends with the user's, whoever runs the tests) in the Service
        assert re.search(rf"replica {replica} of 2 at hetero-job-{job['id']}-a1-r0(-[a-z0-9-]+)?\.{service}\n", log), log
    created = next(s for s in services if s["metadata"]["name"] == service)
    assert created["spec"]["clusterIP"] == "None"
    [owner] = created["metadata"]["ownerReferences"]
    assert owner["kind"] == "Pod" and owner["name"].startswith(f"hetero-job-{job['id']}-a1-r0")  # replica 0's
    await until_async(lambda: cluster.api.get("Service", service, NAMESPACE) is None, "the job's Service to be deleted")


@pytest.mark.parametrize("namespace", ["hetero-{tenant}"])
async def test_with_a_namespace_per_tenant_a_job_runs_in_its_tenants(cluster, api, wait_for):
    job = await api("workloads", "POST", python_job("print('in my namespace')"))
    pod = await until_async(lambda: cluster.pod_of(job["id"]), "the job's pod")
    assert pod["metadata"]["namespace"] == f"hetero-{job['tenant']}"
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), timeout=60)
    assert done["state"] == "succeeded", done
    assert "in my namespace" in await api.text(f"workloads/{job['id']}/logs")


async def test_a_kernel_placement_for_a_users_server_needs_the_kernels_connection_here(cluster, api, api_error,
                                                                                      wait_for):
    asked = await api("kernels/placements", "POST", {"template": "interactive", "kernel_id": "k-1"})
    await wait_for(asked["id"], lambda w: w["state"] == "admitted")
    status, error = await api_error(f"kernels/placements/{asked['id']}/started", "POST", {"where": "a user's server"})
    assert (status, error["field"]) == (400, "connection") and "runs kernels in pods" in error["message"], error
    assert cluster.pod_of(asked["id"]) is None  # nothing started for a launch that could not be served
    released = await api(f"kernels/placements/{asked['id']}", "DELETE")
    assert released["state"] == "cancelled" and "before it ran" in released["reason"], released
