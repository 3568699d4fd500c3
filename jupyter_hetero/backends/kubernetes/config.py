"""What a platform team configures about its cluster: how to reach it, where pods go, what they carry.

    c.HeteroApp.backend = "kubernetes"
    c.KubernetesConfig.namespace = "hetero-{tenant}"
    c.KubernetesConfig.work_volume = {"claim": "hetero-work"}
"""

from __future__ import annotations

import os

from traitlets import CaselessStrEnum, Dict, Float, Int, List, TraitError, Unicode, validate
from traitlets.config import LoggingConfigurable

from .telemetry import exporters_from_config

__all__ = ["DEFAULT_TOLERATIONS", "KubernetesConfig"]

# Device nodes are commonly tainted so that only work asking for devices lands there; our pods ask
# for them, so they tolerate these (and a node tainted otherwise is left out, with a finding).
DEFAULT_TOLERATIONS = [
    {"key": key, "operator": "Exists", "effect": "NoSchedule"}
    for key in ("nvidia.com/gpu", "amd.com/gpu", "huawei.com/Ascend910", "huawei.com/Ascend310P",
                "cambricon.com/mlu", "hygon.com/dcu", "gpu.intel.com/i915")
]


class KubernetesConfig(LoggingConfigurable):
    """Settings of the Kubernetes backend (used when ``HeteroApp.backend`` is ``kubernetes``)."""

    kubeconfig = Unicode(
        "", config=True,
        help="Path of a kubeconfig file. Empty: the in-cluster service account when the server runs in a pod "
        "(KUBERNETES_SERVICE_HOST is set), else $KUBECONFIG or ~/.kube/config.",
    )
    context = Unicode("", config=True, help="The kubeconfig context to use; empty means its current context.")
    namespace = Unicode(
        "hetero", config=True,
        help="Namespace of the pods, secrets and services the backend creates; '{tenant}' in it is replaced by "
        "the workload's tenant (one namespace per tenant, created beforehand by the platform team).",
    )
    admission = CaselessStrEnum(
        ["hetero", "kueue"], "hetero", config=True,
        help="Who admits workload pods. 'hetero': this engine alone (quota, fair share, preemption, reservations, "
        "topology); only queues that name a kueue_queue also pass through Kueue. 'kueue': the cluster's Kueue admits "
        "every workload's pod too: each carries the LocalQueue label of its queue as `jupyter hetero export kueue` "
        "names it (the queue's kueue_queue, else its name; WorkloadPriorityClass 'hetero-<queue>'), so Kueue's pod "
        "integration gates it until it admits it; a gated pod never counts as unschedulable.",
    )
    service_account = Unicode(
        "", config=True, help="Service account of workload pods; empty means the namespace's default one."
    )
    image_pull_secrets = List(Unicode(), config=True, help="Names of image pull secrets every workload pod gets.")
    tolerations = List(
        Dict(), default_value=DEFAULT_TOLERATIONS, config=True,
        help="Tolerations every workload pod gets (Kubernetes toleration objects). Nodes with a NoSchedule or "
        "NoExecute taint none of these tolerates are left out of the inventory, with a finding.",
    )
    run_as_user = Int(1000, config=True, help="User id workload containers run as (never root).")
    work_volume = Dict(
        config=True,
        help="Where the pods find the server's work directory (job files, logs, checkpoints), mounted at the same "
        "path: {'claim': '<PVC name>'} for a shared volume, or {'host_path': '<dir>'} on a single-node cluster. "
        "Empty: the work directory is not mounted (jobs then keep nothing between attempts).",
    )
    volumes = List(
        Dict(), config=True,
        help="Further volumes of every workload pod: {'name', 'mount_path', and 'claim' or 'host_path'}.",
    )
    kernel_image = Unicode(
        "", config=True,
        help="Image of kernel pods when the template's variant names none that runs ipykernel; empty means the "
        "variant's image.",
    )
    server_url = Unicode(
        "", config=True,
        help="URL at which workload pods reach this server's hetero API (e.g. http://jupyter.hetero.svc:8888/); "
        "empty means the server's own URL.",
    )
    service_port = Int(
        8080, config=True,
        help="Port a service's replicas listen on in their pods ($PORT); each pod listens on its own address ($HOST).",
    )
    kernel_start_timeout = Float(
        120.0, config=True,
        help="Seconds a kernel's pod may take to become Ready (image pull included) before the start fails.",
    )
    unschedulable_timeout = Float(
        120.0, config=True,
        help="Seconds a pod may stay unbound (kube-scheduler reporting FailedScheduling, or no scheduler acting on "
        "it at all) before its attempt fails with the scheduler's message or the scheduler's absence.",
    )
    image_pull_timeout = Float(
        60.0, config=True,
        help="Seconds a pod may wait on an image that cannot be pulled (ErrImagePull, ImagePullBackOff) before "
        "its attempt fails with the reason.",
    )
    watch_timeout = Int(
        240, config=True, help="Seconds each watch request asks the API server to keep open before it re-watches."
    )
    resync_interval = Float(600.0, config=True, help="Seconds between full re-lists of nodes and pods.")
    api_timeout = Float(
        30.0, config=True,
        help="Seconds a create or delete may wait on the API server before it counts as not answered (a launch "
        "then waits and tries again, using none of the workload's retries).",
    )

    exporters = List(
        Dict(), config=True,
        help="Prometheus endpoints of device exporters, whose per-pod utilisation and memory become the pods' usage "
        "samples (usage records, idle culling, reports): {'kind': 'dcgm' | 'npu-exporter' | 'amd-device-metrics', "
        "'url': ...}. '{node_ip}' or '{node}' in the url makes it one endpoint per node that runs our device pods "
        "(an exporter DaemonSet on the node's address); otherwise it is one endpoint (a single exporter, or a "
        "Prometheus /federate URL). Empty: devices in pods are not measured.",
    )
    exporter_interval = Float(
        15.0, config=True, help="Seconds between passes over the device exporters (their own refresh is 5-30 s)."
    )
    exporter_timeout = Float(
        3.0, config=True,
        help="Seconds an exporter may take to answer; one that takes longer leaves its pods unmeasured for that pass.",
    )

    @validate("exporters")
    def _valid_exporters(self, proposal):
        try:
            exporters_from_config(proposal["value"])
        except ValueError as exc:
            raise TraitError(f"KubernetesConfig.exporters: {exc}") from None
        return proposal["value"]

    def namespace_for(self, tenant: str) -> str:
        return self.namespace.replace("{tenant}", tenant)

    @property
    def per_tenant(self) -> bool:
        return "{tenant}" in self.namespace

    def api_client(self):
        """A client of the configured cluster."""
        from kubernetes import client, config

        if self.kubeconfig or "KUBERNETES_SERVICE_HOST" not in os.environ:
            configuration = client.Configuration()
            config.load_kube_config(config_file=self.kubeconfig or None, context=self.context or None,
                                    client_configuration=configuration)
        else:
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)
        return client.ApiClient(configuration)
