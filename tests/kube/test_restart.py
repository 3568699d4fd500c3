"""A real `jupyter server` on the Kubernetes backend, stopped while a job's pod runs and started again: the
pod is re-adopted and its job ends as it would have; pods and secrets no workload holds are deleted."""

from __future__ import annotations

import json

import pytest

from jupyter_hetero.notebook.client import HeteroClient

from ..harness import LabServer, ServerLayout, until
from .apiserver import FakeApiServer
from .kubelet import LocalKubelet
from .test_backend import CPU_NODE, GPU_NODE, NAMESPACE, kubernetes_settings, node_object

pytestmark = pytest.mark.slow

HOLD = "import os, sys, time\nprint('holding', flush=True)\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\nprint('released')\n"
OURS = {"app.kubernetes.io/managed-by": "jupyter-hetero", "hetero.jupyter.org/workload-id": "999"}


def start(layout: ServerLayout, name: str) -> LabServer:
    return LabServer.start(layout, app="server", log_path=layout.root / f"{name}.log", extra_args=[
        f"--HeteroApp.db_url=sqlite:///{layout.state / 'hetero.sqlite'}", f"--HeteroApp.work_dir={layout.state / 'work'}",
        "--HeteroApp.schedule_interval=0.2"])


def test_a_restart_re_adopts_running_pods_and_deletes_orphans(tmp_path):
    api = FakeApiServer().start()
    kubelet = None
    try:
        for name in ("cpu-only", "dgx-a100"):
            api.put(node_object(name))
        kubelet = LocalKubelet(api, (CPU_NODE, GPU_NODE), tmp_path / "kubelet").start()
        layout = ServerLayout.create(tmp_path / "server")
        settings = {"HeteroApp": {"backend": "kubernetes", "discover_local": False},
                    "KubernetesConfig": kubernetes_settings(api, tmp_path, str(layout.state / "work"))}
        (layout.jupyter_config / "jupyter_server_config.json").write_text(json.dumps(settings), encoding="utf-8")
        (layout.notebooks / "hold.py").write_text(HOLD, encoding="utf-8")
        release = tmp_path / "release"
        # What a server that crashed would leave: a kernel's pod and its connection Secret, held by no workload.
        api.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hetero-kernel-999-a1-r0", "namespace": NAMESPACE,
                 "labels": OURS}, "spec": {"containers": [{"name": "kernel", "image": "registry.example/k:1"}]}})
        api.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hetero-kernel-999-a1-r0-connection",
                 "namespace": NAMESPACE, "labels": OURS}, "data": {}})

        with start(layout, "before") as server:
            client = HeteroClient(server.base_url, server.token)
            until(lambda: api.get("Pod", "hetero-kernel-999-a1-r0", NAMESPACE) is None, "the orphan pod to go")
            until(lambda: api.get("Secret", "hetero-kernel-999-a1-r0-connection", NAMESPACE) is None,
                  "the orphan secret to go")  # deleted right after the pods
            job = client.submit(template="data-preprocessing", script={"path": "hold.py", "args": [str(release)]})
            until(lambda: client.workload(job["id"])["state"] == "running", "the job to run")
            pod = until(lambda: next((p for p in api.list("Pod", NAMESPACE) if p.get("status", {}).get("phase") == "Running"),
                                     None), "the job's pod to run")
        # The server is gone; the pod runs on, as pods do.
        assert api.get("Pod", pod["metadata"]["name"], NAMESPACE)["status"]["phase"] == "Running"

        with start(layout, "after") as server:
            client = HeteroClient(server.base_url, server.token)
            adopted = until(lambda: next((e for e in client.events(job["id"]) if e["type"] == "adopted"), None),
                            "the job to be re-adopted")
            assert adopted["reason"] == "server restarted; 1/1 processes still alive"
            assert api.get("Pod", pod["metadata"]["name"], NAMESPACE) is not None  # not an orphan: kept
            release.touch()
            done = until(lambda: (w := client.workload(job["id"]))["state"] in ("succeeded", "failed") and w,
                         "the re-adopted job to end")
            assert done["state"] == "succeeded", done
            log = "".join(client.logs(job["id"]))
            assert (log.count("holding"), log.count("released")) == (1, 1), log  # the log copied again, whole, once
            until(lambda: api.get("Pod", pod["metadata"]["name"], NAMESPACE) is None, "its pod to be deleted")
    finally:
        if kubelet is not None:
            kubelet.stop()
        api.stop()
