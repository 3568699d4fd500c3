"""The Hetero panel over the Kubernetes backend, in a real JupyterLab: the cluster's nodes in the panel, a job
submitted from it running in a pod, and a hetero kernel from the launcher running in a pod.

The cluster is the tests' wire-level fake API server with its local kubelet (tests/kube), holding the
realistic ``cpu-only`` and ``dgx-a100`` nodes; the server is its own ``jupyter lab`` for this module.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import expect

from jupyter_hetero.backends.kubernetes import rbac

from ..harness import LabServer, ServerLayout, until, wait_for_lab_shell
from ..kube.apiserver import FakeApiServer
from ..kube.fixtures import leftover_processes
from ..kube.kubelet import LocalKubelet
from .conftest import _save_failure_evidence
from .test_panel_sections import (
    choose_template,
    open_panel,
    run_from_palette,
    submit_job,
    workload_row,
)

pytestmark = pytest.mark.ui

NODE_DATA = Path(__file__).resolve().parents[1] / "data" / "kubernetes" / "nodes"
CPU_NODE, GPU_NODE = "cpu-worker-21", "dgx-a100-01"
NAMESPACE = "hetero"
API = "hetero/api/v1"
WORKLOAD_LABEL = "hetero.jupyter.org/workload-id"
SCRIPT = "hello_kubernetes.py"
SCRIPT_OUTPUT = "hello from a pod"


@dataclass
class KubeLab:
    """A ``jupyter lab`` on the kubernetes backend, the fake cluster it talks to, and every pod it created."""

    cluster: FakeApiServer
    kubelet: LocalKubelet
    lab: LabServer | None = None
    created: list[dict] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, _kind: str, obj: dict) -> None:
        # Called from the fake server's threads on every change; the first version of a pod is its creation.
        if obj.get("kind") == "Pod" and obj["metadata"].get("namespace") == NAMESPACE:
            with self._lock:
                if all(p["metadata"]["uid"] != obj["metadata"]["uid"] for p in self.created):
                    self.created.append(obj)

    def pod_of(self, workload_id: int) -> dict | None:
        """The pod created for the workload, as it was created."""
        with self._lock:
            return next((p for p in self.created if p["metadata"]["labels"].get(WORKLOAD_LABEL) == str(workload_id)),
                        None)

    def live_pods(self, workload_id: int) -> list[dict]:
        return [p for p in self.cluster.list("Pod", NAMESPACE)
                if p["metadata"]["labels"].get(WORKLOAD_LABEL) == str(workload_id)]


def settled_session(lab: LabServer) -> dict | None:
    """The notebook's one session, once JupyterLab has named it (its last step after starting the kernel).

    Only sessions are polled: listing kernels while one starts can hit jupyter_server's window in which
    the starting kernel is listed before it has a ``last_activity`` (an HTTP 500).
    """
    sessions = lab.api("api/sessions")
    if len(sessions) == 1 and sessions[0]["path"] == "Untitled.ipynb" and sessions[0]["kernel"]:
        return sessions[0]
    return None


def node_object(name: str) -> dict:
    return yaml.safe_load((NODE_DATA / f"{name}.yaml").read_text(encoding="utf-8"))


def required_nodes(pod: dict) -> list[str]:
    """The node names the pod's required node affinity allows (kube-scheduler binds it to one of them)."""
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return [value for term in terms["nodeSelectorTerms"] for match in term.get("matchFields", [])
            if match["key"] == "metadata.name" and match["operator"] == "In" for value in match["values"]]


@pytest.fixture(scope="module")
def kube_lab(tmp_path_factory, ui_output) -> Iterator[KubeLab]:
    """The fake cluster, its kubelet and a ``jupyter lab`` on it; all stopped at the end, no process left."""
    root = tmp_path_factory.mktemp("kube-lab")
    cluster = FakeApiServer().start()
    kubelet = lab = None
    try:
        for name in ("cpu-only", "dgx-a100"):
            cluster.put(node_object(name))
        kubelet = LocalKubelet(cluster, (CPU_NODE, GPU_NODE), root / "kubelet").start()
        kube_lab = KubeLab(cluster, kubelet)
        cluster.subscribe(kube_lab.record)
        layout = ServerLayout.create(root / "jupyter-lab")
        work_dir = layout.state / "work"
        # A Dict setting reads best from a config file; the server finds it in its private config dir.
        (layout.jupyter_config / "jupyter_server_config.json").write_text(json.dumps({"KubernetesConfig": {
            "kubeconfig": str(cluster.kubeconfig(root / "kubeconfig")),
            "namespace": NAMESPACE,
            "work_volume": {"host_path": str(work_dir)},
            "watch_timeout": 5,
            "kernel_start_timeout": 60,
        }}))
        kube_lab.lab = lab = LabServer.start(layout, log_path=ui_output / "jupyter-lab-kubernetes.log", extra_args=[
            "--ServerApp.identity_provider_class=jupyter_hetero.auth.TeamIdentityProvider",
            "--HeteroApp.backend=kubernetes",
            "--HeteroApp.discover_local=False",
            "--HeteroApp.emulated_nodes_file=",
            f"--HeteroApp.db_url=sqlite:///{layout.state / 'hetero.sqlite'}",
            f"--HeteroApp.work_dir={work_dir}",
            "--HeteroApp.schedule_interval=0.5",
        ])
        yield kube_lab
    finally:
        if lab is not None:
            lab.stop()
        if kubelet is not None:
            kubelet.stop()
        cluster.stop()
    assert leftover_processes(root) == [], "a pod's or the server's process outlived the test"
    used = {(verb, f"{resource}/{sub}" if sub else resource) for verb, resource, sub in cluster.requests}
    assert used <= rbac.granted(), f"calls rbac.yaml does not grant: {sorted(used - rbac.granted())}"


@pytest.fixture
def kube_page(request, browser, kube_lab, ui_output):
    """A fresh browser page logged into the Kubernetes-backed JupyterLab, in a workspace of its own."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
    # The calls that change server state (sessions, kernels, workloads), with their answers, for failures.
    page.on("requestfinished", lambda req: console.append(_call(req)) if req.method != "GET" else None)
    try:
        page.goto(kube_lab.lab.lab_url("lab/workspaces/kubernetes"))
        wait_for_lab_shell(page)
        yield page
    finally:
        report = getattr(request.node, "ui_call_report", None)
        if report is None or report.failed:
            console.append(f"pods created: {[p['metadata']['name'] for p in kube_lab.created]}")
            _save_failure_evidence(page, console, ui_output, request.node.nodeid)
        context.close()


def _call(request) -> str:
    response = request.response()
    return f"call: {request.method} {request.url.split('?')[0]} {request.post_data} -> {response and response.status}"


def test_the_panel_runs_a_job_and_a_kernel_in_pods_on_the_clusters_nodes(kube_lab, kube_page, ui_output):
    page, lab = kube_page, kube_lab.lab
    nodes = {node["name"]: node for node in lab.api(f"{API}/nodes")}
    assert {name: (node["flavor"], node["source"]) for name, node in nodes.items()} == {
        CPU_NODE: ("cpu-standard", "kubernetes"), GPU_NODE: ("a100-80g", "kubernetes")}

    # The panel's nodes are the cluster's, mapped to the catalog's flavors.
    panel = open_panel(page, "nodes")
    cards = panel.locator(".jp-hetero-node")
    expect(cards).to_have_count(2, timeout=30_000)
    expect(panel.locator(f".jp-hetero-node[data-node='{CPU_NODE}'] .jp-hetero-node-flavor")).to_have_text("cpu-standard")
    gpu = panel.locator(f".jp-hetero-node[data-node='{GPU_NODE}']")
    expect(gpu.locator(".jp-hetero-node-flavor")).to_have_text("a100-80g")
    expect(gpu.locator(".jp-hetero-node-accelerator")).to_contain_text("8× ")
    expect(panel.locator(".jp-hetero-node.jp-hetero-mod-emulated")).to_have_count(0)
    expect(panel.locator(".jp-hetero-node .jp-hetero-mod-cluster.jp-hetero-badge")).to_have_text(["cluster node"] * 2)
    page.screenshot(path=str(ui_output / "kubernetes-nodes.png"))
    # The launch preview counts the cluster's devices.
    panel = open_panel(page)
    choose_template(panel, "fine-tuning")
    expect(panel.locator(".jp-hetero-flavor[data-flavor='a100-80g']")).to_contain_text("8 of 8 devices free")

    # A job from the panel: the data-preprocessing template on the file browser's selection.
    lab.api(f"api/contents/{SCRIPT}", "PUT",
            {"type": "file", "format": "text", "content": f"print({SCRIPT_OUTPUT!r})\n"})
    panel = open_panel(page)
    choose_template(panel, "data-preprocessing")
    expect(panel.locator(".jp-hetero-flavor[data-flavor='cpu-standard']")).to_contain_text("starts now")
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id='filebrowser']").click()
    page.locator(".jp-DirListing-item", has_text=SCRIPT).click()
    panel = open_panel(page)
    panel.locator(".jp-hetero-use-selection").click()
    expect(panel.locator("#jp-hetero-job-path")).to_have_value(SCRIPT)

    workload_id = submit_job(page, panel)

    panel.locator(".jp-hetero-tab[data-section=work]").click()
    row = workload_row(panel, workload_id)
    expect(row).to_have_attribute("data-state", "succeeded", timeout=60_000)
    expect(row.locator(".jp-hetero-workload-placement")).to_contain_text("cpu-standard")
    row.locator(".jp-hetero-action-logs").click()
    logs = page.locator(f".jp-hetero-logs[data-workload-id='{workload_id}']")
    expect(logs.locator(".jp-hetero-log-text")).to_contain_text(SCRIPT_OUTPUT, timeout=30_000)
    expect(logs).to_have_attribute("data-done", "true", timeout=30_000)
    page.screenshot(path=str(ui_output / "kubernetes-job.png"))
    # kube-scheduler placed it where the engine decided: required node affinity, never nodeName.
    pod = kube_lab.pod_of(workload_id)
    assert pod is not None, "no pod was created for the job"
    assert required_nodes(pod) == [CPU_NODE] and not pod["spec"].get("nodeName"), pod["spec"]
    until(lambda: not kube_lab.live_pods(workload_id), "the ended job's pod to be deleted")

    # A hetero kernel from the launcher runs its cells in a pod on the CPU node.
    run_from_palette(page, "New Launcher")
    # The new launcher is the visible one (a fresh workspace already has one, behind it).
    page.locator(".jp-Launcher:visible .jp-LauncherCard[data-category='Notebook']",
                 has_text="Python 3 (hetero CPU)").click()
    notebook = page.locator(".jp-NotebookPanel")
    expect(notebook).to_have_count(1, timeout=60_000)
    # JupyterLab may start the new notebook's kernel twice and keep one; run the cell once it has settled.
    session = until(lambda: settled_session(lab), "the notebook's session to settle on one kernel", timeout=60)
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(1, timeout=60_000)
    cell = notebook.locator(".jp-Cell .cm-content").first
    cell.click()
    cell.fill("import os; print('on', os.environ['HETERO_NODE'])")
    page.keyboard.press("Shift+Enter")
    expect(notebook.locator(".jp-OutputArea-output").first).to_have_text(f"on {CPU_NODE}", timeout=60_000)
    kernel_id = session["kernel"]["id"]
    status = page.locator(".jp-hetero-placement")
    expect(status).to_contain_text("experiment", timeout=30_000)
    expect(status).to_have_attribute("data-kernel-id", kernel_id)
    workload = next(w for w in lab.api(f"{API}/workloads?kind=kernel") if w["spec"]["kernel_id"] == kernel_id)
    kernel_pod = kube_lab.pod_of(workload["id"])
    assert kernel_pod is not None and required_nodes(kernel_pod) == [CPU_NODE], kernel_pod
    page.screenshot(path=str(ui_output / "kubernetes-kernel.png"))

    lab.api(f"api/kernels/{kernel_id}", "DELETE")
    until(lambda: not kube_lab.live_pods(workload["id"]), "the kernel's pod to go with its shutdown")
