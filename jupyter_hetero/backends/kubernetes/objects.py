"""Pure builders of the pods, secrets and services the Kubernetes backend creates.

>>> identity = PodIdentity(workload_id=7, kind="job", tenant="lab", user="ann", queue="batch",
...                        template="training", flavor="h100")
>>> pod = make_job_pod(identity=identity, settings=PodSettings(namespace="lab"), node="gpu-1",
...                    image="python:3.12", command=["python", "train.py"], env={},
...                    cpu_milli=2000, memory_mib=4096, devices=[], accelerator=None)
>>> pod.metadata.name, pod.spec.affinity.node_affinity is not None
('hetero-job-7-a1-r0-ann', True)

The engine decides the node and the devices; these objects only say it to Kubernetes: a required node
affinity to the chosen node (kube-scheduler still binds, checks taints and admits the pod; never
``nodeName``, which skips all of that) and the devices as extended resources for the device plugin.
Every builder is keyword-only and returns typed ``kubernetes.client`` models; none reads a clock or
does I/O.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubernetes.client import (
    V1Affinity,
    V1Capabilities,
    V1Container,
    V1ContainerPort,
    V1EnvVar,
    V1EnvVarSource,
    V1HostPathVolumeSource,
    V1HTTPGetAction,
    V1LocalObjectReference,
    V1NodeAffinity,
    V1NodeSelector,
    V1NodeSelectorRequirement,
    V1NodeSelectorTerm,
    V1ObjectFieldSelector,
    V1ObjectMeta,
    V1OwnerReference,
    V1PersistentVolumeClaimVolumeSource,
    V1Pod,
    V1PodSecurityContext,
    V1PodSpec,
    V1Probe,
    V1ResourceRequirements,
    V1SeccompProfile,
    V1Secret,
    V1SecretKeySelector,
    V1SecretVolumeSource,
    V1SecurityContext,
    V1Service,
    V1ServicePort,
    V1ServiceSpec,
    V1Toleration,
    V1Volume,
    V1VolumeMount,
)

from ...capability import Accelerator
from ..base import Serving
from .devices import DEVICE_PINNING, device_resources
from .pod_identity import (
    MANAGED_BY,
    WORKLOAD_ANNOTATION,
    PodIdentity,
    attempt_selector,
    endpoint_service_name,
    labels_of,
    pod_name,
    rendezvous_name,
    service_labels,
    workload_annotation,
)

__all__ = [
    "CREDENTIAL_ENV",
    "KERNEL_CONNECTION_DIR",
    "KUEUE_PRIORITY_LABEL",
    "KUEUE_QUEUE_LABEL",
    "MANAGED_BY",
    "WORKLOAD_ANNOTATION",
    "PodIdentity",
    "PodSettings",
    "Replica",
    "device_resources",
    "credential_secret_name",
    "labels_of",
    "make_connection_secret",
    "make_credential_secret",
    "make_endpoint_service",
    "make_job_pod",
    "make_kernel_pod",
    "make_rendezvous_service",
    "make_replica_pod",
    "make_server_pod",
    "node_affinity",
    "owned_by_pod",
    "pod_name",
    "rendezvous_name",
]

KERNEL_CONNECTION_DIR = "/var/run/hetero/kernel"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# A workload's own credential: never in a pod spec's plain env, which anyone who may read the pod sees
# (`kubectl get pod -o yaml`, events, audit logs); the pod names a key of its credential Secret instead.
CREDENTIAL_ENV = frozenset({"JUPYTER_HETERO_TOKEN"})
_CONNECTION_KEY = "connection.json"
_CONNECTION_VOLUME = "kernel-connection"


@dataclass(frozen=True)
class PodSettings:
    """Deployment choices from configuration, the same for every pod of a namespace."""

    namespace: str
    service_account: str | None = None
    image_pull_secrets: tuple[str, ...] = ()
    tolerations: tuple[dict, ...] = ()  # V1Toleration-shaped dicts (camelCase keys)
    priority_class: str | None = None
    kueue_queue: str | None = None  # set -> label kueue.x-k8s.io/queue-name
    kueue_priority_class: str | None = None  # with it -> label kueue.x-k8s.io/priority-class
    run_as_user: int = 1000
    volumes: tuple[dict, ...] = ()  # {"name", "mount_path", one of "claim" | "host_path", "read_only"?}
    owner: dict | None = None  # an ownerReference dict (apiVersion, kind, name, uid)


# --- metadata ---------------------------------------------------------------------------------


def _metadata(identity: PodIdentity, settings: PodSettings, name: str, labels: dict[str, str]) -> V1ObjectMeta:
    owner = settings.owner
    return V1ObjectMeta(
        name=name,
        namespace=settings.namespace,
        labels=labels,
        annotations={WORKLOAD_ANNOTATION: workload_annotation(identity)},
        owner_references=[_owner_reference(owner)] if owner else None,
    )


def _owner_reference(owner: Mapping) -> V1OwnerReference:
    unknown = set(owner) - {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}
    if unknown:
        raise ValueError(f"unknown ownerReference fields: {', '.join(sorted(unknown))}")
    return V1OwnerReference(
        api_version=owner["apiVersion"],
        kind=owner["kind"],
        name=owner["name"],
        uid=owner["uid"],
        controller=owner.get("controller"),
        block_owner_deletion=owner.get("blockOwnerDeletion"),
    )


def owned_by_pod(obj, pod: V1Pod, uid: str):
    """A copy of ``obj`` (a Secret or Service that lives for ``pod``) that Kubernetes deletes with it."""
    metadata = copy.copy(obj.metadata)
    metadata.owner_references = [V1OwnerReference(api_version="v1", kind="Pod", name=pod.metadata.name, uid=uid)]
    owned = copy.copy(obj)
    owned.metadata = metadata
    return owned


# --- resources and placement ------------------------------------------------------------------


def _resources(
    cpu_milli: int, memory_mib: int, devices: Sequence[tuple[int, int]], accelerator: Accelerator | None
) -> V1ResourceRequirements:
    # Limits equal requests: the engine placed exactly this much, extended resources demand it,
    # and a Guaranteed pod is the last one the kubelet evicts under node pressure.
    amounts: dict[str, str] = {}
    if cpu_milli:
        amounts["cpu"] = f"{cpu_milli}m"
    if memory_mib:
        amounts["memory"] = f"{memory_mib}Mi"
    amounts.update(device_resources(accelerator, devices))
    return V1ResourceRequirements(requests=dict(amounts), limits=dict(amounts))


def node_affinity(node: str) -> V1Affinity:
    """Required affinity to one node by name; kube-scheduler binds it, so taints and admission still apply."""
    term = V1NodeSelectorTerm(
        match_fields=[V1NodeSelectorRequirement(key="metadata.name", operator="In", values=[node])]
    )
    return V1Affinity(
        node_affinity=V1NodeAffinity(
            required_during_scheduling_ignored_during_execution=V1NodeSelector(node_selector_terms=[term])
        )
    )


_TOLERATION_FIELDS = {
    "key": "key",
    "operator": "operator",
    "value": "value",
    "effect": "effect",
    "tolerationSeconds": "toleration_seconds",
}


def _toleration(spec: Mapping) -> V1Toleration:
    unknown = set(spec) - set(_TOLERATION_FIELDS)
    if unknown:
        raise ValueError(f"unknown toleration fields: {', '.join(sorted(unknown))}")
    return V1Toleration(**{_TOLERATION_FIELDS[key]: value for key, value in spec.items()})


def _volume(spec: Mapping) -> tuple[V1Volume, V1VolumeMount]:
    name = spec.get("name")
    if not name or not spec.get("mount_path"):
        raise ValueError(f"a volume needs a name and a mount_path: {dict(spec)}")
    if ("claim" in spec) == ("host_path" in spec):
        raise ValueError(f"volume {name!r} needs exactly one of 'claim' or 'host_path'")
    read_only = True if spec.get("read_only") else None
    if "claim" in spec:
        volume = V1Volume(
            name=name,
            persistent_volume_claim=V1PersistentVolumeClaimVolumeSource(claim_name=spec["claim"], read_only=read_only),
        )
    else:
        volume = V1Volume(name=name, host_path=V1HostPathVolumeSource(path=spec["host_path"]))
    return volume, V1VolumeMount(name=name, mount_path=spec["mount_path"], read_only=read_only)


# --- pods -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replica:
    """What one pod is given: the node the engine chose, the image, the environment and the resources
    (``devices``: (milli, memory MiB) per placed device of ``accelerator``)."""

    node: str
    image: str
    env: Mapping[str, str]
    cpu_milli: int
    memory_mib: int
    devices: Sequence[tuple[int, int]] = ()
    accelerator: Accelerator | None = None


def _pod(
    *,
    identity: PodIdentity,
    settings: PodSettings,
    replica: Replica,
    command: Sequence[str],
    ports: Sequence[V1ContainerPort] = (),
    volumes: Sequence[tuple[V1Volume, V1VolumeMount]] = (),
    readiness_probe: V1Probe | None = None,
    subdomain: str | None = None,
    labels: Mapping[str, str] | None = None,
    fields: Mapping[str, str] | None = None,
) -> V1Pod:
    """The pod every builder shares; the kinds differ only in command, ports, volumes, probe, further
    ``labels`` and environment variables set from the pod's own ``fields`` (the downward API)."""
    name = pod_name(identity)
    labels = {**labels_of(identity), **(labels or {})}
    if settings.kueue_queue:
        labels[KUEUE_QUEUE_LABEL] = settings.kueue_queue
        if settings.kueue_priority_class:
            labels[KUEUE_PRIORITY_LABEL] = settings.kueue_priority_class
    mounted = [_volume(spec) for spec in settings.volumes] + list(volumes)
    container = V1Container(
        name=identity.kind,
        image=replica.image,
        command=list(command),
        env=[V1EnvVar(name=key, value=str(value)) for key, value in replica.env.items()
             if key not in DEVICE_PINNING and key not in (fields or {}) and key not in CREDENTIAL_ENV]
            + [V1EnvVar(name=key, value_from=V1EnvVarSource(secret_key_ref=V1SecretKeySelector(
                   name=credential_secret_name(name), key=key))) for key in sorted(CREDENTIAL_ENV & set(replica.env))]
            + [V1EnvVar(name=key, value_from=V1EnvVarSource(field_ref=V1ObjectFieldSelector(field_path=path)))
               for key, path in (fields or {}).items()] or None,
        ports=list(ports) or None,
        resources=_resources(replica.cpu_milli, replica.memory_mib, replica.devices, replica.accelerator),
        volume_mounts=[mount for _, mount in mounted] or None,
        readiness_probe=readiness_probe,
        security_context=V1SecurityContext(
            allow_privilege_escalation=False,
            capabilities=V1Capabilities(drop=["ALL"]),
            run_as_non_root=True,
            run_as_user=settings.run_as_user,
            seccomp_profile=V1SeccompProfile(type="RuntimeDefault"),
        ),
    )
    spec = V1PodSpec(
        containers=[container],
        restart_policy="Never",
        affinity=node_affinity(replica.node),
        tolerations=[_toleration(spec) for spec in settings.tolerations] or None,
        priority_class_name=settings.priority_class,
        service_account_name=settings.service_account,
        # Workloads do not talk to the API server unless a service account was chosen for them.
        automount_service_account_token=settings.service_account is not None,
        # Service variables of a busy namespace would crowd the workload's own environment.
        enable_service_links=False,
        image_pull_secrets=[V1LocalObjectReference(name=secret) for secret in settings.image_pull_secrets] or None,
        volumes=[volume for volume, _mount in mounted] or None,
        hostname=name if subdomain else None,
        subdomain=subdomain,
        security_context=V1PodSecurityContext(
            run_as_non_root=True,
            run_as_user=settings.run_as_user,
            seccomp_profile=V1SeccompProfile(type="RuntimeDefault"),
        ),
    )
    return V1Pod(
        api_version="v1", kind="Pod", metadata=_metadata(identity, settings, name, labels), spec=spec
    )


def make_job_pod(*, identity: PodIdentity, settings: PodSettings, replica: Replica, command: list[str],
                 subdomain: str | None = None) -> V1Pod:
    """One replica of a job; with ``subdomain`` (the attempt's headless Service) it is ``<pod>.<subdomain>``."""
    return _pod(identity=identity, settings=settings, replica=replica, command=command, subdomain=subdomain)


def make_replica_pod(*, identity: PodIdentity, settings: PodSettings, replica: Replica, command: list[str],
                     serving: Serving) -> V1Pod:
    """A service's replica: it listens on ``serving.port`` ($PORT) at its pod's address ($HOST), is Ready once its
    readiness path answers, and carries its service's and revision's labels, which its cluster name selects."""
    probe = V1Probe(http_get=V1HTTPGetAction(path=serving.readiness_path, port="http"), period_seconds=2,
                    timeout_seconds=2, failure_threshold=3)
    return _pod(
        identity=identity, settings=settings, replica=replica, command=command,
        ports=[V1ContainerPort(name="http", container_port=serving.port, protocol="TCP")], readiness_probe=probe,
        labels=service_labels(serving.service, serving.revision), fields={"HOST": "status.podIP"},
    )


def make_kernel_pod(*, identity: PodIdentity, settings: PodSettings, replica: Replica, connection_secret: str,
                    ports: Sequence[int]) -> V1Pod:
    """An ipykernel listening on the server-chosen ``ports``, its connection file from a Secret."""
    secret = V1Volume(name=_CONNECTION_VOLUME, secret=V1SecretVolumeSource(secret_name=connection_secret))
    mount = V1VolumeMount(name=_CONNECTION_VOLUME, mount_path=KERNEL_CONNECTION_DIR, read_only=True)
    return _pod(
        identity=identity, settings=settings, replica=replica,
        command=["python", "-m", "ipykernel_launcher", "-f", f"{KERNEL_CONNECTION_DIR}/{_CONNECTION_KEY}"],
        ports=[V1ContainerPort(container_port=port, protocol="TCP") for port in ports], volumes=[(secret, mount)],
    )


def make_server_pod(*, identity: PodIdentity, settings: PodSettings, replica: Replica, command: list[str],
                    port: int = 8888, probe_path: str = "/api") -> V1Pod:
    """A Jupyter server on ``port``, ready once ``probe_path`` (the server's unauthenticated ``/api``) answers."""
    probe = V1Probe(http_get=V1HTTPGetAction(path=probe_path, port="http"), period_seconds=3, timeout_seconds=2,
                    failure_threshold=3)
    return _pod(
        identity=identity, settings=settings, replica=replica, command=command,
        ports=[V1ContainerPort(name="http", container_port=port, protocol="TCP")], readiness_probe=probe,
    )


# --- companions -------------------------------------------------------------------------------


def make_connection_secret(*, identity: PodIdentity, settings: PodSettings, connection: dict) -> V1Secret:
    """The kernel's connection file (key and ports chosen by the server) as key ``connection.json``."""
    # jupyter_client keeps the key as bytes; the file ipykernel reads holds it as text.
    readable = {key: value.decode() if isinstance(value, bytes) else value for key, value in connection.items()}
    document = json.dumps(readable, sort_keys=True).encode()
    return V1Secret(
        api_version="v1",
        kind="Secret",
        type="Opaque",
        metadata=_metadata(identity, settings, f"{pod_name(identity)}-connection", labels_of(identity)),
        # data, not stringData: it is what the API server stores and answers.
        data={_CONNECTION_KEY: base64.b64encode(document).decode()},
    )


def credential_secret_name(pod: str) -> str:
    """The Secret holding the credential of the pod named ``pod``."""
    return f"{pod}-credential"


def make_credential_secret(*, pod: V1Pod, env: Mapping[str, str]) -> V1Secret | None:
    """The Secret a pod's credential variables (``CREDENTIAL_ENV`` in ``env``) come from, one per pod, with its
    workload's labels (a Secret no live workload holds is an orphan); None when ``env`` has no credential."""
    data = {key: base64.b64encode(str(env[key]).encode()).decode() for key in sorted(CREDENTIAL_ENV & set(env))}
    if not data:
        return None
    annotation = pod.metadata.annotations[WORKLOAD_ANNOTATION]
    return V1Secret(
        api_version="v1",
        kind="Secret",
        type="Opaque",
        metadata=V1ObjectMeta(
            name=credential_secret_name(pod.metadata.name), namespace=pod.metadata.namespace,
            labels=labels_of(PodIdentity(**json.loads(annotation))), annotations={WORKLOAD_ANNOTATION: annotation},
            owner_references=copy.deepcopy(pod.metadata.owner_references),
        ),
        data=data,
    )


def make_rendezvous_service(*, identity: PodIdentity, settings: PodSettings) -> V1Service:
    """The headless Service of a job's attempt, selecting all its replicas so each has a DNS name."""
    return V1Service(
        api_version="v1",
        kind="Service",
        metadata=_metadata(identity, settings, rendezvous_name(identity), attempt_selector(identity)),
        spec=V1ServiceSpec(
            cluster_ip="None",
            selector=attempt_selector(identity),
            # Replicas look each other up while starting, before any of them is Ready.
            publish_not_ready_addresses=True,
        ),
    )


def make_endpoint_service(*, service: str, namespace: str) -> V1Service:
    """A service's name in the cluster: ``hetero-<name>.<namespace>.svc``, port 80, reaches its ready replicas of
    every revision (the canary's share of traffic is the endpoint's to keep, not this name's)."""
    return V1Service(
        api_version="v1",
        kind="Service",
        metadata=V1ObjectMeta(name=endpoint_service_name(service), namespace=namespace,
                              labels=service_labels(service),
                              annotations={WORKLOAD_ANNOTATION: json.dumps({"service": service}, ensure_ascii=False)}),
        spec=V1ServiceSpec(selector=service_labels(service),
                           ports=[V1ServicePort(name="http", port=80, target_port="http", protocol="TCP")]),
    )
