"""The objects one launch creates, from the deployment's configuration: what the backend sends to the
API server and what ``jupyter hetero k8s render`` prints, from the same code.

    factory = PodFactory(KubernetesConfig(), work_dir="/srv/hetero/work")
    pod, service = factory.job_objects(launch)                # service: multi-replica jobs only
    factory.endpoint_service("resnet", tenant="vision")       # a service's name in the cluster
    secret, pod = factory.kernel_objects(workload_id=7, attempt=1, node="gpu-3", placed=placed,
                                         env=env, connection=connection_info)
"""

from __future__ import annotations

from dataclasses import replace

from kubernetes.client import V1Pod, V1Secret, V1Service

from ..base import Launch, Placed
from .config import KubernetesConfig
from .kueue_names import queue_admission
from .objects import (
    PodIdentity,
    PodSettings,
    Replica,
    make_connection_secret,
    make_endpoint_service,
    make_job_pod,
    make_kernel_pod,
    make_rendezvous_service,
    make_replica_pod,
    pod_name,
)

__all__ = ["KERNEL_PORTS", "PodFactory"]

# The connection-info keys of a kernel's five ports, in the order its pod declares them.
KERNEL_PORTS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")


class PodFactory:
    def __init__(self, config: KubernetesConfig, work_dir: str = ""):
        self.config = config
        self.work_dir = work_dir  # the server's work directory, mounted at the same path in pods

    def settings_for(self, placed: Placed) -> PodSettings:
        kueue_queue, kueue_priority_class = placed.kueue_queue, placed.kueue_priority_class
        if self.config.admission == "kueue" and not kueue_queue:
            # Every pod goes through the cluster's Kueue, to the LocalQueue the export made for its queue.
            kueue_queue, kueue_priority_class = queue_admission(placed.queue)
        volumes = list(self.config.volumes)
        if self.config.work_volume:
            volumes.insert(0, {"name": "hetero-work", "mount_path": self.work_dir, **self.config.work_volume})
        return PodSettings(
            namespace=self.config.namespace_for(placed.tenant), service_account=self.config.service_account or None,
            image_pull_secrets=tuple(self.config.image_pull_secrets), tolerations=tuple(self.config.tolerations),
            priority_class=placed.priority_class, kueue_queue=kueue_queue,
            kueue_priority_class=kueue_priority_class,
            run_as_user=self.config.run_as_user, volumes=tuple(volumes),
        )

    def job_objects(self, launch: Launch) -> tuple[V1Pod, V1Service | None]:
        """One replica's pod, and (for replica 0 of a multi-replica job) the headless Service its
        replicas find each other by."""
        placed = launch.placed
        identity = PodIdentity(
            workload_id=launch.workload_id, kind="service" if placed.serving else "job", tenant=placed.tenant,
            user=placed.user, queue=placed.queue,
            template=placed.template, flavor=placed.flavor, attempt=launch.attempt, replica=launch.replica,
            replicas=placed.replicas,
        )
        settings = self.settings_for(placed)
        service = make_rendezvous_service(identity=identity, settings=settings) if placed.replicas > 1 else None
        env = dict(launch.env)
        if service is not None:
            # Where replica 0 listens for its peers (torchrun's --master-addr, MPI's first host).
            env["HETERO_RENDEZVOUS_HOST"] = f"{pod_name(replace(identity, replica=0))}.{service.metadata.name}"
        replica = _replica(placed, launch.node, placed.image, env)
        command = ["python", "-m", "jupyter_hetero.kernel.runner", "--exit-file", str(launch.exit_path), *launch.argv]
        if placed.serving is not None:
            return make_replica_pod(identity=identity, settings=settings, replica=replica, command=command,
                                    serving=placed.serving), None
        pod = make_job_pod(identity=identity, settings=settings, replica=replica, command=command,
                           subdomain=service.metadata.name if service else None)
        return pod, service if launch.replica == 0 else None

    def endpoint_service(self, service: str, *, tenant: str) -> V1Service:
        return make_endpoint_service(service=service, namespace=self.config.namespace_for(tenant))

    def kernel_objects(self, *, workload_id: int, attempt: int, node: str, placed: Placed, env: dict[str, str],
                       connection: dict) -> tuple[V1Secret, V1Pod]:
        """A kernel's connection Secret (the key and ports the server chose; the kernel listens on every
        address of its pod) and its pod."""
        identity = PodIdentity(
            workload_id=workload_id, kind="kernel", tenant=placed.tenant, user=placed.user, queue=placed.queue,
            template=placed.template, flavor=placed.flavor, attempt=attempt,
        )
        settings = self.settings_for(placed)
        secret = make_connection_secret(identity=identity, settings=settings, connection={**connection, "ip": "0.0.0.0"})
        pod = make_kernel_pod(
            identity=identity, settings=settings,
            replica=_replica(placed, node, self.config.kernel_image or placed.image, env),
            connection_secret=secret.metadata.name, ports=[connection[name] for name in KERNEL_PORTS],
        )
        return secret, pod


def _replica(placed: Placed, node: str, image: str, env: dict[str, str]) -> Replica:
    return Replica(node=node, image=image, env=env, cpu_milli=placed.cpu_milli, memory_mib=placed.memory_mib,
                   devices=placed.devices, accelerator=placed.accelerator)
