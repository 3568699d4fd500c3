"""Kueue Workload status (v1beta2, as Kueue v0.17 writes it) as blockers: each condition Kueue sets, by value.

The real controller's over-quota and admitted Workloads are checked in tests/kube/test_kueue.py.
"""

from __future__ import annotations

from jupyter_hetero.backends.kubernetes.kueue_status import (
    Position,
    held_by_kueue,
    owner_pod_uid,
    positions,
    workload_blockers,
)
from jupyter_hetero.engine.explain import render


def _workload(*conditions, **status) -> dict:
    return {"metadata": {"name": "pod-x-1a2b3", "ownerReferences": [{"kind": "Pod", "name": "x", "uid": "u1"}]},
            "spec": {"queueName": "training"},
            "status": {"conditions": [{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conditions],
                       **status}}


def test_a_workload_stands_for_the_pod_its_owner_reference_names():
    assert owner_pod_uid(_workload()) == "u1"
    job = {"metadata": {"ownerReferences": [{"kind": "Job", "name": "train", "uid": "u2"}]}}
    assert owner_pod_uid(job) == "" and owner_pod_uid({"metadata": {}}) == ""


def test_a_pod_is_held_while_kueues_admission_gate_is_on_it():
    assert held_by_kueue({"spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}})
    assert not held_by_kueue({"spec": {"schedulingGates": [{"name": "example.com/other"}]}})
    assert not held_by_kueue({"spec": {}}) and not held_by_kueue({})


def test_places_come_from_the_visibility_apis_pending_list_by_the_pods_uid_counted_from_one():
    # A PendingWorkloadsSummary as Kueue v0.17's visibility API answers it for LocalQueue training.
    summary = {"kind": "PendingWorkloadsSummary", "apiVersion": "visibility.kueue.x-k8s.io/v1beta2", "items": [
        {"metadata": {"name": "pod-a-1", "ownerReferences": [{"kind": "Pod", "name": "a", "uid": "ua"}]},
         "priority": 100, "localQueueName": "training", "positionInClusterQueue": 3, "positionInLocalQueue": 0},
        {"metadata": {"name": "pod-b-1", "ownerReferences": [{"kind": "Pod", "name": "b", "uid": "ub"}]},
         "priority": 100, "localQueueName": "training", "positionInClusterQueue": 5, "positionInLocalQueue": 1},
        {"metadata": {"name": "job-c-1", "ownerReferences": [{"kind": "Job", "name": "c", "uid": "uc"}]},
         "priority": 0, "localQueueName": "training", "positionInClusterQueue": 6, "positionInLocalQueue": 2}]}
    assert positions(summary) == {"ua": Position(1, 4), "ub": Position(2, 6)}
    assert positions({"items": None}) == {} and positions({}) == {}


def test_no_workload_yet_and_an_admitted_one():
    [blocker] = workload_blockers(None, "training")
    assert render(blocker) == "Kueue: waiting for Kueue to create the pod's Workload (LocalQueue training)"
    assert workload_blockers(_workload(("QuotaReserved", "True", "QuotaReserved", ""),
                                       ("Admitted", "True", "Admitted", ""))) == []


def test_inadmissible_is_farther_than_pending():
    [gone] = workload_blockers(_workload(("QuotaReserved", "False", "Inadmissible",
                                          "LocalQueue training doesn't exist")))
    [pending] = workload_blockers(_workload(("QuotaReserved", "False", "Pending", "insufficient quota for cpu")))
    assert (gone.kind, pending.kind) == ("kueue-inadmissible", "kueue-pending") and gone.closeness < pending.closeness
    assert render(gone, "zh") == "Kueue：LocalQueue training 无法接纳该工作负载（Inadmissible）：LocalQueue training doesn't exist"


def test_an_eviction_with_its_requeue_backoff():
    blockers = workload_blockers(_workload(("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout"),
                                           ("QuotaReserved", "False", "Pending", "evicted"),
                                           requeueState={"count": 2, "requeueAt": "2026-05-01T10:00:00Z"}))
    assert [b.kind for b in blockers] == ["kueue-evicted", "kueue-pending", "kueue-requeue"]
    assert render(blockers[2]) == "Kueue: requeued after 2 attempt(s); tried again at 2026-05-01T10:00:00Z"


def test_quota_reserved_waits_for_its_admission_checks():
    [blocker] = workload_blockers(_workload(("QuotaReserved", "True", "QuotaReserved", ""),
                                            ("Admitted", "False", "NoChecks", ""),
                                            admission={"clusterQueue": "hetero-default"},
                                            admissionChecks=[{"name": "prov", "state": "Pending"}]))
    assert render(blocker) == ("Kueue: quota reserved in ClusterQueue hetero-default, waiting for admission checks: "
                               "prov=Pending")
