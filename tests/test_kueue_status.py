"""Kueue Workload status (v1beta2, as Kueue v0.17 writes it) as blockers: each condition Kueue sets, by value.

The real controller's over-quota and admitted Workloads are checked in tests/kube/test_kueue.py.
"""

from __future__ import annotations

from jupyter_hetero.backends.kubernetes.kueue_status import workload_blockers, workload_of
from jupyter_hetero.engine.explain import render


def _workload(*conditions, **status) -> dict:
    return {"metadata": {"name": "pod-x-1a2b3", "ownerReferences": [{"kind": "Pod", "name": "x", "uid": "u1"}]},
            "spec": {"queueName": "training"},
            "status": {"conditions": [{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conditions],
                       **status}}


def test_the_workload_of_a_pod_is_the_one_its_owner_reference_names():
    mine, other = _workload(), {"metadata": {"ownerReferences": [{"uid": "u2"}]}}
    assert workload_of({"metadata": {"uid": "u1"}}, [other, mine]) is mine
    assert workload_of({"metadata": {"uid": "u3"}}, [other, mine]) is None


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
