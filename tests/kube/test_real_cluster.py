"""The Kubernetes backend against a real cluster: the test control plane, or the one ``KUBECONFIG`` points at.

    .venv/bin/python -m pytest tests/kube/test_real_cluster.py -v -s -rsx            # the test control plane
    KUBECONFIG=~/.kube/config HETERO_TEST_NAMESPACE=hetero-test python -m pytest tests/kube/test_real_cluster.py -v -s

Without ``KUBECONFIG`` the tests run against a real control plane this session starts on 127.0.0.1
(:mod:`tests.kube.cluster_fixtures`: etcd, kube-apiserver, kube-scheduler, kube-controller-manager and
kwok's nodes of every recorded label scheme), as the ServiceAccount of ``rbac.yaml`` with a TokenRequest
token, in the namespace ``hetero`` (Pod Security ``restricted``, a ResourceQuota, a LimitRange). With
``KUBECONFIG`` set, its cluster must answer, or every test fails with the reason. See docs/kubernetes.md
("Testing against a real cluster") for the variables read with ``KUBECONFIG``: ``HETERO_TEST_IMAGE``
(default ``python:3.12-slim``), ``HETERO_TEST_NAMESPACE`` (default ``default``) and ``HETERO_TEST_RUNNER=1``
(the image has jupyter-hetero: run the job through its runner, as the server does).
"""

from __future__ import annotations

import json
import os
import time
import secrets
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from jupyter_hetero.backends.base import Launch, Placed
from jupyter_hetero.backends.kubernetes.backend import KubernetesBackend, node_readiness
from jupyter_hetero.backends.kubernetes.config import KubernetesConfig
from jupyter_hetero.backends.kubernetes.factory import PodFactory
from jupyter_hetero.backends.kubernetes.nodes import Requests, read_node
from jupyter_hetero.cli.k8s import render
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog

from ..harness import until
from .cluster_fixtures import (  # noqa: F401 - fixtures
    FAST_FAILOVER,
    control_plane,
    hetero_namespace,
    kube_binaries,
    kwok,
    kwok_nodes,
    local_kubelet,
)
from .real_kubelet import RealKubelet
from .nodes import kwok_node

IMAGE = os.environ.get("HETERO_TEST_IMAGE", "python:3.12-slim")
NAMESPACE = os.environ.get("HETERO_TEST_NAMESPACE", "default")
THROUGH_RUNNER = os.environ.get("HETERO_TEST_RUNNER") == "1"
# Seconds a pod may take from creation to its end: an image pull on a fresh node included.
POD_TIMEOUT_S = float(os.environ.get("HETERO_TEST_POD_TIMEOUT", "300"))
NEEDS_THE_TEST_PLANE = "needs the test control plane's kwok nodes: KUBECONFIG names another cluster"


@dataclass(frozen=True)
class Cluster:
    """Where the tests go: a kubeconfig ("" is KUBECONFIG's own list of files), a namespace, and whether this is
    the test control plane (kwok's recorded nodes; the admin's kubeconfig in ``admin``)."""

    kubeconfig: str
    namespace: str
    admin: Path | None = None
    recorded_nodes: dict | None = None

    @property
    def local(self) -> bool:
        return self.admin is not None

    def settings(self) -> KubernetesConfig:
        return KubernetesConfig(kubeconfig=self.kubeconfig, namespace=self.namespace, watch_timeout=30,
                                image_pull_timeout=120, unschedulable_timeout=120)


def _unreachable(path: str) -> str | None:
    """Why the cluster of KUBECONFIG cannot be tested, or None when it answers."""
    try:
        api_client = KubernetesConfig(kubeconfig=path if os.pathsep not in path else "").api_client()
        client.CoreV1Api(api_client).get_api_resources(_request_timeout=5)
    except Exception as exc:  # noqa: BLE001 - whatever the reason, the cluster cannot be tested
        return f"the cluster of KUBECONFIG={path} cannot be reached: {type(exc).__name__}: {exc}"
    return None


@pytest.fixture(scope="module")
def cluster(request) -> Cluster:
    path = os.environ.get("KUBECONFIG")
    if path:
        why = _unreachable(path)
        if why is not None:
            pytest.fail(why, pytrace=False)
        return Cluster(kubeconfig=path if os.pathsep not in path else "", namespace=NAMESPACE)
    namespace = request.getfixturevalue("hetero_namespace")
    recorded = request.getfixturevalue("kwok_nodes")
    plane = request.getfixturevalue("control_plane")
    return Cluster(kubeconfig=str(namespace.kubeconfig), namespace=namespace.name, admin=plane.kubeconfig,
                   recorded_nodes=recorded)


@pytest.fixture
def backend(cluster):
    """A started backend over the real cluster: its caches hold the nodes and our pods."""
    started = KubernetesBackend(config=cluster.settings())
    started.start(timeout=60)
    yield started
    started.close()


class _DirectFactory(PodFactory):
    """Job pods that run the job's command itself, for an image without jupyter-hetero (and its runner)."""

    def job_objects(self, launch: Launch):
        pod, service = super().job_objects(launch)
        pod.spec.containers[0].command = list(launch.argv[2:])  # argv is ["command", "--", *the command]
        return pod, service


def test_the_reflector_lists_the_real_nodes_and_reads_every_one(cluster, backend):
    nodes = backend.reflector.nodes.items()
    assert nodes, "the cluster lists no nodes"
    if cluster.local:
        assert set(cluster.recorded_nodes) <= set(nodes)
    foreign = backend.reflector.requests_by_node()
    unreadable = []
    for node in sorted(nodes.values(), key=lambda n: n["metadata"]["name"]):
        reading = read_node(node, foreign=foreign.get(node["metadata"]["name"], Requests()),
                            tolerated=backend.config.tolerations)
        accelerator = reading.capability.accelerator if reading.capability else None
        print(f"{reading.name}: {node_readiness(node, reading.schedulable)}, "
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
        if reading.capability is not None and node_readiness(node, reading.schedulable) == "ready":
            return reading.name
    pytest.fail("no node of the cluster is Ready, uncordoned and free of taints our pods do not tolerate")


def test_a_job_pod_runs_on_a_real_node_and_ends_with_its_exit_code_and_log(cluster, backend, tmp_path: Path,
                                                                          request):
    # On the test control plane the job goes to the local kubelet's node (kwok's run no container) and runs
    # through the runner, which this machine has.
    if not THROUGH_RUNNER and not cluster.local:
        backend.factory = _DirectFactory(backend.config, backend.factory.work_dir)
    node = request.getfixturevalue("local_kubelet").name if cluster.local else _schedulable_node(backend)
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
            yield pytest.param(template.name, kernel, id=f"{template.name} {'kernel' if kernel else 'job'}")


@pytest.mark.parametrize(("template", "kernel"), list(_shipped_cases()))
def test_the_rendered_objects_of_every_shipped_template_pass_the_api_servers_validation(cluster, template, kernel):
    objects = render(load_catalog(DEFAULT_CATALOG_PATH), template, kernel=kernel, config=cluster.settings())
    core = client.CoreV1Api(cluster.settings().api_client())
    create = {"Pod": core.create_namespaced_pod, "Secret": core.create_namespaced_secret,
              "Service": core.create_namespaced_service}
    for obj in objects:
        try:
            create[obj["kind"]](cluster.namespace, obj, dry_run="All")
        except client.ApiException as exc:
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']} of {template}: {exc.status} {exc.reason}: {exc.body}")


# One recorded node per label scheme of docs/kubernetes.md ("Node labels per vendor"), and what it must read as.
LABEL_SCHEMES = [
    pytest.param("h100-07", ("nvidia", "H100-80GB-HBM3", 8), id="GPU feature discovery and NFD"),
    pytest.param("t4-infer-03", ("nvidia", "Tesla T4", 1), id="old GPU feature discovery"),
    pytest.param("a100-mig-single-05", ("nvidia", "A100-SXM4-80GB MIG 1g.10gb", 56), id="MIG single strategy"),
    pytest.param("a100-mig-mixed-02", ("nvidia", "A100-SXM4-40GB MIG 1g.5gb", 28), id="MIG mixed strategy"),
    pytest.param("a10-shared-11", ("nvidia", "A10", 4), id="HAMi"),
    pytest.param("mi300x-02", ("amd", "AMD Instinct MI300X", 8), id="AMD node labeller"),
    pytest.param("pvc-max-01", ("intel", "Max 1550", 8), id="Intel GPU plugin and NFD rules"),
    pytest.param("atlas-800t-a2-09", ("ascend", "910B3", 8), id="Ascend 910B"),
    pytest.param("atlas-300i-duo-04", ("ascend", "310P3", 8), id="Ascend 310P"),
    pytest.param("cpu-worker-21", None, id="CPU only"),
]


@pytest.fixture
def local_backend(cluster, backend):
    if not cluster.local:
        pytest.skip(NEEDS_THE_TEST_PLANE)
    return backend


@pytest.mark.parametrize(("name", "accelerator"), LABEL_SCHEMES)
def test_a_kwok_node_of_each_label_scheme_reads_through_the_api_server_as_its_recorded_object(
        cluster, local_backend, name, accelerator):
    seen = local_backend.poll_nodes()
    assert seen is not None, "the backend's reflector has not listed the nodes"
    capabilities = {capability.name: capability for capability in seen.capabilities}
    assert name in capabilities, f"{name} is not in the inventory: {sorted(capabilities)}"
    read = capabilities[name].accelerator
    assert (read and (read.vendor, read.model, read.count)) == (accelerator or None)
    # Everything else the reader takes from the node survives the API server (validation, defaulting) and
    # kwok's status: the node reads as its recorded object does.
    got = capabilities[name].model_dump()
    recorded = read_node(cluster.recorded_nodes[name], tolerated=local_backend.config.tolerations).capability
    want = recorded.model_dump()
    # kwok adds the labels a kubelet sets on itself (beta.kubernetes.io/arch, /os); every recorded one must stay.
    added = set(got["labels"]) - set(want["labels"])
    assert added <= {"beta.kubernetes.io/arch", "beta.kubernetes.io/os"}, added
    got["labels"] = {key: value for key, value in got["labels"].items() if key not in added}
    assert {key: (got[key], want[key]) for key in want if got[key] != want[key]} == {}, "(through the API, recorded)"
    assert seen.states[name] == "ready"


def test_the_reflector_watches_nodes_join_leave_and_get_cordoned(cluster, local_backend):
    core = client.CoreV1Api(KubernetesConfig(kubeconfig=str(cluster.admin)).api_client())
    late = kwok_node(cluster.recorded_nodes["h100-07"])
    late["metadata"]["name"] = late["metadata"]["labels"]["kubernetes.io/hostname"] = "h100-late"

    def state() -> str | None:
        seen = local_backend.poll_nodes()
        return seen.states.get("h100-late") if seen else None

    core.create_node(late)
    try:
        until(lambda: state() == "ready", "the node created after the list to be ready", timeout=30)
        core.patch_node("h100-late", {"spec": {"unschedulable": True}})
        until(lambda: state() == "cordoned", "the cordoned node to read cordoned", timeout=30)
    finally:
        core.delete_node("h100-late")
    until(lambda: state() is None, "the deleted node to leave the inventory", timeout=30)


def test_kube_scheduler_binds_a_job_pod_to_the_chosen_kwok_node_and_it_runs(cluster, local_backend, tmp_path: Path):
    core = client.CoreV1Api(KubernetesConfig(kubeconfig=str(cluster.admin)).api_client())
    seen = local_backend.poll_nodes()
    # The node the engine would choose for one H100: the backend's own inventory names it.
    chosen = next(c for c in seen.capabilities if c.accelerator and c.accelerator.model == "H100-80GB-HBM3")
    accelerator = chosen.accelerator
    placed = Placed(kind="job", tenant="test", user="real-cluster-test", queue="batch", template="real-cluster-test",
                    flavor="h100", replicas=1, image=IMAGE, cpu_milli=500, memory_mib=512,
                    devices=((1000, accelerator.memory_mib),), accelerator=accelerator)
    launch = Launch(workload_id=900_000_001, attempt=1, replica=0, node=chosen.name,
                    argv=["command", "--", "python", "-c", "print(42)"], env={}, cwd=tmp_path,
                    log_path=tmp_path / "job.log", exit_path=tmp_path / "exit.json", placed=placed)
    handle = local_backend.launch(launch)
    try:
        # The backend's own view: its reflector sees the pod started and Ready (kwok's status, through the watch).
        until(lambda: (state := local_backend.pod_state(handle.pod)) is not None and state.started and state.ready,
              f"pod {handle.pod} to run on kwok's {chosen.name}", timeout=60)
        assert local_backend.running(handle) and local_backend.problem(handle) is None
        namespace, name = handle.pod.split("/", 1)  # the backend's key of a pod
        assert namespace == cluster.namespace
        pod = core.read_namespaced_pod(name, namespace)
        assert pod.spec.node_name == chosen.name
        assert pod.spec.containers[0].resources.requests["nvidia.com/gpu"] == "1"
        # Bound by kube-scheduler (the pod was created with a node affinity, never a nodeName).
        events = core.list_namespaced_event(cluster.namespace, field_selector=f"involvedObject.name={name}")
        scheduled = [e for e in events.items if e.reason == "Scheduled"]
        assert scheduled and scheduled[0].reporting_component == "default-scheduler", events.items
        assert chosen.name in scheduled[0].message
        assert pod.status.phase == "Running"
    finally:
        local_backend.kill(handle)
    until(lambda: local_backend.pod(handle.pod) is None, f"pod {handle.pod} to be gone after kill()", timeout=60)


def _job(workload_id: int, node: str, code: str, tmp_path: Path, *args: str) -> Launch:
    placed = Placed(kind="job", tenant="test", user="real-cluster-test", queue="batch", template="real-cluster-test",
                    flavor="cpu-standard", replicas=1, image=IMAGE, cpu_milli=100, memory_mib=128)
    return Launch(workload_id=workload_id, attempt=1, replica=0, node=node,
                  argv=["command", "--", "python", "-c", code, *args], env={}, cwd=tmp_path,
                  log_path=tmp_path / "job.log", exit_path=tmp_path / "exit.json", placed=placed)


# A job that checkpoints on SIGTERM: its step in the checkpoint file, then exit code 3 (neither 0 nor a signal's).
CHECKPOINTING = """
import pathlib, signal, sys, time
def stop(*_):
    pathlib.Path(sys.argv[1]).write_text("step=7")
    sys.exit(3)
signal.signal(signal.SIGTERM, stop)
print("training", flush=True)
time.sleep(120)
"""


def test_a_cancelled_job_gets_sigterm_through_its_runner_as_pid_1_and_writes_its_checkpoint(
        local_backend, local_kubelet, tmp_path: Path):
    checkpoint = tmp_path / "checkpoint"
    launch = _job(900_000_002, local_kubelet.name, CHECKPOINTING, tmp_path, str(checkpoint))
    handle = local_backend.launch(launch)
    try:
        until(lambda: b"training" in _read(launch.log_path), f"job pod {handle.pod} to run and log", timeout=60)
        stopped = time.monotonic()
        local_backend.signal_stop(handle)  # a graceful delete: the pod's 30 s grace period
        until(lambda: local_backend.pod(handle.pod) is None, f"pod {handle.pod} to end on SIGTERM", timeout=25)
        # Well within the grace period: the runner (PID 1 of its namespace, signalled alone) passed SIGTERM on,
        # where the kernel would have dropped it had the runner not handled it, leaving it to SIGKILL at 30 s.
        assert time.monotonic() - stopped < 20
    finally:
        local_backend.kill(handle)
    assert checkpoint.read_text() == "step=7"
    record = json.loads(launch.exit_path.read_text())  # what the engine records as the attempt's exit
    assert record["exit_code"] == 3, record


def test_a_node_that_stops_heartbeating_goes_not_ready_tainted_and_its_pods_are_evicted(
        cluster, local_backend, control_plane, tmp_path: Path):
    admin = client.CoreV1Api(control_plane.api_client())
    settings = cluster.settings()
    settings.tolerations = FAST_FAILOVER  # the taint-eviction controller evicts within the test
    backend = KubernetesBackend(config=settings)
    kubelet = RealKubelet(control_plane, "local-lost-1", tmp_path / "kubelet",
                          labels={"node.kubernetes.io/instance-type": "local-cpu-lost"}).start()
    backend.start(timeout=60)
    states: dict[str, str] = {}

    def node_state() -> str | None:
        """The node's admission state as the engine reads it: poll_nodes answers only when something changed."""
        seen = backend.poll_nodes()
        if seen is not None:
            states.clear()
            states.update(seen.states)
        return states.get(kubelet.name)

    handle = None
    try:
        # Until the node lifecycle controller sees it Ready, the node has the not-ready taint admission gave it.
        until(lambda: node_state() == "ready", f"{kubelet.name} to be ready", timeout=30)
        handle = backend.launch(_job(900_000_003, kubelet.name, "import time; print('up', flush=True); time.sleep(300)",
                                     tmp_path))
        until(lambda: (state := backend.pod_state(handle.pod)) is not None and state.ready,
              f"pod {handle.pod} to run on {kubelet.name}", timeout=60)
        kubelet.stop_heartbeating()
        silent = time.monotonic()
        # The node lifecycle controller (grace period 20 s): Ready Unknown, then the unreachable taints.
        until(lambda: node_state() == "lost",
              f"{kubelet.name} to read as lost to the backend", timeout=45)
        node = admin.read_node(kubelet.name)
        ready = next(c for c in node.status.conditions if c.type == "Ready")
        assert (ready.status, ready.reason) == ("Unknown", "NodeStatusUnknown"), ready
        until(lambda: {(t.key, t.effect) for t in admin.read_node(kubelet.name).spec.taints or ()} >=
              {("node.kubernetes.io/unreachable", "NoExecute"), ("node.kubernetes.io/unreachable", "NoSchedule")},
              f"{kubelet.name} to be tainted unreachable", timeout=30)
        namespace, name = handle.pod.split("/", 1)

        def evicted() -> bool:
            pod = admin.read_namespaced_pod(name, namespace)
            return pod.metadata.deletion_timestamp is not None and any(
                c.type == "DisruptionTarget" and c.reason == "DeletionByTaintManager"
                for c in pod.status.conditions or ())

        until(evicted, f"pod {handle.pod} to be evicted by the taint-eviction controller", timeout=30)
        print(f"silent to evicted: {time.monotonic() - silent:.1f} s")
        # The kubelet is silent, so the pod stays Terminating (as on a partitioned node); the backend no longer
        # counts on it: it reads as not ready, on a lost node.
        assert not backend.pod_state(handle.pod).ready
    finally:
        kubelet.stop()
        if handle is not None:
            backend.kill(handle)
            namespace, name = handle.pod.split("/", 1)
            try:  # nothing answers for the silent node: removed by force, as an operator would
                admin.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
            except client.ApiException as exc:
                assert exc.status == 404, exc
        admin.delete_node(kubelet.name)
        backend.close()


def test_a_kernel_pod_on_the_kubelet_node_serves_the_key_and_ports_of_its_connection_secret(
        local_backend, local_kubelet):
    from jupyter_client import BlockingKernelClient

    from ..harness import free_port
    from .test_kubelet import kernel_info_reply

    connection = {"transport": "tcp", "signature_scheme": "hmac-sha256", "key": secrets.token_hex(16),
                  **{name: free_port() for name in ("shell_port", "iopub_port", "stdin_port", "control_port",
                                                    "hb_port")}}
    placed = Placed(kind="kernel", tenant="test", user="real-cluster-test", queue="interactive",
                    template="real-cluster-test", flavor="cpu-standard", replicas=1, image=IMAGE, cpu_milli=100,
                    memory_mib=256)
    key = local_backend.launch_kernel(workload_id=900_000_004, attempt=1, node=local_kubelet.name, placed=placed,
                                      env={}, connection=connection)
    kernel = BlockingKernelClient()
    try:
        state = until(lambda: (s := local_backend.pod_state(key)) is not None and s.ready and s.ip and s,
                      f"kernel pod {key} to run", timeout=60)
        # The pod's own address, as the provisioner connects: the key and ports came only through the Secret.
        kernel.load_connection_info({**connection, "ip": state.ip})
        kernel.start_channels()
        until(lambda: kernel_info_reply(kernel), f"the kernel in pod {key} to answer kernel_info", timeout=60)
        printed = []
        reply = kernel.execute_interactive(
            "import os; print(os.environ['HOSTNAME'])", timeout=10,
            output_hook=lambda m: printed.append(m["content"]["text"]) if m["msg_type"] == "stream" else None)
        assert reply["content"]["status"] == "ok"
        assert "".join(printed) == key.split("/", 1)[1] + "\n"
    finally:
        kernel.stop_channels()
        local_backend.delete_kernel(key)
    until(lambda: local_backend.pod(key) is None, f"kernel pod {key} to be gone", timeout=30)
