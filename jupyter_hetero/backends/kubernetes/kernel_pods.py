"""Kernels' pods: each with its connection Secret, owned by the pod; what the kernel provisioner drives."""

from __future__ import annotations

from ..base import Placed
from .factory import PodFactory
from .objects import owned_by_pod
from .pod_lifecycle import PodLifecycle
from .telemetry import ExporterScraper

__all__ = ["KernelPods"]


class KernelPods(PodLifecycle):
    """Kernels' pods and their connection Secrets, created and deleted together."""

    factory: PodFactory
    telemetry: ExporterScraper | None
    _kernel_secrets: dict[str, str]  # kernel pod -> its connection Secret
    _kernels: dict[int, str]  # kernel workload -> its pod

    def launch_kernel(self, *, workload_id: int, attempt: int, node: str, placed: Placed, env: dict[str, str],
                      connection: dict) -> str:
        """A kernel's pod, then its connection Secret, owned by the pod (Kubernetes deletes it with the pod,
        should we not); the pod's "namespace/name". The server chose the key and ports: nothing comes back
        from the pod but its IP, through the API server. The kubelet holds the pod until its Secret is there."""
        secret, pod = self.factory.kernel_objects(workload_id=workload_id, attempt=attempt, node=node, placed=placed,
                                                  env=env, connection=connection)
        namespace = pod.metadata.namespace
        key = f"{namespace}/{pod.metadata.name}"
        self._unseen[key] = self.clock()
        try:
            self._create_credential(pod, env)
            uid = self._create(self.core.create_namespaced_pod, namespace, pod)
        except BaseException:
            self._delete_credential(key)
            raise
        self._kernel_secrets[key] = secret.metadata.name
        self._kernels[workload_id] = key
        try:
            self._create(self.core.create_namespaced_secret, namespace,
                         owned_by_pod(secret, pod, uid) if uid else secret)
        except BaseException:
            self.delete_kernel(key)
            raise
        return key

    def delete_kernel(self, key: str, *, grace_s: int | None = 0) -> None:
        """A kernel's pod and its connection Secret."""
        self.delete_pod(key, grace_s=grace_s)
        self._kernels = {workload: pod for workload, pod in self._kernels.items() if pod != key}
        secret = self._kernel_secrets.pop(key, None)
        if secret is not None:
            self._delete_secret(key.split("/", 1)[0], secret)

    def kernel_usage(self, workload_id: int, *, devices: int, node: str) -> dict:
        """A kernel pod's device use from the exporters' latest pass, as :meth:`sample` gives a replica's."""
        key = self._kernels.get(workload_id)
        if self.telemetry is None or key is None:
            return {}
        return self.telemetry.usage(key, devices=devices, node=node)
