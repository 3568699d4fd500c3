"""Why Kueue holds a pod, from its Kueue Workload (kueue.x-k8s.io/v1beta2), as the engine's blockers.

    workload_blockers(workload)   # [Blocker("kueue-pending", None, {"queue": "batch", "message": "..."}, 0.3)]
    owner_pod_uid(workload)       # the uid of the pod a Workload stands for (Kueue's pod integration)
    positions(summary)            # {pod uid: Position(local_queue=1, cluster_queue=3)} from the visibility API
    held_by_kueue(pod)            # whether Kueue's scheduling gate still holds the pod

Pure functions over the raw JSON the API server sends. With ``c.KubernetesConfig.admission = "kueue"`` the
cluster's Kueue admits our pods; these say, in the blocker format of :mod:`jupyter_hetero.engine.blockers`
(worded in :mod:`jupyter_hetero.engine.explain`, kinds ``kueue-*``), what its Workload's conditions say: quota not
reserved (with Kueue's own reason and message), admission checks outstanding, an eviction, a requeue backoff.
Kueue's messages are its own English; only the sentence around them is translated. Kueue's place for a pod comes
from its visibility API (``visibility.kueue.x-k8s.io``: a LocalQueue's ``pendingworkloads``), which lists the
pending Workloads in the order its scheduler takes them; Kueue makes no estimate of when one starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...engine.decisions import Blocker

__all__ = ["KUEUE_GATE", "Position", "held_by_kueue", "owner_pod_uid", "positions", "workload_blockers"]

# The scheduling gate Kueue's pod webhook puts on a pod it manages, lifted when Kueue admits the pod's Workload.
KUEUE_GATE = "kueue.x-k8s.io/admission"

# Closer to starting first: an admission check or a backoff passes on its own; quota comes as work ends;
# an inadmissible Workload (no such LocalQueue, its ClusterQueue inactive) needs an administrator.
_CLOSENESS = {"kueue-checks": 0.8, "kueue-requeue": 0.5, "kueue-no-workload": 0.5, "kueue-evicted": 0.4,
              "kueue-pending": 0.3, "kueue-inadmissible": 0.0}


@dataclass(frozen=True)
class Position:
    """A pending Workload's place in Kueue's order, 1-based: in its LocalQueue, and in the ClusterQueue behind it
    (which orders the LocalQueues of every namespace it serves together)."""

    local_queue: int
    cluster_queue: int


def held_by_kueue(pod: dict) -> bool:
    """Whether the pod waits for Kueue: its admission gate is still on it."""
    return any(gate.get("name") == KUEUE_GATE for gate in (pod.get("spec") or {}).get("schedulingGates") or ())


def positions(summary: dict) -> dict[str, Position]:
    """The places of the pending Workloads in a ``PendingWorkloadsSummary``, by the uid of the pod each belongs to
    (the owner Kueue's pod integration gives it); Kueue counts from 0."""
    return {uid: Position(int(item.get("positionInLocalQueue", 0)) + 1, int(item.get("positionInClusterQueue", 0)) + 1)
            for item in summary.get("items") or () if (uid := owner_pod_uid(item))}


def owner_pod_uid(workload: dict) -> str:
    """The uid of the pod a Workload stands for: Kueue's pod integration makes one Workload per plain pod, owned by
    it ("" for a Workload of a Job or another kind)."""
    return next((owner.get("uid") or "" for owner in (workload.get("metadata") or {}).get("ownerReferences") or ()
                 if owner.get("kind") == "Pod"), "")


def workload_blockers(workload: dict | None, queue: str = "?") -> list[Blocker]:
    """Why Kueue has not admitted the Workload (``None``: Kueue has not made it yet); [] once it is admitted.
    ``queue``: the pod's LocalQueue, said when there is no Workload to read it from."""
    if workload is None:
        return [_blocker("kueue-no-workload", queue=queue)]
    spec, status = workload.get("spec") or {}, workload.get("status") or {}
    queue = spec.get("queueName") or queue
    conditions = {c.get("type"): c for c in status.get("conditions") or ()}
    if _true(conditions.get("Admitted")):
        return []
    blockers = []
    evicted = conditions.get("Evicted")
    if _true(evicted):
        blockers.append(_blocker("kueue-evicted", reason=evicted.get("reason") or "?",
                                 message=evicted.get("message") or ""))
    reserved = conditions.get("QuotaReserved")
    if _true(reserved):
        checks = [f"{c.get('name')}={c.get('state')}" for c in status.get("admissionChecks") or ()
                  if c.get("state") != "Ready"]
        blockers.append(_blocker("kueue-checks", cluster_queue=(status.get("admission") or {}).get("clusterQueue", "?"),
                                 message=", ".join(checks) or (conditions.get("Admitted") or {}).get("message", "")))
    elif reserved is not None:
        # Kueue's reasons: "Pending" (no flavor fits now: quota, borrowing) or "Inadmissible" (the LocalQueue or
        # its ClusterQueue is missing or stopped; nothing that waiting lifts).
        kind = "kueue-inadmissible" if reserved.get("reason") == "Inadmissible" else "kueue-pending"
        blockers.append(_blocker(kind, queue=queue, reason=reserved.get("reason") or "?",
                                 message=reserved.get("message") or ""))
    requeue = status.get("requeueState") or {}
    if requeue.get("requeueAt"):
        blockers.append(_blocker("kueue-requeue", count=requeue.get("count", 0), requeue_at=requeue["requeueAt"]))
    if not blockers:
        blockers.append(_blocker("kueue-no-workload" if not conditions else "kueue-pending", queue=queue,
                                 reason="?", message="Kueue has not decided yet"))
    return blockers


def _blocker(kind: str, **params) -> Blocker:
    return Blocker(kind, None, params, _CLOSENESS[kind])


def _true(condition: dict | None) -> bool:
    return bool(condition) and condition.get("status") == "True"
