"""RBAC's and ResourceQuota's 403s, and a pod no scheduler acts on, as the real control plane gives them (issue 34,
defects 2 and 3). tests/kube/test_refusals.py has the same cases on the API-server double; here kube-apiserver's
RBAC authorizer and ResourceQuota admission answer, and kube-scheduler is the one that never comes.

    .venv/bin/python -m pytest tests/kube/test_real_refusals.py -v

Each account is rbac.yaml's ServiceAccount, roles and bindings as shipped, less one verb (``reduced_rbac``), in a
namespace of this module's own (Pod Security ``restricted``), with a token of the TokenRequest API: what a
platform team gets when its copy of rbac.yaml misses a line.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes import client, utils

from jupyter_hetero.backends.base import Launch, LaunchUnavailable, Placed
from jupyter_hetero.backends.kubernetes.backend import MANAGED_SELECTOR, KubernetesBackend
from jupyter_hetero.backends.kubernetes.config import KubernetesConfig
from jupyter_hetero.backends.kubernetes.factory import PodFactory

from ..harness import until
from .cluster_fixtures import RBAC, TOKEN_SECONDS, control_plane, kube_binaries, kwok, kwok_nodes  # noqa: F401

NAMESPACE = "hetero-refusals"
QUOTA_NAMESPACE = "hetero-quota"
NODE = "cpu-worker-21"  # kwok's CPU-only node (tests/data/kubernetes/nodes/cpu-only.yaml)
UNSERVED = "no-such-scheduler"
RESTRICTED = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")}
MANAGED = dict(label.split("=", 1) for label in MANAGED_SELECTOR.split(","))
# A refusal is answered in milliseconds; a start that takes this long waited it out as if it were no answer.
START_TIMEOUT_S = 15.0
PROMPT_S = 8.0


@dataclass(frozen=True)
class Account:
    """A ServiceAccount as RBAC names it in a refusal, and a kubeconfig with its TokenRequest token."""

    user: str
    kubeconfig: Path


def reduced_rbac(*, account: str, namespace: str, without: tuple[str, str] | None = None) -> list[dict]:
    """rbac.yaml's objects for the ServiceAccount ``account`` of ``namespace`` (its workload namespace too), less
    the verb of ``without`` = (resource, verb) wherever a rule grants it."""
    documents = [document for document in yaml.safe_load_all(RBAC.read_text(encoding="utf-8")) if document]
    dropped = 0
    for document in documents:
        kind, metadata = document["kind"], document["metadata"]
        if kind == "ServiceAccount":
            metadata.update(name=account, namespace=namespace)
            continue
        metadata["name"] = f"{metadata['name']}-{account}"  # one account's roles beside another's
        if not kind.startswith("Cluster"):
            metadata["namespace"] = namespace
        if kind.endswith("Binding"):
            document["roleRef"]["name"] = metadata["name"]
            document["subjects"] = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
            continue
        for rule in document["rules"]:
            if without is not None and without[0] in rule["resources"] and without[1] in rule["verbs"]:
                rule["verbs"] = [verb for verb in rule["verbs"] if verb != without[1]]
                dropped += 1
        document["rules"] = [rule for rule in document["rules"] if rule["verbs"]]
    assert without is None or dropped == 1, f"rbac.yaml grants {without} {dropped} times, not once"
    return documents


def _grants(documents: list[dict], namespace: str) -> list[tuple[str, str, str, str, str]]:
    """(verb, API group, resource, subresource, namespace: '' for cluster-wide) of every rule in ``documents``."""
    found = []
    for document in documents:
        if document["kind"] in ("ClusterRole", "Role"):
            where = "" if document["kind"] == "ClusterRole" else namespace
            for rule in document["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        name, _, sub = resource.partition("/")
                        found += [(verb, group, name, sub, where) for verb in rule["verbs"]]
    return found


class Accounts:
    """Makes accounts over one control plane; what it made cluster-wide is deleted by :meth:`delete`."""

    def __init__(self, plane):
        self.plane = plane
        self.admin = plane.api_client()
        self._cluster_wide: list[tuple[str, str]] = []

    def make(self, name: str, namespace: str, *, without: tuple[str, str] | None = None) -> Account:
        documents = reduced_rbac(account=name, namespace=namespace, without=without)
        for document in documents:
            utils.create_from_dict(self.admin, document)
            if document["kind"].startswith("Cluster"):
                self._cluster_wide.append((document["kind"], document["metadata"]["name"]))
        user = f"system:serviceaccount:{namespace}:{name}"
        # RBAC's authorizer follows roles and bindings through its own cache: until it has them, even a granted
        # call is refused. Every kept grant is allowed (and the dropped one refused) before the account is used.
        authz = client.AuthorizationV1Api(self.admin)
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"]

        def allowed(verb: str, group: str, resource: str, sub: str, where: str) -> bool:
            attributes = {"verb": verb, "group": group, "resource": resource, "subresource": sub, "namespace": where}
            review = {"spec": {"user": user, "groups": groups, "resourceAttributes": attributes}}
            return bool(authz.create_subject_access_review(review).status.allowed)

        grants = _grants(documents, namespace)
        until(lambda: all(allowed(*grant) for grant in grants), f"RBAC to grant {user} {grants}", timeout=30)
        if without is not None:
            assert not allowed(without[1], "", without[0], "", namespace), f"{user} may still {without[1]} {without[0]}"
        token = client.CoreV1Api(self.admin).create_namespaced_service_account_token(
            name, namespace, {"spec": {"expirationSeconds": TOKEN_SECONDS}}).status.token
        kubeconfig = self.plane.write_kubeconfig(self.plane.root / f"{namespace}-{name}.kubeconfig", user=user,
                                                 token=token)
        return Account(user, kubeconfig)

    def delete(self) -> None:
        rbac = client.RbacAuthorizationV1Api(self.admin)
        for kind, name in self._cluster_wide:
            if kind == "ClusterRole":
                rbac.delete_cluster_role(name)
            else:
                rbac.delete_cluster_role_binding(name)


def _namespace(core: client.CoreV1Api, name: str) -> None:
    """A workload namespace as docs/kubernetes.md asks for one: Pod Security ``restricted``, its default
    ServiceAccount there (the ServiceAccount admission plugin refuses every pod until the controller makes it)."""
    core.create_namespace({"metadata": {"name": name, "labels": RESTRICTED}})
    until(lambda: core.list_namespaced_service_account(name, field_selector="metadata.name=default").items,
          f"namespace {name}'s default ServiceAccount", timeout=30)


@pytest.fixture(scope="module")
def admin(control_plane) -> client.CoreV1Api:
    return client.CoreV1Api(control_plane.api_client())


@pytest.fixture(scope="module")
def accounts(control_plane, admin):
    _namespace(admin, NAMESPACE)
    made = Accounts(control_plane)
    yield made
    made.delete()
    admin.delete_namespace(NAMESPACE)


def _backend(account: Account, namespace: str = NAMESPACE, **settings) -> KubernetesBackend:
    return KubernetesBackend(config=KubernetesConfig(kubeconfig=str(account.kubeconfig), namespace=namespace,
                                                     watch_timeout=30, **settings))


def _job(workload_id: int, attempt: int, tmp_path: Path) -> Launch:
    placed = Placed(kind="job", tenant="test", user="refusals-test", queue="batch", template="refusals-test",
                    flavor="cpu-standard", replicas=1, image="registry.example/refusals:1", cpu_milli=100,
                    memory_mib=128)
    return Launch(workload_id=workload_id, attempt=attempt, replica=0, node=NODE,
                  argv=["command", "--", "python", "-c", "print(42)"], env={}, cwd=tmp_path,
                  log_path=tmp_path / f"job-{attempt}.log", exit_path=tmp_path / f"exit-{attempt}.json", placed=placed)


# -- defect 2: RBAC's 403 on a list, at start-up -------------------------------------------------------------------

@pytest.mark.parametrize(("account", "without", "where"), [
    pytest.param("no-list-nodes", ("nodes", "list"), {None: "at the cluster scope"}, id="the cluster's nodes"),
    # The pods are listed twice, ours in the namespace and everyone's for their requests: either refusal may come
    # first, and each names its own scope.
    pytest.param("no-list-pods", ("pods", "list"),
                 {NAMESPACE: f"in namespace {NAMESPACE}", None: "at the cluster scope"}, id="pods"),
])
def test_a_list_the_real_rbac_refuses_fails_the_start_at_once_naming_the_permission_and_account(
        accounts, account, without, where):
    refused_account = accounts.make(account, NAMESPACE, without=without)
    backend = _backend(refused_account)
    started = time.monotonic()
    try:
        # ApiForbidden is a PermissionError: named so, this test reads the same on code from before it existed.
        with pytest.raises(PermissionError) as refused:
            backend.start(timeout=START_TIMEOUT_S)
    finally:
        backend.close()
    assert time.monotonic() - started < PROMPT_S, "the refusal was waited out as if it were no answer"
    resource, verb = without
    assert (refused.value.verb, refused.value.resource) == (verb, resource), refused.value
    assert refused.value.namespace in where, refused.value
    assert refused.value.user == refused_account.user == f"system:serviceaccount:{NAMESPACE}:{account}"
    assert str(refused.value).startswith(
        f"the Kubernetes API refused to {verb} {resource} {where[refused.value.namespace]}: the server's account "
        f"{refused_account.user} lacks this permission; grant it (verb {verb}, resource {resource})"), refused.value
    # kube-apiserver's own words, as the administrator will search for them.
    assert f'User "{refused_account.user}" cannot {verb} resource "{resource}"' in refused.value.message
    assert "did not answer" not in str(refused.value)


# -- defect 2: RBAC's 403 on collect_orphans' list -----------------------------------------------------------------

def test_orphans_the_real_rbac_forbids_listing_are_left_and_logged_and_the_rest_still_collected(
        accounts, admin, caplog):
    account = accounts.make("no-list-secrets", NAMESPACE, without=("secrets", "list"))
    labels = {**MANAGED, "hetero.jupyter.org/workload-id": "424242"}  # held by no live workload
    admin.create_namespaced_secret(NAMESPACE, {"metadata": {"name": "left-secret", "labels": labels},
                                               "data": {}})
    admin.create_namespaced_service(NAMESPACE, {"metadata": {"name": "left-service", "labels": labels},
                                                "spec": {"clusterIP": "None", "selector": labels,
                                                         "ports": [{"port": 29500}]}})
    backend = _backend(account)
    backend.start(timeout=START_TIMEOUT_S)  # nodes, pods and events: still granted
    try:
        with caplog.at_level(logging.WARNING, logger="jupyter_hetero.backends.kubernetes.backend"):
            collected = backend.collect_orphans([])
    finally:
        backend.close()
    assert collected == [f"{NAMESPACE}/left-service"], collected
    until(lambda: not admin.list_namespaced_service(NAMESPACE, field_selector="metadata.name=left-service").items,
          "the orphaned Service, which the account may list, to be deleted", timeout=10)
    assert admin.read_namespaced_secret("left-secret", NAMESPACE).metadata.name == "left-secret"
    assert any(
        f"orphaned secrets in namespace {NAMESPACE} are left: the Kubernetes API refused to list secrets in namespace "
        f"{NAMESPACE}: the server's account {account.user} lacks this permission" in record.getMessage()
        for record in caplog.records), caplog.text


# -- defect 2: a ResourceQuota's 403 on create ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def quota_namespace(control_plane, admin, accounts):
    """A namespace whose ResourceQuota allows one pod, its controller's count in the quota's status."""
    _namespace(admin, QUOTA_NAMESPACE)
    admin.create_namespaced_resource_quota(QUOTA_NAMESPACE, {"metadata": {"name": "one-pod"},
                                                             "spec": {"hard": {"pods": "1"}}})
    # The controller's first count, so that the holder pod is counted against a quota in force.
    until(lambda: (admin.read_namespaced_resource_quota("one-pod", QUOTA_NAMESPACE).status.hard or {}).get("pods"),
          "the quota controller to count namespace " + QUOTA_NAMESPACE, timeout=30)
    yield QUOTA_NAMESPACE
    admin.delete_namespace(QUOTA_NAMESPACE)


def _holder(name: str) -> dict:
    """Another workload's pod, on the kwok node: it uses the namespace's one pod."""
    return {"metadata": {"name": name}, "spec": {
        "nodeName": NODE, "securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                              "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "main", "image": "registry.example/holder:1",
                        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}]}}


def test_a_namespace_quota_used_up_makes_the_create_wait_not_fail_and_a_launch_goes_through_once_it_frees(
        accounts, admin, kwok_nodes, quota_namespace, tmp_path):
    account = accounts.make("quota-bound", quota_namespace)
    admin.create_namespaced_pod(quota_namespace, _holder("holder"))
    backend = _backend(account, quota_namespace)
    backend.start(timeout=START_TIMEOUT_S)
    handle = None
    try:
        # LaunchUnavailable is what the scheduler waits on: the attempt ends `unlaunched`, the workload queues again
        # and uses none of its retries. Any other error fails the attempt.
        with pytest.raises(LaunchUnavailable) as waiting:
            backend.launch(_job(910_000_001, 1, tmp_path))
        assert re.fullmatch(rf"quota of namespace {quota_namespace} exceeded: one-pod, requested: pods=1, "
                            r"used: pods=1, limited: pods=1", str(waiting.value)), waiting.value
        assert [pod.metadata.name for pod in admin.list_namespaced_pod(quota_namespace).items] == ["holder"]

        admin.delete_namespaced_pod("holder", quota_namespace, grace_period_seconds=0)
        tries = iter(range(2, 1000))  # each try a new attempt, as the scheduler makes one each time it requeues

        def launched():
            try:
                return backend.launch(_job(910_000_001, next(tries), tmp_path))
            except LaunchUnavailable as exc:  # the controller has not counted the holder out yet
                assert str(exc).startswith(f"quota of namespace {quota_namespace} exceeded: one-pod"), exc
                return None

        handle = until(launched, "a launch once the holder pod is gone", timeout=30)
        until(lambda: (state := backend.pod_state(handle.pod)) is not None and state.ready,
              f"pod {handle.pod} to be bound to {NODE} and run there", timeout=30)
        assert admin.read_namespaced_pod(handle.pod.split("/", 1)[1], quota_namespace).spec.node_name == NODE
    finally:
        if handle is not None:
            backend.kill(handle)
        backend.close()


# -- defect 3: a pod no scheduler acts on --------------------------------------------------------------------------

class _UnservedFactory(PodFactory):
    """Pods for a scheduler the cluster does not run: what a platform's mutating webhook or a pod template that
    names a secondary scheduler (Volcano, a GPU scheduler) makes of ours when that scheduler is down or absent."""

    def job_objects(self, launch: Launch):
        pod, service = super().job_objects(launch)
        pod.spec.scheduler_name = UNSERVED
        return pod, service


def test_a_pod_no_real_scheduler_acts_on_becomes_a_problem_after_the_unschedulable_timeout(
        accounts, admin, kwok_nodes, tmp_path):
    account = accounts.make("unserved", NAMESPACE)
    backend = _backend(account, unschedulable_timeout=2.0)
    backend.factory = _UnservedFactory(backend.config, backend.factory.work_dir)
    backend.start(timeout=START_TIMEOUT_S)
    handle = backend.launch(_job(910_000_002, 1, tmp_path))
    try:
        problem = until(lambda: backend.problem(handle), f"pod {handle.pod} to be a problem", timeout=30)
        assert re.fullmatch(rf"no scheduler acted on the pod in \d+ s \(its schedulerName is {UNSERVED}\): it was "
                            rf"never bound to node {NODE}", problem), problem
        # As the real cluster has it: unbound, no PodScheduled condition, no scheduler's event, and it would stay so.
        pod = admin.read_namespaced_pod(handle.pod.split("/", 1)[1], NAMESPACE)
        assert pod.spec.scheduler_name == UNSERVED and pod.spec.node_name is None, pod.spec
        assert not [c for c in pod.status.conditions or () if c.type == "PodScheduled"], pod.status.conditions
        events = admin.list_namespaced_event(NAMESPACE, field_selector=f"involvedObject.name={pod.metadata.name}")
        assert [event.reason for event in events.items] == [], events.items
        # The same job through the shipped factory, for kube-scheduler: bound at once, so the scheduler's absence
        # held the first pod and nothing else did.
        backend.factory = PodFactory(backend.config, backend.factory.work_dir)
        served = backend.launch(_job(910_000_002, 2, tmp_path))
        try:
            until(lambda: (state := backend.pod_state(served.pod)) is not None and state.ready,
                  f"pod {served.pod} to be bound to {NODE} by kube-scheduler and run", timeout=30)
        finally:
            backend.kill(served)
    finally:
        backend.kill(handle)
        backend.close()
