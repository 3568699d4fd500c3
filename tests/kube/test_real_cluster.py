"""The Kubernetes backend against a real cluster: the one ``KUBECONFIG`` points at, when it answers.

    KUBECONFIG=~/.kube/config HETERO_TEST_NAMESPACE=hetero-test python -m pytest tests/kube/test_real_cluster.py -v -s

Without a reachable cluster the whole module is skipped, with the reason. See docs/kubernetes.md
("Testing against a real cluster") for the permissions it needs and the variables it reads:
``HETERO_TEST_IMAGE`` (default ``python:3.12-slim``), ``HETERO_TEST_NAMESPACE`` (default ``default``)
and ``HETERO_TEST_RUNNER=1`` (the image has jupyter-hetero: run the job through its runner, as the
server does).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest
from kubernetes import client

from jupyter_hetero.backends.base import Launch, Placed
from jupyter_hetero.backends.kubernetes.backend import KubernetesBackend, node_admission
from jupyter_hetero.backends.kubernetes.config import KubernetesConfig
from jupyter_hetero.backends.kubernetes.factory import PodFactory
from jupyter_hetero.backends.kubernetes.nodes import Requests, read_node
from jupyter_hetero.cli.k8s import render
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog

from ..harness import until

IMAGE = os.environ.get("HETERO_TEST_IMAGE", "python:3.12-slim")
NAMESPACE = os.environ.get("HETERO_TEST_NAMESPACE", "default")
THROUGH_RUNNER = os.environ.get("HETERO_TEST_RUNNER") == "1"
# Seconds a pod may take from creation to its end: an image pull on a fresh node included.
POD_TIMEOUT_S = float(os.environ.get("HETERO_TEST_POD_TIMEOUT", "300"))


def _reachable_cluster() -> str | None:
    """Why there is no cluster to test against, or None when the one of KUBECONFIG answers."""
    path = os.environ.get("KUBECONFIG")
    if not path:
        return "KUBECONFIG is not set: there is no real cluster to test against"
    try:
        api_client = KubernetesConfig(kubeconfig=path if os.pathsep not in path else "").api_client()
        client.CoreV1Api(api_client).get_api_resources(_request_timeout=5)
    except Exception as exc:  # noqa: BLE001 - whatever the reason, the cluster cannot be tested
        return f"the cluster of KUBECONFIG={path} cannot be reached: {type(exc).__name__}: {exc}"
    return None


_why_not = _reachable_cluster()
if _why_not is not None:
    pytest.skip(_why_not, allow_module_level=True)


def settings() -> KubernetesConfig:
    path = os.environ["KUBECONFIG"]
    return KubernetesConfig(kubeconfig=path if os.pathsep not in path else "", namespace=NAMESPACE, watch_timeout=30,
                            image_pull_timeout=120, unschedulable_timeout=120)


@pytest.fixture
def backend():
    """A started backend over the real cluster: its caches hold the nodes and our pods."""
    started = KubernetesBackend(config=settings())
    started.start(timeout=60)
    yield started
    started.close()


class _DirectFactory(PodFactory):
    """Job pods that run the job's command itself, for an image without jupyter-hetero (and its runner)."""

    def job_objects(self, launch: Launch):
        pod, service = super().job_objects(launch)
        pod.spec.containers[0].command = list(launch.argv[2:])  # argv is ["command", "--", *the command]
        return pod, service


def test_the_reflector_lists_the_real_nodes_and_reads_every_one(backend):
    nodes = backend.reflector.nodes.items()
    assert nodes, "the cluster lists no nodes"
    foreign = backend.reflector.requests_by_node()
    unreadable = []
    for node in sorted(nodes.values(), key=lambda n: n["metadata"]["name"]):
        reading = read_node(node, foreign=foreign.get(node["metadata"]["name"], Requests()),
                            tolerated=backend.config.tolerations)
        accelerator = reading.capability.accelerator if reading.capability else None
        print(f"{reading.name}: {node_admission(node, reading.schedulable)}, "
              f"{accelerator.count if accelerator else 0} x {accelerator.model if accelerator else 'no accelerator'}"
              f", held by others {reading.held}")
        for finding in reading.findings:
            print(f"    finding: {finding}")
        unreadable += [finding for finding in reading.findings if "could not be read" in finding]
    assert unreadable == [], "read_node met an exception on these nodes"
    seen = backend.poll_nodes()
    assert seen is not None and {c.name for c in seen.capabilities} <= set(nodes)


def _schedulable_node(backend: KubernetesBackend) -> str:
    for node in sorted(backend.reflector.nodes.items().values(), key=lambda n: n["metadata"]["name"]):
        reading = read_node(node, tolerated=backend.config.tolerations)
        if reading.capability is not None and node_admission(node, reading.schedulable) == "admitted":
            return reading.name
    pytest.fail("no node of the cluster is Ready, uncordoned and free of taints our pods do not tolerate")


def test_a_job_pod_runs_on_a_real_node_and_ends_with_its_exit_code_and_log(backend, tmp_path: Path):
    if not THROUGH_RUNNER:
        backend.factory = _DirectFactory(backend.config, backend.factory.work_dir)
    node = _schedulable_node(backend)
    workload_id = 900_000_000 + secrets.randbelow(99_999_999)  # never the name of a pod left by an earlier run
    placed = Placed(kind="job", tenant="test", user="real-cluster-test", queue="batch", template="real-cluster-test",
                    flavor="cpu-standard", replicas=1, image=IMAGE, cpu_milli=100, memory_mib=128)
    # In the pod the runner writes its exit file where it can; on this machine that path does not exist, so
    # the exit code read is the container's, as when no shared work volume is mounted.
    launch = Launch(workload_id=workload_id, attempt=1, replica=0, node=node,
                    argv=["command", "--", "python", "-c", "print(42)"], env={}, cwd=tmp_path,
                    log_path=tmp_path / "job.log", exit_path=Path(f"/tmp/hetero-exit-{workload_id}.json"),
                    placed=placed)
    handle = backend.launch(launch)
    try:
        def ended() -> bool:
            problem = backend.problem(handle)
            assert problem is None, f"pod {handle.pod} cannot make progress: {problem}"
            return not backend.scan([handle])

        until(ended, f"pod {handle.pod} on node {node} to end", timeout=POD_TIMEOUT_S)
        until(lambda: b"42" in _read(launch.log_path), f"the log of pod {handle.pod} to be copied", timeout=30)
        state = backend.pod_state(handle.pod)
        result = backend.exit(handle)
    finally:
        backend.kill(handle)  # a no-op once exit() deleted it; the pod never outlives a failed test
    assert state is not None and state.exit_code == 0, state
    assert result.code == 0 and result.reason is None, result
    assert _read(launch.log_path).strip() == b"42"
    until(lambda: backend.pod(handle.pod) is None, f"pod {handle.pod} to be gone after exit() deleted it", timeout=90)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _shipped_cases():
    catalog = load_catalog(DEFAULT_CATALOG_PATH)
    for template in catalog.templates:
        for kernel in (False, True) if template.interactive else (False,):
            marks = ()
            if template.request.device_milli and not template.request.devices:
                # A device fraction has an extended resource only on HAMi nodes; render's synthetic node is none.
                marks = pytest.mark.xfail(raises=ValueError, strict=True,
                                          reason="render places a device fraction on a synthetic node without HAMi")
            yield pytest.param(template.name, kernel, marks=marks,
                               id=f"{template.name} {'kernel' if kernel else 'job'}")


@pytest.mark.parametrize(("template", "kernel"), list(_shipped_cases()))
def test_the_rendered_objects_of_every_shipped_template_pass_the_api_servers_validation(template, kernel):
    objects = render(load_catalog(DEFAULT_CATALOG_PATH), template, kernel=kernel, config=settings())
    core = client.CoreV1Api(settings().api_client())
    create = {"Pod": core.create_namespaced_pod, "Secret": core.create_namespaced_secret,
              "Service": core.create_namespaced_service}
    for obj in objects:
        try:
            create[obj["kind"]](NAMESPACE, obj, dry_run="All")
        except client.ApiException as exc:
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']} of {template}: {exc.status} {exc.reason}: {exc.body}")
