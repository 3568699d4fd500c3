"""The server end to end on a real control plane: a jupyter-server with the extension on the kubernetes backend,
driven through its REST API, against kube-apiserver, kube-scheduler and kube-controller-manager v1.34.4 (the test
control plane of :mod:`tests.kube.cluster_fixtures`), as rbac.yaml's ServiceAccount in the namespace ``hetero``.

Pods run on local kubelet nodes (:class:`tests.kube.real_kubelet.RealKubelet`: real processes, the command as
PID 1 of its own PID namespace, exit codes and logs through the API server), with the server's work directory as
the claim ``hetero-work`` (:mod:`tests.kube.real_server`). kube-scheduler binds every pod; the node lifecycle
controller judges a node whose heartbeats stop. Each test proves on the real parts what tests/kube/test_backend.py,
test_services.py and test_faults.py prove on the API-server double.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tornado.httpclient import HTTPClientError

from ..handlers.test_kernels import kernelspecs, run_code, start_kernel  # noqa: F401 - a fixture among them
from ..harness import until_async
from .real_server import (  # noqa: F401 - fixtures
    KUBELET_FLAVOR,
    KUBELET_NODE,
    control_plane,
    hetero_namespace,
    kube_binaries,
    kubelet_job,
    kwok,
    kwok_nodes,
    local_kubelet,
    real_cluster,
    work_claim,
)
from .service_checks import MODEL, assert_each_replica_answers_in_turn, delete_and_see_it_go, ready_replicas

FINAL = ("succeeded", "failed", "cancelled", "lost")
SPARE_NODE = "local-spare-1"

# A job that checkpoints on SIGTERM (its step into $HETERO_CHECKPOINT_DIR, on the work volume, then exit code 3:
# neither 0 nor a signal's) and, started again with that checkpoint ($HETERO_RESUME_FROM), says so and succeeds.
CHECKPOINTING = """
import os, pathlib, signal, sys, time
resume = os.environ["HETERO_RESUME_FROM"]
if resume:
    print("resumed from", pathlib.Path(resume).read_text(), flush=True)
    sys.exit(0)
def stop(*_):
    (pathlib.Path(os.environ["HETERO_CHECKPOINT_DIR"]) / "step-7").write_text("step=7")
    print("checkpointed on SIGTERM", flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, stop)
print("training", flush=True)
time.sleep(300)
"""


def final(workload: dict) -> bool:
    return workload["state"] in FINAL


def logged(api, workload_id: int, text: str, attempt: int | None = None):
    """A coroutine function for until_async: whether the workload's log (of ``attempt``) shows ``text`` yet."""
    async def check() -> bool:
        try:
            log = await api.text(f"workloads/{workload_id}/logs", **({"attempt": attempt} if attempt else {}))
        except HTTPClientError:  # no attempt has started yet
            return False
        return text in log
    return check


async def attempt_pods(api, workload_id: int, attempt: int) -> list[str]:
    """The pods ("namespace/name") the attempt ran as, from its ``started`` event."""
    started = [e for e in await api(f"workloads/{workload_id}/events")
               if e["type"] == "started" and e["data"].get("attempt") == attempt]
    return started[-1]["data"]["pods"]


def node_in(api, name: str, state: str):
    """A coroutine function for until_async: the node as GET nodes shows it, once in ``state``."""
    async def check() -> dict | None:
        node = next((n for n in await api("nodes") if n["name"] == name), None)
        return node if node is not None and node["state"] == state else None
    return check


def exit_record(work_dir: Path, workload_id: int, attempt: int) -> dict:
    """What the runner in the pod wrote through the claim: the job's own exit code."""
    return json.loads((work_dir / "jobs" / str(workload_id) / "attempts" / str(attempt) / "exit-0.json").read_text())


def assert_bound_by_kube_scheduler(cluster, pod: str, node: str) -> None:
    namespace, name = pod.split("/", 1)
    scheduled = cluster.scheduled(name)
    assert [(e.reporting_component, e.message) for e in scheduled] == [
        ("default-scheduler", f"Successfully assigned {namespace}/{name} to {node}")], scheduled


async def test_a_job_is_bound_by_kube_scheduler_to_the_node_the_engine_chose_and_ends_with_its_exit_code(
        real_cluster, api, wait_for, jp_serverapp):
    # A kubelet's node carries the not-ready taint until the node lifecycle controller has seen it Ready; the
    # inventory follows the nodes once the scheduling loop runs (tests start it lazily, at the first submission).
    jp_serverapp.web_app.settings["hetero_platform"].loop.start()
    await until_async(node_in(api, KUBELET_NODE, "ready"), f"{KUBELET_NODE} to be ready", timeout=60)
    nodes = {node["name"]: node for node in await api("nodes")}
    # kwok's CPU-only node is in the inventory too: the engine had a CPU node whose pods would never run to pass by.
    assert (nodes[KUBELET_NODE]["flavor"], nodes[KUBELET_NODE]["state"]) == (KUBELET_FLAVOR, "ready")
    assert nodes["cpu-worker-21"]["flavor"] == "cpu-standard"

    code = "import os; print('ran on', os.environ['HETERO_NODE'], 'in pod', os.environ['HOSTNAME'], flush=True)"
    job = await api("workloads", "POST", kubelet_job(code))
    failing = await api("workloads", "POST", kubelet_job("import sys; print('failing', flush=True); sys.exit(3)"))

    done = await wait_for(job["id"], final, timeout=90)
    assert done["state"] == "succeeded", done
    [attempt] = done["attempts"]
    assert (attempt["node"], attempt["placement"]["flavor"], attempt["outcome"], attempt["exit_code"]) == \
        (KUBELET_NODE, KUBELET_FLAVOR, "succeeded", 0), attempt
    [pod] = await attempt_pods(api, job["id"], 1)
    assert_bound_by_kube_scheduler(real_cluster, pod, KUBELET_NODE)
    # Printed by the process the kubelet ran for that pod (HOSTNAME is the pod's name), copied through pods/log.
    assert f"ran on {KUBELET_NODE} in pod {pod.split('/', 1)[1]}" in await api.text(f"workloads/{job['id']}/logs")

    failed = await wait_for(failing["id"], final, timeout=90)
    assert (failed["state"], failed["failures"]) == ("failed", 1), failed
    [attempt] = failed["attempts"]
    assert (attempt["node"], attempt["outcome"], attempt["reason"], attempt["exit_code"]) == \
        (KUBELET_NODE, "failed", "exit code 3", 3), attempt
    # The container ended 1 (the runner's code for a failure); 3 is the runner's record on the claim's volume.
    assert exit_record(real_cluster.work_dir, failing["id"], 1)["exit_code"] == 3
    assert "failing" in await api.text(f"workloads/{failing['id']}/logs")
    for workload_id in (job["id"], failing["id"]):
        await until_async(lambda w=workload_id: not real_cluster.pods_of(w), f"the pod of workload {workload_id} to go")


async def test_a_cancelled_job_gets_sigterm_through_its_runner_as_pid_1_writes_its_checkpoint_and_ends_cancelled(
        real_cluster, api, wait_for):
    job = await api("workloads", "POST", kubelet_job(CHECKPOINTING))
    await until_async(logged(api, job["id"], "training"), "the job to run in its pod", timeout=60)
    stopped = time.monotonic()
    assert (await api(f"workloads/{job['id']}", "DELETE"))["stopping"] == "cancel"
    done = await wait_for(job["id"], final, timeout=45)
    # Well within the pod's 30 s grace period: the runner, PID 1 and signalled alone, passed SIGTERM on to the job
    # (the kernel drops a signal PID 1 has no handler for, leaving the job to the SIGKILL at 30 s).
    assert time.monotonic() - stopped < 20
    assert done["state"] == "cancelled", done
    [attempt] = done["attempts"]
    # A cancel records no exit code of its own; the job's exit code is kept in the attempt's metrics.
    assert (attempt["node"], attempt["outcome"], attempt["exit_code"]) == (KUBELET_NODE, "cancelled", None), attempt
    assert attempt["metrics"]["exit_codes"] == [3], attempt
    assert (real_cluster.work_dir / "jobs" / str(job["id"]) / "checkpoints" / "step-7").read_text() == "step=7"
    assert exit_record(real_cluster.work_dir, job["id"], 1)["exit_code"] == 3
    assert "checkpointed on SIGTERM" in await api.text(f"workloads/{job['id']}/logs")
    await until_async(lambda: not real_cluster.pods_of(job["id"]), "the cancelled job's pod to go")


async def test_a_preempted_job_checkpoints_on_sigterm_is_requeued_and_resumes_from_its_checkpoint(
        real_cluster, api, wait_for):
    # 6 of the node's 8 CPUs for best-effort work; the urgent job's 4 fit only once it is gone.
    victim = await api("workloads", "POST", kubelet_job(CHECKPOINTING, cpu=6))
    await until_async(logged(api, victim["id"], "training"), "the batch job to run in its pod", timeout=60)
    urgent = await api("workloads", "POST", kubelet_job("print('urgent work done')", queue="urgent", cpu=4))

    # The attempt's end and the workload's release (its counts, its requeue) are one write.
    preempted = await wait_for(victim["id"], lambda w: w["attempts"] and w["attempts"][0]["outcome"], timeout=60)
    first = preempted["attempts"][0]
    assert (first["node"], first["outcome"], first["metrics"]["exit_codes"]) == (KUBELET_NODE, "preempted", [3]), first
    assert preempted["preemptions"] == 1 and preempted["failures"] == 0
    assert (real_cluster.work_dir / "jobs" / str(victim["id"]) / "checkpoints" / "step-7").read_text() == "step=7"
    assert "checkpointed on SIGTERM" in await api.text(f"workloads/{victim['id']}/logs", attempt=1)
    reasons = {e["type"]: e["reason"] for e in await api(f"workloads/{victim['id']}/events")}
    assert reasons["preempting"].startswith(f"preempted by urgent workload {urgent['id']} (grace "), reasons

    done = await wait_for(urgent["id"], final, timeout=60)
    assert (done["state"], done["attempts"][0]["node"]) == ("succeeded", KUBELET_NODE), done
    [pod] = await attempt_pods(api, urgent["id"], 1)
    assert_bound_by_kube_scheduler(real_cluster, pod, KUBELET_NODE)

    # Requeued by its queue's policy, it runs again once the urgent job is done, from the checkpoint it wrote.
    resumed = await wait_for(victim["id"], final, timeout=60)
    assert resumed["state"] == "succeeded", resumed
    assert [(a["outcome"], a["node"]) for a in resumed["attempts"]] == \
        [("preempted", KUBELET_NODE), ("succeeded", KUBELET_NODE)]
    assert "resumed from step=7" in await api.text(f"workloads/{victim['id']}/logs", attempt=2)


async def test_a_node_that_stops_heartbeating_is_lost_to_the_engine_and_its_job_runs_again_on_another_node(
        real_cluster, api, wait_for, jp_serverapp, tmp_path):
    # The inventory follows the cluster from the scheduling loop, which the server's start starts (a test's server
    # starts it at the first submission).
    jp_serverapp.web_app.settings["hetero_platform"].loop.start()
    code = ("import os, time; attempt = os.environ['HETERO_ATTEMPT']; "
            "print('attempt', attempt, 'on', os.environ['HETERO_NODE'], flush=True); "
            "time.sleep(300 if attempt == '1' else 0)")
    with real_cluster.extra_kubelet(SPARE_NODE, tmp_path / "kubelet-spare", "local-cpu-spare") as spare:
        await until_async(node_in(api, SPARE_NODE, "ready"), f"{SPARE_NODE} to be ready", timeout=30)
        # The first attempt goes to the spare node: the engine's other choice is cordoned while it is placed.
        real_cluster.cordon(KUBELET_NODE)
        try:
            await until_async(node_in(api, KUBELET_NODE, "cordoned"), f"{KUBELET_NODE} to read cordoned")
            job = await api("workloads", "POST", kubelet_job(code))
            running = await wait_for(job["id"], lambda w: w["state"] == "running", timeout=60)
            assert running["attempts"][0]["node"] == SPARE_NODE, running
        finally:
            real_cluster.cordon(KUBELET_NODE, False)
        await until_async(logged(api, job["id"], f"attempt 1 on {SPARE_NODE}"), "the job to run on the spare node",
                          timeout=60)
        [pod] = await attempt_pods(api, job["id"], 1)
        assert_bound_by_kube_scheduler(real_cluster, pod, SPARE_NODE)
        await until_async(node_in(api, KUBELET_NODE, "ready"), f"{KUBELET_NODE} to be ready again")

        spare.stop_heartbeating()
        # The node lifecycle controller (grace period 20 s) marks it Unknown; the engine reads that as node loss.
        lost = await wait_for(job["id"], lambda w: w["node_losses"] == 1, timeout=60)
        ready = real_cluster.node_ready(SPARE_NODE)
        assert (ready.status, ready.reason) == ("Unknown", "NodeStatusUnknown"), ready
        assert (await node_in(api, SPARE_NODE, "lost")()) is not None
        assert lost["failures"] == 0  # not the job's own failure: no retry used
        assert lost["attempts"][0]["outcome"] == "lost", lost["attempts"]
        await until_async(lambda: real_cluster.taints(SPARE_NODE) >= {("node.kubernetes.io/unreachable", "NoExecute"),
                                                                      ("node.kubernetes.io/unreachable", "NoSchedule")},
                          f"{SPARE_NODE} to be tainted unreachable", timeout=30)

        # Its queue's policy requeues it; it runs again on the node that is still there.
        done = await wait_for(job["id"], final, timeout=60)
        assert done["state"] == "succeeded", done
        assert [(a["outcome"], a["node"]) for a in done["attempts"]] == \
            [("lost", SPARE_NODE), ("succeeded", KUBELET_NODE)], done["attempts"]
        assert (done["failures"], done["node_losses"]) == (0, 1)
        reasons = {e["type"]: e["reason"] for e in await api(f"workloads/{job['id']}/events")}
        assert reasons["lost"] == f"lost (node {SPARE_NODE} was lost); requeued by queue batch's policy", reasons
        assert f"attempt 2 on {KUBELET_NODE}" in await api.text(f"workloads/{job['id']}/logs", attempt=2)
        [pod] = await attempt_pods(api, job["id"], 2)
        assert_bound_by_kube_scheduler(real_cluster, pod, KUBELET_NODE)


async def test_a_kernel_started_through_the_server_runs_code_in_its_pod_on_the_kubelet_node(
        real_cluster, kernelspecs, api, jp_fetch, jp_serverapp):  # noqa: F811 - the imported fixture
    kernel_id = await start_kernel(jp_fetch, "hetero-cpu")
    workload = next(w for w in await api("workloads", kind="kernel") if w["spec"]["kernel_id"] == kernel_id)
    assert (workload["state"], workload["node"]) == ("running", KUBELET_NODE), workload
    [pod] = real_cluster.pods_of(workload["id"])
    assert pod.spec.node_name == KUBELET_NODE
    assert_bound_by_kube_scheduler(real_cluster, f"{pod.metadata.namespace}/{pod.metadata.name}", KUBELET_NODE)
    printed = await run_code(jp_serverapp, kernel_id, "import os; print(os.environ['HOSTNAME'], os.environ['HETERO_NODE'])")
    assert printed.split() == [pod.metadata.name, KUBELET_NODE]
    await jp_fetch("api", "kernels", kernel_id, method="DELETE")
    await until_async(lambda: not real_cluster.pods_of(workload["id"]), "the kernel's pod to go with its shutdown")
    assert (await api(f"workloads/{workload['id']}"))["state"] == "succeeded"


async def test_a_services_replicas_run_as_pods_on_the_kubelet_node_and_answer_through_its_endpoint(
        real_cluster, api, jp_fetch, wait_for):
    await api("services", "POST", {"name": "doubler", "command": MODEL, "replicas": 2})

    replicas = await ready_replicas(api)
    for replica in replicas:
        [pod] = real_cluster.pods_of(replica["id"])
        assert pod.spec.node_name == KUBELET_NODE
        assert_bound_by_kube_scheduler(real_cluster, f"{pod.metadata.namespace}/{pod.metadata.name}", KUBELET_NODE)
        assert replica["address"] == pod.status.pod_ip  # each pod at its own address, reported by its kubelet
    assert len({replica["address"] for replica in replicas}) == 2

    await assert_each_replica_answers_in_turn(jp_fetch, replicas)
    named = await until_async(lambda: _service(real_cluster, "hetero-doubler"), "the service's Service", timeout=30)
    assert named.spec.cluster_ip and named.spec.cluster_ip != "None"  # allocated by the real API server

    await delete_and_see_it_go(api, wait_for, replicas,
                               pod_gone=lambda workload_id: not real_cluster.pods_of(workload_id),
                               service_gone=lambda: _service(real_cluster, "hetero-doubler") is None)


def _service(cluster, name: str):
    from kubernetes import client

    try:
        return cluster.admin.read_namespaced_service(name, cluster.namespace)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
