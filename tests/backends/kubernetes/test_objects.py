"""The pods, secrets and services the Kubernetes backend creates, checked by value and by the API's schema."""

from __future__ import annotations

import base64
import copy
import json
import re
from dataclasses import replace
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from kubernetes.client import ApiClient

from jupyter_hetero.backends.kubernetes import rbac
from jupyter_hetero.backends.kubernetes.objects import (
    KERNEL_CONNECTION_DIR,
    PodIdentity,
    PodSettings,
    Replica,
    device_resources,
    labels_of,
    make_connection_secret,
    make_credential_secret,
    make_job_pod,
    make_kernel_pod,
    make_rendezvous_service,
    make_server_pod,
    node_affinity,
    owned_by_pod,
    pod_name,
)
from jupyter_hetero.capability import Accelerator

KUBERNETES = "1.35"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

JOB = PodIdentity(
    workload_id=42, kind="job", tenant="vision", user="ann", queue="batch", template="training",
    flavor="a100-80g", attempt=2, replica=1, replicas=2,
)
KERNEL = replace(JOB, kind="kernel", template="interactive", queue="interactive", attempt=1, replica=0, replicas=1)
SERVER = replace(KERNEL, kind="server")
PLAIN = PodSettings(namespace="vision")
FULL = PodSettings(
    namespace="vision",
    service_account="hetero-workloads",
    image_pull_secrets=("registry",),
    tolerations=({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},),
    priority_class="hetero-batch",
    kueue_queue="vision-batch",
    kueue_priority_class="hetero-batch",
    run_as_user=2000,
    volumes=(
        {"name": "checkpoints", "mount_path": "/checkpoints", "claim": "vision-checkpoints"},
        {"name": "datasets", "mount_path": "/data", "host_path": "/mnt/datasets", "read_only": True},
    ),
    owner={"apiVersion": "v1", "kind": "ConfigMap", "name": "hetero-owner", "uid": "0a1b-2c3d"},
)
A100 = Accelerator(vendor="nvidia", model="A100-SXM4-80GB", count=8, memory_mib=81920)
HAMI_T4 = Accelerator(vendor="nvidia", model="Tesla T4", count=4, memory_mib=15360, sharing="milli")
CONNECTION = {
    "shell_port": 50001, "iopub_port": 50002, "stdin_port": 50003, "control_port": 50004, "hb_port": 50005,
    "ip": "0.0.0.0", "key": b"5ec4e7", "transport": "tcp", "signature_scheme": "hmac-sha256",
}
PORTS = [50001, 50002, 50003, 50004, 50005]


def as_dict(obj) -> dict:
    return ApiClient().sanitize_for_serialization(obj)


def valid(obj) -> dict:
    """The object as the API receives it, after checking it against the strict schema."""
    document = as_dict(obj)
    kubernetes_validate.validate(document, KUBERNETES, strict=True)
    return document


REPLICA_FIELDS = {"node", "image", "env", "cpu_milli", "memory_mib", "devices", "accelerator"}


def build(builder, arguments: dict, overrides: dict):
    """``builder`` with the arguments, the Replica's fields among them (and among the overrides) gathered."""
    merged = {**arguments, **overrides}
    replica = Replica(**{name: merged.pop(name) for name in REPLICA_FIELDS})
    return builder(replica=replica, **merged)


def job_pod(identity=JOB, settings=FULL, **overrides):
    arguments = {
        "identity": identity, "settings": settings, "node": "gpu-a100-3", "image": "registry.example/train:2.4",
        "command": ["python", "train.py", "--epochs", "3"],
        "env": {"HETERO_WORKLOAD_ID": "42", "MASTER_ADDR": "hetero-job-42-a2-r0-ann.hetero-job-42-a2"},
        "cpu_milli": 8000, "memory_mib": 65536, "devices": [(1000, 0), (1000, 0)], "accelerator": A100,
        "subdomain": "hetero-job-42-a2",
    }
    return build(make_job_pod, arguments, overrides)


def kernel_pod(identity=KERNEL, settings=PLAIN, **overrides):
    arguments = {
        "identity": identity, "settings": settings, "node": "gpu-t4-1", "image": "registry.example/lab:4",
        "env": {"HETERO_WORKLOAD_ID": "42"}, "cpu_milli": 2000, "memory_mib": 8192, "devices": [(250, 4096)],
        "accelerator": HAMI_T4, "connection_secret": "hetero-kernel-42-a1-r0-ann-connection", "ports": PORTS,
    }
    return build(make_kernel_pod, arguments, overrides)


def server_pod(identity=SERVER, settings=PLAIN, **overrides):
    arguments = {
        "identity": identity, "settings": settings, "node": "cpu-1", "image": "registry.example/lab:4",
        "command": ["jupyter", "server", "--ip=0.0.0.0", "--port=8888"], "env": {}, "cpu_milli": 1000,
        "memory_mib": 2048, "devices": [], "accelerator": None,
    }
    return build(make_server_pod, arguments, overrides)


def annotation(identity: PodIdentity) -> str:
    return json.dumps(
        {"attempt": identity.attempt, "flavor": identity.flavor, "kind": identity.kind, "queue": identity.queue,
         "replica": identity.replica, "replicas": identity.replicas, "template": identity.template,
         "tenant": identity.tenant, "user": identity.user, "workload_id": identity.workload_id},
        sort_keys=True, ensure_ascii=False,
    )


def affinity_to(node: str) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    ]}}}


CONTAINER_SECURITY = {
    "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
    "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"},
}
POD_SECURITY = {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}


# --- by value ---------------------------------------------------------------------------------


def test_a_job_replica_is_the_whole_pod_the_engine_placed():
    amounts = {"cpu": "8000m", "memory": "65536Mi", "nvidia.com/gpu": "2"}
    assert valid(job_pod()) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "hetero-job-42-a2-r1-ann",
            "namespace": "vision",
            "labels": {
                "app.kubernetes.io/managed-by": "jupyter-hetero",
                "hetero.jupyter.org/workload-id": "42",
                "hetero.jupyter.org/kind": "job",
                "hetero.jupyter.org/tenant": "vision",
                "hetero.jupyter.org/user": "ann",
                "hetero.jupyter.org/queue": "batch",
                "hetero.jupyter.org/attempt": "2",
                "hetero.jupyter.org/replica": "1",
                "kueue.x-k8s.io/queue-name": "vision-batch",
                "kueue.x-k8s.io/priority-class": "hetero-batch",
            },
            "annotations": {"hetero.jupyter.org/workload": annotation(JOB)},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "hetero-owner", "uid": "0a1b-2c3d"}],
        },
        "spec": {
            "affinity": affinity_to("gpu-a100-3"),
            "automountServiceAccountToken": True,
            "serviceAccountName": "hetero-workloads",
            "containers": [{
                "name": "job",
                "image": "registry.example/train:2.4",
                "command": ["python", "train.py", "--epochs", "3"],
                "env": [
                    {"name": "HETERO_WORKLOAD_ID", "value": "42"},
                    {"name": "MASTER_ADDR", "value": "hetero-job-42-a2-r0-ann.hetero-job-42-a2"},
                ],
                "resources": {"requests": amounts, "limits": amounts},
                "securityContext": {**CONTAINER_SECURITY, "runAsUser": 2000},
                "volumeMounts": [
                    {"name": "checkpoints", "mountPath": "/checkpoints"},
                    {"name": "datasets", "mountPath": "/data", "readOnly": True},
                ],
            }],
            "enableServiceLinks": False,
            "hostname": "hetero-job-42-a2-r1-ann",
            "subdomain": "hetero-job-42-a2",
            "imagePullSecrets": [{"name": "registry"}],
            "priorityClassName": "hetero-batch",
            "restartPolicy": "Never",
            "securityContext": {**POD_SECURITY, "runAsUser": 2000},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [
                {"name": "checkpoints", "persistentVolumeClaim": {"claimName": "vision-checkpoints"}},
                {"name": "datasets", "hostPath": {"path": "/mnt/datasets"}},
            ],
        },
    }


def test_a_kernel_pod_runs_ipykernel_on_the_servers_ports_from_its_secret():
    amounts = {
        "cpu": "2000m", "memory": "8192Mi",
        "nvidia.com/gpu": "1", "nvidia.com/gpucores": "25", "nvidia.com/gpumem": "4096",
    }
    assert valid(kernel_pod()) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "hetero-kernel-42-a1-r0-ann",
            "namespace": "vision",
            "labels": {
                "app.kubernetes.io/managed-by": "jupyter-hetero",
                "hetero.jupyter.org/workload-id": "42",
                "hetero.jupyter.org/kind": "kernel",
                "hetero.jupyter.org/tenant": "vision",
                "hetero.jupyter.org/user": "ann",
                "hetero.jupyter.org/queue": "interactive",
                "hetero.jupyter.org/attempt": "1",
                "hetero.jupyter.org/replica": "0",
            },
            "annotations": {"hetero.jupyter.org/workload": annotation(KERNEL)},
        },
        "spec": {
            "affinity": affinity_to("gpu-t4-1"),
            "automountServiceAccountToken": False,
            "containers": [{
                "name": "kernel",
                "image": "registry.example/lab:4",
                "command": ["python", "-m", "ipykernel_launcher", "-f", "/var/run/hetero/kernel/connection.json"],
                "env": [{"name": "HETERO_WORKLOAD_ID", "value": "42"}],
                "ports": [{"containerPort": port, "protocol": "TCP"} for port in PORTS],
                "resources": {"requests": amounts, "limits": amounts},
                "securityContext": CONTAINER_SECURITY,
                "volumeMounts": [{"name": "kernel-connection", "mountPath": KERNEL_CONNECTION_DIR, "readOnly": True}],
            }],
            "enableServiceLinks": False,
            "restartPolicy": "Never",
            "securityContext": POD_SECURITY,
            "volumes": [{"name": "kernel-connection", "secret": {"secretName": "hetero-kernel-42-a1-r0-ann-connection"}}],
        },
    }


def test_a_server_pod_is_ready_when_its_api_answers():
    amounts = {"cpu": "1000m", "memory": "2048Mi"}
    pod = valid(server_pod())
    assert pod["metadata"]["name"] == "hetero-server-42-a1-r0-ann"
    assert pod["metadata"]["labels"]["hetero.jupyter.org/kind"] == "server"
    assert pod["spec"]["affinity"] == affinity_to("cpu-1")
    assert pod["spec"]["containers"] == [{
        "name": "server",
        "image": "registry.example/lab:4",
        "command": ["jupyter", "server", "--ip=0.0.0.0", "--port=8888"],
        "ports": [{"name": "http", "containerPort": 8888, "protocol": "TCP"}],
        "readinessProbe": {
            "httpGet": {"path": "/api", "port": "http"}, "periodSeconds": 3, "timeoutSeconds": 2,
            "failureThreshold": 3,
        },
        "resources": {"requests": amounts, "limits": amounts},
        "securityContext": CONTAINER_SECURITY,
    }]
    assert "volumes" not in pod["spec"] and "hostname" not in pod["spec"]


def test_pods_are_bound_by_required_affinity_never_by_node_name():
    for pod, node in ((job_pod(node="gpu-7"), "gpu-7"), (kernel_pod(node="npu-2"), "npu-2"), (server_pod(), "cpu-1")):
        spec = valid(pod)["spec"]
        assert "nodeName" not in spec
        assert spec["affinity"] == affinity_to(node) == as_dict(node_affinity(node))


def test_optional_settings_leave_no_trace_when_unset():
    pod = valid(job_pod(settings=PLAIN, subdomain=None))
    for absent in ("priorityClassName", "tolerations", "imagePullSecrets", "serviceAccountName", "volumes",
                   "hostname", "subdomain"):
        assert absent not in pod["spec"], absent
    assert "kueue.x-k8s.io/queue-name" not in pod["metadata"]["labels"]
    assert "kueue.x-k8s.io/priority-class" not in pod["metadata"]["labels"]
    assert "ownerReferences" not in pod["metadata"]
    assert pod["spec"]["automountServiceAccountToken"] is False


def test_device_pinning_variables_are_left_to_the_device_plugin():
    env = {"CUDA_VISIBLE_DEVICES": "", "ASCEND_RT_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "",
           "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25", "HETERO_DEVICE_MILLI": "250", "WANDB_PROJECT": "x"}
    container = valid(kernel_pod(env=env))["spec"]["containers"][0]
    assert container["env"] == [{"name": "HETERO_DEVICE_MILLI", "value": "250"}, {"name": "WANDB_PROJECT", "value": "x"}]


# --- devices ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accelerator", "devices", "expected"),
    [
        pytest.param(A100, [(1000, 0)] * 4, {"nvidia.com/gpu": "4"}, id="whole NVIDIA GPUs"),
        pytest.param(HAMI_T4, [(500, 7680)], {"nvidia.com/gpu": "1", "nvidia.com/gpucores": "50",
                                              "nvidia.com/gpumem": "7680"}, id="HAMi half a GPU"),
        pytest.param(HAMI_T4, [(333, 0)], {"nvidia.com/gpu": "1", "nvidia.com/gpucores": "34"},
                     id="HAMi share without a memory cap rounds up"),
        pytest.param(HAMI_T4, [(1000, 0)] * 2, {"nvidia.com/gpu": "2"}, id="whole GPUs of a HAMi node"),
        pytest.param(Accelerator(vendor="nvidia", model="A100-SXM4-40GB MIG 1g.5gb", count=7, memory_mib=4864),
                     [(1000, 0)] * 2, {"nvidia.com/mig-1g.5gb": "2"}, id="MIG slices"),
        pytest.param(Accelerator(vendor="amd", model="MI300X", count=8, memory_mib=196608), [(1000, 0)],
                     {"amd.com/gpu": "1"}, id="AMD"),
        pytest.param(Accelerator(vendor="huawei", model="Ascend910B", count=8, memory_mib=65536), [(1000, 0)] * 8,
                     {"huawei.com/Ascend910": "8"}, id="Ascend 910"),
        pytest.param(Accelerator(vendor="ascend", model="Ascend310P3", count=4, memory_mib=24576), [(1000, 0)],
                     {"huawei.com/Ascend310P": "1"}, id="Ascend 310P"),
        pytest.param(Accelerator(vendor="cambricon", model="MLU370", count=8, memory_mib=49152), [(1000, 0)],
                     {"cambricon.com/mlu": "1"}, id="Cambricon"),
        pytest.param(Accelerator(vendor="hygon", model="K100", count=8, memory_mib=65536), [(1000, 0)],
                     {"hygon.com/dcu": "1"}, id="Hygon"),
        pytest.param(Accelerator(vendor="intel", model="Max 1550", count=4, memory_mib=131072), [(1000, 0)],
                     {"gpu.intel.com/i915": "1"}, id="Intel"),
        pytest.param(None, [], {}, id="CPU only"),
        pytest.param(A100, [], {}, id="no devices on a GPU node"),
    ],
)
def test_placed_devices_become_the_device_plugins_extended_resources(accelerator, devices, expected):
    assert device_resources(accelerator, devices) == expected
    pod = valid(job_pod(accelerator=accelerator, devices=devices))
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "8000m", "memory": "65536Mi", **expected}


@pytest.mark.parametrize(
    ("accelerator", "resource"),
    [
        pytest.param(A100, "nvidia.com/gpu", id="NVIDIA without HAMi"),
        pytest.param(Accelerator(vendor="amd", model="MI300X", count=8, memory_mib=196608), "amd.com/gpu", id="AMD"),
        pytest.param(Accelerator(vendor="huawei", model="Ascend910B", count=8, memory_mib=65536, sharing="milli"),
                     "huawei.com/Ascend910", id="Ascend even when shared"),
    ],
)
def test_a_fraction_of_a_device_without_hami_is_refused_naming_the_resource(accelerator, resource):
    with pytest.raises(ValueError, match=re.escape(resource)):
        device_resources(accelerator, [(500, 1024)])
    with pytest.raises(ValueError, match=re.escape(resource)):
        job_pod(accelerator=accelerator, devices=[(500, 1024)])


def test_devices_on_a_node_without_accelerators_are_refused():
    with pytest.raises(ValueError, match="without accelerators"):
        device_resources(None, [(1000, 0)])


@pytest.mark.skipif("resource" not in Accelerator.model_fields, reason="Accelerator has no resource field yet")
def test_the_resource_a_node_names_wins_over_the_familys():
    mig = Accelerator(vendor="nvidia", model="A100 MIG", count=7, memory_mib=9984, resource="nvidia.com/mig-1g.10gb")
    assert device_resources(mig, [(1000, 0)]) == {"nvidia.com/mig-1g.10gb": "1"}


# --- names ------------------------------------------------------------------------------------

AWKWARD = [
    pytest.param("Ops Team/Vision", "Ann.Lee@example.com", id="spaces, slashes, at-sign"),
    pytest.param("视觉组", "张三", id="Chinese names"),
    pytest.param("-lab-", "_ann_", id="leading and trailing punctuation"),
    pytest.param("t" * 100, "u" * 100, id="very long names"),
    pytest.param("a", "b", id="short names"),
]


@pytest.mark.parametrize(("tenant", "user"), AWKWARD)
def test_awkward_tenant_and_user_names_give_valid_names_and_labels(tenant, user):
    identity = replace(JOB, tenant=tenant, user=user, workload_id=123456789, attempt=17, replica=31)
    name = pod_name(identity)
    assert DNS_LABEL.match(name) and len(name) <= 63, name
    assert name.startswith("hetero-job-123456789-a17-r31")
    for value in labels_of(identity).values():
        assert LABEL_VALUE.match(value) and len(value) <= 63, value
    for obj in (job_pod(identity=identity), kernel_pod(identity=replace(identity, kind="kernel")),
                server_pod(identity=replace(identity, kind="server")),
                make_rendezvous_service(identity=identity, settings=FULL),
                make_connection_secret(identity=identity, settings=FULL, connection=CONNECTION)):
        document = valid(obj)
        real = json.loads(document["metadata"]["annotations"]["hetero.jupyter.org/workload"])
        assert (real["tenant"], real["user"]) == (tenant, user)


def test_names_that_slug_alike_keep_different_labels():
    first, second = (labels_of(replace(JOB, tenant=tenant)) for tenant in ("ops team", "ops/team"))
    assert first["hetero.jupyter.org/tenant"] != second["hetero.jupyter.org/tenant"]
    assert labels_of(JOB)["hetero.jupyter.org/tenant"] == "vision"


def test_pod_names_differ_by_kind_attempt_and_replica():
    identities = [replace(JOB, kind=kind, attempt=attempt, replica=replica)
                  for kind in ("job", "kernel", "server") for attempt in (1, 2) for replica in (0, 1)]
    assert len({pod_name(identity) for identity in identities}) == len(identities)


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="'notebook'"):
        pod_name(replace(JOB, kind="notebook"))


# --- companions -------------------------------------------------------------------------------


def test_replicas_reach_each_other_through_the_attempts_headless_service():
    service = valid(make_rendezvous_service(identity=JOB, settings=FULL))
    assert service["metadata"]["name"] == "hetero-job-42-a2"
    assert service["spec"] == {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {
            "app.kubernetes.io/managed-by": "jupyter-hetero",
            "hetero.jupyter.org/workload-id": "42",
            "hetero.jupyter.org/kind": "job",
            "hetero.jupyter.org/attempt": "2",
        },
    }
    assert service["metadata"]["ownerReferences"][0]["name"] == "hetero-owner"
    selector = service["spec"]["selector"].items()
    for replica in range(JOB.replicas):
        pod = valid(job_pod(identity=replace(JOB, replica=replica), subdomain=service["metadata"]["name"]))
        assert selector <= pod["metadata"]["labels"].items()
        assert pod["spec"]["hostname"] == pod["metadata"]["name"]
        assert pod["spec"]["subdomain"] == service["metadata"]["name"]
    earlier = valid(job_pod(identity=replace(JOB, attempt=1)))
    assert not selector <= earlier["metadata"]["labels"].items()


def test_the_connection_secret_holds_the_file_ipykernel_reads():
    secret = valid(make_connection_secret(identity=KERNEL, settings=FULL, connection=CONNECTION))
    assert secret["metadata"]["name"] == "hetero-kernel-42-a1-r0-ann-connection"
    assert secret["type"] == "Opaque"
    assert set(secret["data"]) == {"connection.json"}
    assert json.loads(base64.b64decode(secret["data"]["connection.json"])) == {**CONNECTION, "key": "5ec4e7"}
    assert secret["metadata"]["labels"] == labels_of(KERNEL)
    pod = valid(kernel_pod(settings=FULL, connection_secret=secret["metadata"]["name"]))
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert volumes["kernel-connection"]["secret"]["secretName"] == secret["metadata"]["name"]


CREDENTIAL = "hetero_wc_7_s3cr3t"


@pytest.mark.parametrize("build_pod", [
    pytest.param(lambda env: job_pod(settings=FULL, env=env), id="a job replica"),
    pytest.param(lambda env: kernel_pod(settings=FULL, env=env), id="a kernel"),
    pytest.param(lambda env: server_pod(settings=FULL, env=env), id="a server"),
])
def test_a_workloads_credential_comes_from_its_pods_secret_never_from_plain_env(build_pod):
    pod = build_pod({"HETERO_WORKLOAD_ID": "42", "JUPYTER_HETERO_TOKEN": CREDENTIAL})
    document = valid(pod)
    name = document["metadata"]["name"]
    env = {var["name"]: var for var in document["spec"]["containers"][0]["env"]}
    assert env["JUPYTER_HETERO_TOKEN"] == {"name": "JUPYTER_HETERO_TOKEN", "valueFrom": {
        "secretKeyRef": {"name": f"{name}-credential", "key": "JUPYTER_HETERO_TOKEN"}}}
    assert env["HETERO_WORKLOAD_ID"] == {"name": "HETERO_WORKLOAD_ID", "value": "42"}
    assert CREDENTIAL not in json.dumps(document)

    secret = valid(make_credential_secret(pod=pod, env={"JUPYTER_HETERO_TOKEN": CREDENTIAL, "HETERO_NODE": "n"}))
    assert (secret["metadata"]["name"], secret["metadata"]["namespace"], secret["type"]) == (
        f"{name}-credential", "vision", "Opaque")
    assert {key: base64.b64decode(value).decode() for key, value in secret["data"].items()} == {
        "JUPYTER_HETERO_TOKEN": CREDENTIAL}
    # The workload's labels, not the pod's queue or service labels: a Secret no live workload holds is an orphan.
    identity = PodIdentity(**json.loads(document["metadata"]["annotations"]["hetero.jupyter.org/workload"]))
    assert secret["metadata"]["labels"] == labels_of(identity)
    assert secret["metadata"]["ownerReferences"] == document["metadata"]["ownerReferences"]


def test_a_pod_without_a_credential_has_no_credential_secret():
    pod = job_pod(env={"HETERO_WORKLOAD_ID": "42"})
    assert make_credential_secret(pod=pod, env={"HETERO_WORKLOAD_ID": "42"}) is None
    assert not [var for var in as_dict(pod)["spec"]["containers"][0]["env"] if "valueFrom" in var]


@pytest.mark.parametrize(
    "volume",
    [
        pytest.param({"name": "x", "mount_path": "/x"}, id="no source"),
        pytest.param({"name": "x", "mount_path": "/x", "claim": "c", "host_path": "/h"}, id="two sources"),
        pytest.param({"name": "x", "claim": "c"}, id="no mount path"),
    ],
)
def test_a_volume_needs_one_source_and_a_mount_path(volume):
    with pytest.raises(ValueError, match="volume"):
        job_pod(settings=replace(PLAIN, volumes=(volume,)))


# --- the schema -------------------------------------------------------------------------------


def every_object():
    for settings in (PLAIN, FULL):
        yield job_pod(settings=settings)
        yield job_pod(settings=settings, subdomain=None, devices=[], accelerator=None)
        yield kernel_pod(settings=settings)
        yield server_pod(settings=settings, port=9000, probe_path="/user/ann/api")
        yield make_connection_secret(identity=KERNEL, settings=settings, connection=CONNECTION)
        yield make_rendezvous_service(identity=JOB, settings=settings)


def test_every_object_the_builders_make_passes_the_strict_schema():
    kinds = [valid(obj)["kind"] for obj in every_object()]
    assert sorted(set(kinds)) == ["Pod", "Secret", "Service"]


@pytest.mark.parametrize(
    "breakage",
    [
        pytest.param(lambda pod: pod["spec"]["containers"][0].update(gpus=2), id="unknown container field"),
        pytest.param(lambda pod: pod["spec"]["affinity"]["nodeAffinity"].update(nodeName="gpu-1"),
                     id="field in the wrong place"),
        pytest.param(lambda pod: pod["spec"].update(hostname=["hetero"]), id="list for a string"),
        pytest.param(lambda pod: pod["spec"]["containers"][0].pop("name"), id="missing required field"),
    ],
)
def test_the_schema_check_rejects_a_broken_pod(breakage):
    pod = valid(job_pod())
    broken = copy.deepcopy(pod)
    breakage(broken)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


# --- RBAC -------------------------------------------------------------------------------------

PACKAGE = Path(rbac.__file__).parent
_RESOURCE = {"pod": "pods", "node": "nodes", "event": "events", "secret": "secrets", "service": "services"}
_CALL = re.compile(r"\bcore\.(list|create|delete|read|patch|replace)_(?:namespaced_)?(pod_log|[a-z]+?)"
                   r"(?:_for_all_namespaces)?\b")


# Kueue's kinds (custom objects of KUEUE_API), and the paths its visibility API is read at (with get_json).
_CUSTOM = re.compile(r'\blist_(?:namespaced|cluster)_custom_object, \*KUEUE_API, (?:namespace, )?"([a-z]+)"')
_READ_PATH = re.compile(r"\bget_json\(self\.api_client, ([A-Z_]+),")


def used_by_the_backend() -> set[tuple[str, str]]:
    """Every (verb, resource) the backend's code calls the API server with, read from its source: the
    cluster's lists are watched too."""
    from jupyter_hetero.backends.kubernetes import kueue_queues
    from jupyter_hetero.backends.kubernetes.cluster import KUEUE_API

    used = set()
    for path in PACKAGE.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        calls = [(action, "pods/log" if noun == "pod_log" else _RESOURCE[noun]) for action, noun in _CALL.findall(text)]
        calls += [("list", f"{plural}.{KUEUE_API[0]}") for plural in _CUSTOM.findall(text)]
        for constant in _READ_PATH.findall(text):  # /apis/<group>/<version>/namespaces/{namespace}/<kind>/{name}/<sub>
            parts = getattr(kueue_queues, constant).split("/")
            calls.append(("get", f"{parts[6]}/{parts[8]}.{parts[2]}"))
        for action, resource in calls:
            verb = {"read": "get", "replace": "update"}.get(action, action)
            used.add((verb, resource))
            if path.name == "cluster.py" and verb == "list":  # the reflectors watch what they list
                used.add(("watch", resource))
    return used


def test_the_rbac_file_is_valid_kubernetes():
    documents = rbac.documents()
    assert [document["kind"] for document in documents] == [
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
    ]
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES, strict=True)
    subjects = [subject for document in documents for subject in document.get("subjects", ())]
    assert subjects and all(subject["name"] == "jupyter-hetero" for subject in subjects)


def test_the_rbac_file_grants_exactly_the_verbs_the_backend_uses():
    used = used_by_the_backend()
    assert ("create", "pods") in used and ("watch", "nodes") in used and ("get", "pods/log") in used  # the reading works
    assert rbac.granted() == used
    assert "*" not in yaml.safe_dump_all(rbac.documents())
    cluster = next(document for document in rbac.documents() if document["kind"] == "ClusterRole")
    assert {verb for rule in cluster["rules"] for verb in rule["verbs"]} == {"list", "watch"}  # reads only
    assert not any("secrets" in rule["resources"] for rule in cluster["rules"])  # never every namespace's secrets


def test_a_companion_owned_by_its_pod_names_the_pod_and_changes_nothing_else():
    secret = make_connection_secret(identity=KERNEL, settings=PLAIN, connection=CONNECTION)
    pod = kernel_pod()
    owned = valid(owned_by_pod(secret, pod, "0a1b-2c3d"))
    assert owned["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name, "uid": "0a1b-2c3d"}]
    assert as_dict(secret).get("metadata", {}).get("ownerReferences") is None  # the original is untouched
    assert {k: v for k, v in owned["metadata"].items() if k != "ownerReferences"} == as_dict(secret)["metadata"]
