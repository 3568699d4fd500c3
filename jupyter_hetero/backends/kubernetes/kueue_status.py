"""Why Kueue holds a pod, from its Kueue Workload (kueue.x-k8s.io/v1beta2), as the engine's blockers.

    workload_blockers(workload)   # [Blocker("kueue-pending", None, {"queue": "batch", "message": "..."}, 0.3)]
    workload_of(pod, workloads)   # the Workload whose ownerReferences name the pod (Kueue's pod integration)

Pure functions over the raw JSON the API server sends. With ``c.KubernetesConfig.admission = "kueue"`` the
cluster's Kueue admits our pods; these say, in the blocker format of :mod:`jupyter_hetero.engine.blockers`
(worded in :mod:`jupyter_hetero.engine.explain`, kinds ``kueue-*``), what its Workload's conditions say: quota not
reserved (with Kueue's own reason and message), admission checks outstanding, an eviction, a requeue backoff.
Kueue's messages are its own English; only the sentence around them is translated.
"""

from __future__ import annotations

from ...engine.decisions import Blocker

__all__ = ["workload_blockers", "workload_of"]

# Closer to starting first: an admission check or a backoff passes on its own; quota comes as work ends;
# an inadmissible Workload (no such LocalQueue, its ClusterQueue inactive) needs an administrator.
_CLOSENESS = {"kueue-checks": 0.8, "kueue-requeue": 0.5, "kueue-no-workload": 0.5, "kueue-evicted": 0.4,
              "kueue-pending": 0.3, "kueue-inadmissible": 0.0}


def workload_of(pod: dict, workloads: list[dict]) -> dict | None:
    """The Workload of a plain pod: Kueue's pod integration makes one per pod, owned by it."""
    uid = (pod.get("metadata") or {}).get("uid")
    return next((w for w in workloads
                 if any(o.get("uid") == uid for o in (w.get("metadata") or {}).get("ownerReferences") or ())), None)


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
