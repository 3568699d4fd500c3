"""Kueue admission (``KubernetesConfig.admission = "kueue"``): its API required at start, and its word on the pods it
still holds at their scheduling gate."""

from __future__ import annotations

from kubernetes.client.rest import ApiException

from ..base import AdmissionWait, ProcessHandle
from .cluster import KUEUE_API
from .kueue_queues import KueueQueues, get_json
from .kueue_status import held_by_kueue, workload_blockers
from .objects import KUEUE_QUEUE_LABEL
from .pod_lifecycle import PodLifecycle

__all__ = ["KueueAdmission"]


class KueueAdmission(PodLifecycle):
    """Where the cluster's Kueue admits our pods; ``kueue_queues`` is None where this engine alone admits."""

    api_client: object
    kueue_queues: KueueQueues | None

    def _require_kueue(self) -> None:
        """With admission kueue, Kueue's Workload API must be served: without it every pod would wait at a gate
        nothing lifts (or, with no webhook, run unadmitted), and the start says so rather than waiting."""
        group, version = KUEUE_API
        try:
            get_json(self.api_client, f"/apis/{group}/{version}", self.config.api_timeout)
        except ApiException as exc:
            if exc.status == 404:
                raise RuntimeError(f"KubernetesConfig.admission is kueue, but the cluster does not serve Kueue's API "
                                   f"{group}/{version} (Kueue v0.16 or later): install Kueue, or set admission to "
                                   "hetero") from exc
            raise

    def admission_wait(self, handle: ProcessHandle) -> AdmissionWait | None:
        """Kueue's word on a replica it still holds at its scheduling gate: its Workload's blockers and its place in
        Kueue's queues. None once Kueue admitted it, and always where this engine alone admits (admission hetero)."""
        pod = self.pod(handle.pod) if self.kueue_queues is not None and handle.pod else None
        if pod is None or not held_by_kueue(pod):
            return None
        meta = pod.get("metadata") or {}
        queue, uid = (meta.get("labels") or {}).get(KUEUE_QUEUE_LABEL, "?"), meta.get("uid", "")
        place = self.kueue_queues.position_of(meta.get("namespace", ""), queue, uid)
        return AdmissionWait("kueue", tuple(workload_blockers(self.reflector.kueue_workload_of(uid), queue)),
                             position=place.local_queue if place else None,
                             cluster_queue_position=place.cluster_queue if place else None)
