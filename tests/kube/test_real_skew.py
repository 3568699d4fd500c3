"""An answer of the real API server that the client's models cannot read (issue 34, defect 5).

    .venv/bin/python -m pytest tests/kube/test_real_skew.py -v

An API server of another version than the client's models may leave out a field the models hold required; the
client then raises a bare ``ValueError`` ("Invalid value for `containers`, must not be `None`") from deep inside
its deserialiser, after the object was made. Here the pod is created on the test control plane for real, as
rbac.yaml's ServiceAccount in the restricted namespace ``hetero``, and only the answer loses
``spec.containers`` on its way back (:class:`tests.kube.skew_proxy.SkewProxy`). The backend must name what it
could not read and delete the pod it made, so that no pod runs that the server does not know of.
tests/kube/test_refusals.py has the same case on the API-server double.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from jupyter_hetero.backends.base import Launch, Placed
from jupyter_hetero.backends.kubernetes.backend import KubernetesBackend
from jupyter_hetero.backends.kubernetes.config import KubernetesConfig

from ..harness import until
from .cluster_fixtures import WORKLOAD_LABEL, control_plane, hetero_namespace, kube_binaries  # noqa: F401 - fixtures
from .skew_proxy import SkewProxy


def test_a_pod_whose_answer_the_models_reject_is_named_and_deleted_on_the_real_api_server(
        control_plane, hetero_namespace, tmp_path: Path):
    admin = client.CoreV1Api(control_plane.api_client())
    with SkewProxy(control_plane, drop=("POST", "/pods", "spec.containers")) as proxy:
        kubeconfig = proxy.kubeconfig(hetero_namespace.kubeconfig, tmp_path / "through-proxy.kubeconfig")
        backend = KubernetesBackend(config=KubernetesConfig(kubeconfig=str(kubeconfig), namespace=hetero_namespace.name,
                                                            api_timeout=10), work_dir=str(tmp_path / "work"))
        placed = Placed(kind="job", tenant="test", user="skew-test", queue="batch", template="real-cluster-test",
                        flavor="cpu-standard", replicas=1, image="python:3.12-slim", cpu_milli=100, memory_mib=128)
        launch = Launch(workload_id=900_000_501, attempt=1, replica=0, node="cpu-worker-21",
                        argv=["command", "--", "python", "-c", "pass"], env={}, cwd=tmp_path,
                        log_path=tmp_path / "log.txt", exit_path=tmp_path / "exit-0.json", placed=placed)
        # MalformedResponse is a ValueError, as the client's bare error is: the test reads what is said and done.
        with pytest.raises(ValueError) as unreadable:
            backend.launch(launch)
        assert proxy.changed == 1, "the real API server's answer did not pass through the proxy"
    said = str(unreadable.value)
    assert said.startswith(f"the Kubernetes API answered the creation of pod {hetero_namespace.name}/"), said
    assert "V1PodSpec containers" in said or "`containers`" in said, said
    assert "\n" not in said, said

    def ours() -> list:
        return [pod for pod in admin.list_namespaced_pod(
            hetero_namespace.name, label_selector=f"{WORKLOAD_LABEL}={launch.workload_id}").items
            if pod.metadata.deletion_timestamp is None]

    # The pod was made for real, and the backend took it back: none of it is left to run unknown to the server.
    until(lambda: not ours(), "the pod whose answer could not be read to be deleted", timeout=30)
