"""Node objects as a kubelet registers them, for the fake cluster.

```python
server.put(ready_node("node-a", labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}))
```
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping, Sequence

from tests.kube.store import now_rfc3339

__all__ = ["KWOK_ANNOTATION", "kwok_node", "ready_node"]

# kwok manages (heartbeats, runs the pods of) the nodes carrying this annotation with the value "fake".
KWOK_ANNOTATION = "kwok.x-k8s.io/node"


def ready_node(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[dict] = (),
    unschedulable: bool = False,
    ready: str = "True",
    allocatable: Mapping[str, str] | None = None,
) -> dict:
    """A Node with the labels a kubelet sets on itself, 8 cores and 32 GiB unless told otherwise."""
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    resources.update(allocatable or {})
    now = now_rfc3339()
    reasons = {"True": ("KubeletReady", "kubelet is posting ready status"),
               "False": ("KubeletNotReady", "container runtime network not ready"),
               "Unknown": ("NodeStatusUnknown", "Kubelet stopped posting node status.")}
    reason, message = reasons[ready]
    spec: dict = {"podCIDR": "10.244.0.0/24"}
    if taints:
        spec["taints"] = [dict(taint) for taint in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "n2-standard-8",
                "topology.kubernetes.io/zone": "zone-a",
                **(labels or {}),
            },
        },
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
                 "lastHeartbeatTime": now, "lastTransitionTime": now},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure",
                 "lastHeartbeatTime": now, "lastTransitionTime": now},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID",
                 "lastHeartbeatTime": now, "lastTransitionTime": now},
                {"type": "Ready", "status": ready, "reason": reason, "message": message,
                 "lastHeartbeatTime": now, "lastTransitionTime": now},
            ],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.33.0", "kubeProxyVersion": "v1.33.0",
                         "containerRuntimeVersion": "containerd://1.7.27", "operatingSystem": "linux",
                         "architecture": "amd64", "osImage": "Ubuntu 22.04.5 LTS", "kernelVersion": "5.15.0-1070-gke",
                         "machineID": uuid.uuid5(uuid.NAMESPACE_DNS, name).hex,
                         "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
                         "bootID": str(uuid.uuid5(uuid.NAMESPACE_OID, name))},
        },
    }


def kwok_node(node: Mapping) -> dict:
    """``node`` (a recorded or built Node) for a real API server, managed by kwok.

    Its labels, taints and resources stay; its conditions go, so that kwok posts them (Ready, with fresh
    heartbeats) as the node's kubelet would, and its server-set fields go, as a create does not take them.
    """
    managed = copy.deepcopy(dict(node))
    metadata = managed.setdefault("metadata", {})
    for field in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        metadata.pop(field, None)
    metadata.setdefault("annotations", {})[KWOK_ANNOTATION] = "fake"
    status = managed.setdefault("status", {})
    status.pop("conditions", None)
    # Recorded objects keep only the nodeInfo fields that matter; the API (and its client) requires them all.
    # kwok fills an empty one with its own value, as a kubelet reports its own.
    info = status.setdefault("nodeInfo", {})
    for field in ("architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
                  "kubeletVersion", "machineID", "operatingSystem", "osImage", "systemUUID"):
        info.setdefault(field, "")
    return managed
