"""What a real cluster answers that a permissive one hides: RBAC's and ResourceQuota's 403s (as kube-apiserver sends
them: a Status with reason Forbidden) and a pod no scheduler ever acts on. Each is said in the scheduler's words and
none is mistaken for an API server that does not answer."""

from __future__ import annotations

import logging
import time

import pytest

from jupyter_hetero.backends.kubernetes.backend import MANAGED_SELECTOR, KubernetesBackend
from jupyter_hetero.backends.kubernetes.config import KubernetesConfig
from jupyter_hetero.backends.kubernetes.errors import ApiForbidden

from .fixtures import kube_api  # noqa: F401 - a fixture
from .test_backend import NAMESPACE, cluster, namespace, python_job  # noqa: F401 - fixtures among them

_MANAGED = dict(label.split("=", 1) for label in MANAGED_SELECTOR.split(","))


def _backend(api, tmp_path) -> KubernetesBackend:
    config = KubernetesConfig(kubeconfig=str(api.kubeconfig(tmp_path / "kubeconfig")), namespace=NAMESPACE,
                              watch_timeout=5)
    return KubernetesBackend(config=config, work_dir=str(tmp_path / "work"))


@pytest.mark.parametrize(("verb", "resource", "namespace", "where"), [
    pytest.param("list", "pods", NAMESPACE, f"in namespace {NAMESPACE}", id="our pods in our namespace"),
    pytest.param("list", "nodes", None, "at the cluster scope", id="the cluster's nodes"),
])
def test_a_list_the_rbac_refuses_fails_the_start_at_once_naming_the_permission(
        kube_api, tmp_path, verb, resource, namespace, where):  # noqa: F811 - the imported fixture
    kube_api.forbid(verb, resource, namespace=namespace)
    backend = _backend(kube_api, tmp_path)
    started = time.monotonic()
    try:
        with pytest.raises(ApiForbidden) as refused:
            backend.start(timeout=15)
    finally:
        backend.close()
    assert time.monotonic() - started < 10, "the refusal was waited out as if it were no answer"
    assert (refused.value.verb, refused.value.resource, refused.value.namespace) == (verb, resource, namespace)
    assert str(refused.value).startswith(f"the Kubernetes API refused to {verb} {resource} {where}: the server's "
                                         "account system:serviceaccount:default:tester lacks this permission")
    assert "did not answer" not in str(refused.value)


def test_orphans_the_rbac_forbids_listing_are_left_and_logged_not_raised(
        kube_api, tmp_path, caplog):  # noqa: F811 - the imported fixture
    kube_api.put({"kind": "Secret", "metadata": {"name": "left-behind", "namespace": NAMESPACE, "labels": _MANAGED},
                  "data": {}})
    backend = _backend(kube_api, tmp_path)
    backend.start(timeout=15)
    kube_api.forbid("list", "secrets", namespace=NAMESPACE)
    try:
        with caplog.at_level(logging.WARNING, logger="jupyter_hetero.backends.kubernetes.backend"):
            assert backend.collect_orphans([]) == []
    finally:
        backend.close()
    assert kube_api.get("Secret", "left-behind", NAMESPACE) is not None
    assert any(f"orphaned secrets in namespace {NAMESPACE} are left: the Kubernetes API refused to list secrets in "
               f"namespace {NAMESPACE}" in record.getMessage() for record in caplog.records), caplog.text


async def test_a_namespace_quota_used_up_delays_a_launch_without_using_a_retry(cluster, api, wait_for):
    cluster.api.exceed_quota("pods", quota="compute", requested="requests.cpu=1", used="requests.cpu=8",
                             limited="requests.cpu=8", namespace=NAMESPACE, times=2)
    job = await api("workloads", "POST", python_job("print('room at last')", name="squeezed"))
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), timeout=60)
    assert done["state"] == "succeeded" and done["failures"] == 0, done
    requeued = [e["reason"] for e in await api(f"workloads/{job['id']}/events") if e["type"] == "requeued"]
    assert len(requeued) == 2, requeued
    assert requeued[0].startswith(f"could not start: quota of namespace {NAMESPACE} exceeded: compute, requested: "
                                  "requests.cpu=1, used: requests.cpu=8, limited: requests.cpu=8"), requeued
    assert [a["outcome"] for a in done["attempts"]] == ["unlaunched"] * 2 + ["succeeded"]


@pytest.fixture
def impatient_scheduling(cluster, server_config):
    """The cluster, with a server that gives an unbound pod 2 s."""
    server_config["KubernetesConfig"]["unschedulable_timeout"] = 2.0
    return cluster


async def test_a_pod_no_scheduler_acts_on_ends_its_attempt_with_the_reason(impatient_scheduling, api, wait_for):
    cluster = impatient_scheduling
    cluster.api.schedulers.clear()  # kube-scheduler is down: nothing binds a pod, nothing says why
    job = await api("workloads", "POST", python_job("print('never')", name="unserved"))
    ended = await wait_for(job["id"], lambda w: w["attempts"] and w["attempts"][0]["ended_at"], timeout=60)
    # As an unschedulable pod's: the attempt fails with the reason and the queue's retry policy takes over.
    assert ended["attempts"][0]["outcome"] == "failed", ended
    assert ended["attempts"][0]["reason"].startswith(
        "no scheduler acted on the pod in 2 s (its schedulerName is default-scheduler): it was never bound to node "), ended
    assert not any(pod["status"].get("conditions") for pod in cluster.pods()), "the double's scheduler acted"


def test_a_create_answered_with_an_object_the_models_reject_is_named_and_its_pod_not_left(
        kube_api, tmp_path):  # noqa: F811 - the imported fixture
    from jupyter_hetero.backends.base import Launch, Placed
    from jupyter_hetero.backends.kubernetes.errors import MalformedResponse

    kube_api.answer_without("create", "pods", "spec.containers")  # V1PodSpec holds containers required
    backend = _backend(kube_api, tmp_path)
    backend.start(timeout=15)
    launch = Launch(workload_id=7, attempt=1, replica=0, node="node-a", argv=["command", "--", "true"], env={},
                    cwd=tmp_path, log_path=tmp_path / "log.txt", exit_path=tmp_path / "exit-0.json",
                    placed=Placed(kind="job", tenant="t", user="ann", queue="batch", template="cpu", flavor="cpu",
                                  replicas=1, image="registry.example/cpu:1", cpu_milli=100, memory_mib=128))
    try:
        with pytest.raises(MalformedResponse) as malformed:
            backend.launch(launch)
        assert str(malformed.value).startswith(f"the Kubernetes API answered the creation of pod {NAMESPACE}/")
        assert "V1PodSpec containers" in str(malformed.value) and "\n" not in str(malformed.value), malformed.value
    finally:
        backend.close()
    assert not [pod for pod in kube_api.list("Pod", NAMESPACE) if not pod["metadata"].get("deletionTimestamp")]
