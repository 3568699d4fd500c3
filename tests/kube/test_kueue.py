"""`jupyter hetero export kueue` against Kueue's own controller (v0.17.0) on the test control plane.

    .venv/bin/python -m pytest tests/kube/test_kueue.py -v

Kueue runs as :mod:`tests.kube.kueue` sets it up (real webhooks on 127.0.0.1, the ``pod`` integration for
namespaces labelled :data:`tests.kube.kueue.MANAGED_LABEL`); kwok's nodes run the pods it admits.
"""

from __future__ import annotations

import asyncio
import copy
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from jupyter_hetero.backends.base import Launch, Placed
from jupyter_hetero.backends.kubernetes.config import KubernetesConfig
from jupyter_hetero.backends.kubernetes.factory import PodFactory
from jupyter_hetero.backends.kubernetes.kueue_status import workload_blockers
from jupyter_hetero.backends.kubernetes.objects import KUEUE_PRIORITY_LABEL, KUEUE_QUEUE_LABEL
from jupyter_hetero.backends.kubernetes.pods import pod_problem
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.engine.explain import render
from jupyter_hetero.export.kueue import kueue_objects

from ..builders import team_catalog
from .cluster_fixtures import control_plane, hetero_namespace, kube_binaries, kwok, kwok_nodes  # noqa: F401 - fixtures
from .kueue import GROUP, VERSION, Kueue

GATE = "kueue.x-k8s.io/admission"  # the scheduling gate Kueue's pod webhook adds until it admits
_PLURAL = {"ResourceFlavor": "resourceflavors", "Cohort": "cohorts", "ClusterQueue": "clusterqueues",
           "LocalQueue": "localqueues", "WorkloadPriorityClass": "workloadpriorityclasses"}


@pytest.fixture(scope="module")
def kueue(control_plane, kube_binaries):
    started = Kueue(binary=kube_binaries / "kueue", plane=control_plane)
    started.start()
    yield started
    started.stop()


def until(check, what: str, kueue: Kueue, timeout: float = 30.0):
    """``check()``'s first truthy answer, polled; a failure names ``what`` and shows Kueue's log."""
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if answer:
            return answer
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen in {timeout:.0f} s; Kueue's log:\n{kueue.tail()}")
        time.sleep(0.2)


def apply(kueue: Kueue, objects: list[dict]) -> None:
    """Creates each object as `kubectl apply -f` of the export would, in its order."""
    for obj in objects:
        plural, namespace = _PLURAL[obj["kind"]], obj["metadata"].get("namespace")
        if namespace:
            kueue.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, obj)
        else:
            kueue.custom.create_cluster_custom_object(GROUP, VERSION, plural, obj)


def active(kueue: Kueue, name: str) -> dict | None:
    queue = kueue.custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", name)
    conditions = {c["type"]: c for c in queue.get("status", {}).get("conditions", [])}
    return queue if conditions.get("Active", {}).get("status") == "True" else None


@pytest.fixture(scope="module")
def shipped(kueue):
    """The default catalog's export, applied (its tenant's namespace ``hetero-default`` first)."""
    objects = kueue_objects(load_catalog(DEFAULT_CATALOG_PATH))
    kueue.managed_namespace("hetero-default")
    apply(kueue, objects)
    return objects


def test_the_default_catalogs_export_is_accepted_and_its_cluster_queues_become_active(kueue, shipped):
    for obj in shipped:
        plural, namespace = _PLURAL[obj["kind"]], obj["metadata"].get("namespace")
        stored = (kueue.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, obj["metadata"]["name"])
                  if namespace else kueue.custom.get_cluster_custom_object(GROUP, VERSION, plural, obj["metadata"]["name"]))
        # Kueue's defaulting webhook adds fields; nothing the export wrote is dropped or changed.
        assert {k: stored["spec"][k] for k in obj.get("spec", {})} == obj.get("spec", {}), obj["metadata"]["name"]
    queues = [o["metadata"]["name"] for o in shipped if o["kind"] == "ClusterQueue"]
    assert queues == ["hetero-default"]
    until(lambda: all(active(kueue, name) for name in queues), "the ClusterQueue becoming Active", kueue)


def test_a_per_tenant_export_through_the_cli_is_accepted(kueue, tmp_path):
    path = team_catalog(tmp_path)
    # Its own prefix and namespaces, beside the shipped catalog's objects, as a second installation would.
    out = subprocess.run([sys.executable, "-m", "jupyter_hetero.cli", "export", "kueue", "--catalog", path,
                          "--prefix", "teams-", "--namespace", "teams-{tenant}"],
                         capture_output=True, text=True, check=True).stdout
    objects = [o for o in yaml.safe_load_all(out) if o]
    for tenant in ("vision", "nlp"):
        kueue.managed_namespace(f"teams-{tenant}")
    apply(kueue, objects)
    queues = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue")
    assert queues == ["teams-nlp", "teams-vision"]
    until(lambda: all(active(kueue, name) for name in queues), "both tenants' ClusterQueues becoming Active", kueue)
    cohorts = {o["metadata"]["name"] for o in objects if o["kind"] == "Cohort"}
    assert {kueue.custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", q)["spec"]["cohortName"]
            for q in queues} == cohorts


def _pod(name: str, queue: str, cpu: str) -> dict:
    """A pod as objects.py labels a queue's pods when Kueue admits them (LocalQueue and priority class)."""
    return {"metadata": {"name": name, "labels": {KUEUE_QUEUE_LABEL: queue, KUEUE_PRIORITY_LABEL: f"hetero-{queue}"}},
            "spec": {"containers": [{"name": "main", "image": "python:3.12-slim",
                                     "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
                     # kwok's nodes carry device taints; the pod goes wherever kube-scheduler finds room.
                     "tolerations": [{"operator": "Exists"}]}}


def workload_of(kueue: Kueue, namespace: str, pod) -> dict | None:
    """Kueue's Workload of ``pod`` (its owner reference names the pod)."""
    workloads = kueue.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")["items"]
    return next((w for w in workloads
                 if any(o["uid"] == pod.metadata.uid for o in w["metadata"].get("ownerReferences", []))), None)


def _condition(workload: dict | None, kind: str) -> dict:
    return next((c for c in (workload or {}).get("status", {}).get("conditions", []) if c["type"] == kind), {})


def test_a_pod_within_quota_is_gated_then_admitted_and_runs(kueue, shipped, kwok_nodes):
    core = client.CoreV1Api(kueue.plane.api_client())
    created = core.create_namespaced_pod("hetero-default", _pod("fits", "training", "1"))
    # Kueue's webhook gated it at creation: kube-scheduler never saw it before Kueue's decision. (Kueue also adds
    # its topology gate, which it lifts with the admission one when no topology-aware flavor is involved.)
    assert GATE in [g.name for g in created.spec.scheduling_gates or ()]
    assert created.metadata.labels["kueue.x-k8s.io/managed"] == "true"
    workload = until(lambda: _condition(workload_of(kueue, "hetero-default", created), "Admitted").get("status") == "True"
                     and workload_of(kueue, "hetero-default", created), "the pod's Workload being admitted", kueue)
    assert workload["spec"]["queueName"] == "training"
    assert workload["spec"]["priorityClassRef"]["name"] == "hetero-training"
    assert workload["status"]["admission"]["clusterQueue"] == "hetero-default"
    pod = until(lambda: (p := core.read_namespaced_pod("fits", "hetero-default")).status.phase == "Running" and p,
                "the admitted pod running on a kwok node", kueue)
    assert not pod.spec.scheduling_gates and pod.spec.node_name in kwok_nodes


def test_a_pod_over_quota_stays_gated_and_its_workload_says_why(kueue, shipped):
    core = client.CoreV1Api(kueue.plane.api_client())
    # One CPU more than the largest nominal quota of any flavor, with no other ClusterQueue in the cohort to
    # borrow from: no flavor fits, now or later.
    queue = next(o for o in shipped if o["kind"] == "ClusterQueue")
    largest = max(int(r["nominalQuota"]) for f in queue["spec"]["resourceGroups"][0]["flavors"]
                  for r in f["resources"] if r["name"] == "cpu")
    created = core.create_namespaced_pod("hetero-default", _pod("too-big", "batch", str(largest + 1)))
    reserved = until(lambda: (c := _condition(workload_of(kueue, "hetero-default", created), "QuotaReserved"))
                     and c.get("status") == "False" and c, "the Workload's QuotaReserved=False", kueue)
    assert reserved["reason"] == "Pending"
    assert "insufficient quota for cpu" in reserved["message"], reserved["message"]
    pod = core.read_namespaced_pod("too-big", "hetero-default")
    assert GATE in [g.name for g in pod.spec.scheduling_gates or ()] and pod.spec.node_name is None


# -- c.KubernetesConfig.admission: the backend's own pods, through its PodFactory --------------------------------

def _backend_pod(admission: str, workload_id: int, node: str, cpu_milli: int) -> dict:
    """The pod the backend creates for replica 0 of a one-replica job of queue ``training``, tenant ``default``."""
    config = KubernetesConfig(admission=admission, namespace="hetero-{tenant}")
    placed = Placed(kind="job", tenant="default", user="alice", queue="training", template="cpu-small", flavor="cpu",
                    replicas=1, image="python:3.12-slim", cpu_milli=cpu_milli, memory_mib=1024)
    launch = Launch(workload_id=workload_id, attempt=1, replica=0, node=node, argv=["-c", "pass"], env={},
                    cwd=Path("/tmp"), log_path=Path("/tmp/log"), exit_path=Path("/tmp/exit"), placed=placed)
    pod, _service = PodFactory(config, work_dir="/srv/hetero/work").job_objects(launch)
    return client.ApiClient().sanitize_for_serialization(pod)


def _cpu_node(kwok_nodes) -> str:
    """A kwok node without device resources, where the engine would place a CPU job."""
    return next(name for name, node in sorted(kwok_nodes.items())
                if not any("/" in r for r in node.get("status", {}).get("allocatable", {})))


def test_in_hetero_mode_the_backends_pod_names_no_queue_and_kueue_leaves_it_alone(kueue, shipped, kwok_nodes):
    core = client.CoreV1Api(kueue.plane.api_client())
    node = _cpu_node(kwok_nodes)
    pod = _backend_pod("hetero", 9101, node, 1000)
    assert KUEUE_QUEUE_LABEL not in pod["metadata"]["labels"]
    # In a namespace Kueue's pod integration manages: without the queue label its webhook neither gates nor
    # manages the pod, so kube-scheduler binds it to the node the engine chose.
    created = core.create_namespaced_pod("hetero-default", pod)
    assert not created.spec.scheduling_gates and "kueue.x-k8s.io/managed" not in created.metadata.labels
    running = until(lambda: (p := core.read_namespaced_pod(created.metadata.name, "hetero-default")).status.phase
                    == "Running" and p, "the hetero-mode pod running", kueue)
    assert running.spec.node_name == node
    assert workload_of(kueue, "hetero-default", created) is None


def test_in_kueue_mode_the_backends_pod_is_gated_admitted_by_kueue_and_runs_where_the_engine_placed_it(
        kueue, shipped, kwok_nodes):
    core = client.CoreV1Api(kueue.plane.api_client())
    node = _cpu_node(kwok_nodes)
    pod = _backend_pod("kueue", 9102, node, 1000)
    # The LocalQueue and WorkloadPriorityClass the shipped export made for queue "training".
    assert {k: pod["metadata"]["labels"][k] for k in (KUEUE_QUEUE_LABEL, KUEUE_PRIORITY_LABEL)} == {
        KUEUE_QUEUE_LABEL: "training", KUEUE_PRIORITY_LABEL: "hetero-training"}
    created = core.create_namespaced_pod("hetero-default", pod)
    assert GATE in [g.name for g in created.spec.scheduling_gates or ()]
    workload = until(lambda: _condition(w := workload_of(kueue, "hetero-default", created), "Admitted").get("status")
                     == "True" and w, "the backend pod's Workload being admitted", kueue)
    assert workload_blockers(workload) == []
    running = until(lambda: (p := core.read_namespaced_pod(created.metadata.name, "hetero-default")).status.phase
                    == "Running" and p, "the admitted backend pod running", kueue)
    assert running.spec.node_name == node and not running.spec.scheduling_gates


def test_in_kueue_mode_an_over_quota_pod_waits_gated_and_its_blocker_is_kueues_reason(kueue, shipped, kwok_nodes):
    core = client.CoreV1Api(kueue.plane.api_client())
    queue = next(o for o in shipped if o["kind"] == "ClusterQueue")
    largest = max(int(r["nominalQuota"]) for f in queue["spec"]["resourceGroups"][0]["flavors"]
                  for r in f["resources"] if r["name"] == "cpu")
    created = core.create_namespaced_pod("hetero-default", _backend_pod("kueue", 9103, _cpu_node(kwok_nodes),
                                                                         (largest + 1) * 1000))
    workload = until(lambda: _condition(w := workload_of(kueue, "hetero-default", created), "QuotaReserved")
                     .get("status") == "False" and w, "the backend pod's Workload with QuotaReserved=False", kueue)
    [blocker] = workload_blockers(workload)
    assert (blocker.kind, blocker.params["queue"], blocker.params["reason"]) == ("kueue-pending", "training", "Pending")
    english, chinese = render(blocker, "en"), render(blocker, "zh")
    assert english.startswith("Kueue: LocalQueue training has not reserved quota (Pending): ")
    assert "insufficient quota for cpu" in english and "insufficient quota for cpu" in chinese
    assert chinese.startswith("Kueue：LocalQueue training 尚未预留配额（Pending）：")
    # Gated, the pod is waiting for Kueue, not refused by kube-scheduler: never failed as unschedulable.
    pod = client.ApiClient().sanitize_for_serialization(core.read_namespaced_pod(created.metadata.name, "hetero-default"))
    assert GATE in [g["name"] for g in pod["spec"]["schedulingGates"]]
    assert pod_problem(pod, [], now_wall=time.time() + 3600, unschedulable_s=1, image_pull_s=1) is None


# --- the server in admission kueue ------------------------------------------------------------------------------

KUEUE_NAMESPACE = "hetero-default"  # the shipped export's namespace of tenant default
SMALL_JOB = {"kind": "job", "template": "data-preprocessing", "queue": "batch", "command": ["python", "-c", "pass"],
             "parameters": {"cpu": 1, "memory": "1Gi"}}


@pytest.fixture(scope="module")
def server_account(kueue, shipped, hetero_namespace):
    """rbac.yaml's ServiceAccount, with its Role and RoleBinding copied into the Kueue-managed namespace, as
    docs/kubernetes.md says to for each further workload namespace."""
    from kubernetes import utils

    from jupyter_hetero.backends.kubernetes import rbac

    for document in rbac.documents():
        if document["kind"] in ("Role", "RoleBinding"):
            utils.create_from_dict(kueue.plane.api_client(),
                                   {**document, "metadata": {**document["metadata"], "namespace": KUEUE_NAMESPACE}})
    return hetero_namespace


@pytest.fixture
def kueue_server(kueue, shipped, kwok_nodes, server_account, hetero_config, server_config):
    """The test's jupyter-server with ``admission = kueue`` in the Kueue-managed namespace, as the ServiceAccount,
    and Kueue's ClusterQueue giving tenant default 2 CPUs (of flavor cpu-standard, none elsewhere) where the catalog
    gives it 512: as on a site whose Kueue is tighter than the catalog, Kueue then holds what the engine admits."""
    core = client.CoreV1Api(kueue.plane.api_client())
    core.delete_collection_namespaced_pod(KUEUE_NAMESPACE, grace_period_seconds=0)  # the pods of the tests above
    original = kueue.custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", "hetero-default")
    tight = copy.deepcopy(original)
    for flavor in tight["spec"]["resourceGroups"][0]["flavors"]:
        for resource in flavor["resources"]:
            if resource["name"] == "cpu":
                resource["nominalQuota"] = "2" if flavor["name"] == "hetero-cpu-standard" else "0"
    kueue.custom.replace_cluster_custom_object(GROUP, VERSION, "clusterqueues", "hetero-default", tight)
    hetero_config.update(backend="kubernetes", emulated_nodes_file="", discover_local=False)
    server_config["KubernetesConfig"] = {"kubeconfig": str(server_account.kubeconfig), "namespace": KUEUE_NAMESPACE,
                                         "admission": "kueue", "watch_timeout": 30, "unschedulable_timeout": 120}
    yield
    current = kueue.custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", "hetero-default")
    current["spec"]["resourceGroups"] = original["spec"]["resourceGroups"]
    kueue.custom.replace_cluster_custom_object(GROUP, VERSION, "clusterqueues", "hetero-default", current)


async def test_in_kueue_mode_a_job_kueue_holds_shows_kueues_place_and_reason_and_starts_when_kueue_admits_it(
        kueue_server, kueue, api, wait_for):
    def held_at(position: int):
        return lambda w: w.get("held_by") == "kueue" and w.get("position") == position

    async def submit(name: str) -> int:
        return (await api("workloads", "POST", {**SMALL_JOB, "name": name}))["id"]

    # The engine admits every one (its quota is 512 CPUs) and creates its pod at once; Kueue admits two (2 CPUs).
    jobs = [await submit("kq-0"), await submit("kq-1")]
    for job in jobs:
        await wait_for(job, lambda w: w["state"] == "running" and "held_by" not in w, timeout=60)
    jobs.append(await submit("kq-2"))
    third = await wait_for(jobs[2], held_at(1), timeout=60)
    # Kueue orders equal priorities by creation time, which the API server keeps to the second: a second later,
    # the fourth is behind the third.
    await asyncio.sleep(1.1)
    jobs.append(await submit("kq-3"))
    fourth = await wait_for(jobs[3], held_at(2), timeout=60)
    assert third["state"] == fourth["state"] == "running"
    for workload in (third, fourth):
        [blocker] = workload["blockers"]
        assert (blocker["kind"], blocker["params"]["queue"], blocker["params"]["reason"]) == \
            ("kueue-pending", "batch", "Pending"), blocker
        assert "insufficient quota for cpu" in blocker["message"], blocker
        assert workload["eta"] is None  # Kueue makes no estimate, and the engine's would not be Kueue's
    explained = await api(f"workloads/{jobs[3]}/explain")
    assert explained["summary"] == "waiting for kueue to admit it" and explained["position"] == 2
    assert explained["lines"][0].startswith("1. Kueue: LocalQueue batch has not reserved quota (Pending): ")
    chinese = await api(f"workloads/{jobs[3]}", lang="zh")
    assert chinese["blockers"][0]["message"].startswith("Kueue：LocalQueue batch 尚未预留配额（Pending）：")

    # The first job ends (cancelled): its pod goes, Kueue admits the third, which starts then; the fourth moves up.
    await api(f"workloads/{jobs[0]}", "DELETE")
    started = await wait_for(jobs[2], lambda w: "held_by" not in w, timeout=60)
    assert started["state"] == "running" and started["started_at"] > third["started_at"], started
    events = [e for e in await api(f"workloads/{jobs[2]}/events") if e["type"] == "admitted-by-kueue"]
    assert len(events) == 1 and events[0]["reason"].startswith("kueue admitted its pods after "), events
    await wait_for(jobs[3], held_at(1), timeout=60)
    for job in jobs[1:]:
        await api(f"workloads/{job}", "DELETE")
