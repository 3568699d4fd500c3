"""The Kubernetes backend under a failing API server: refused and unanswered pod creations, a compacted history
(410) and dropped watches while work runs. Each is handled by policy and said in the workload's events; no pod is
left behind, and the invariants hold."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.store import Repository

from ..harness import until_async
from ..reliability.invariants import violations
from .fixtures import kube_api  # noqa: F401 - a fixture
from .test_backend import cluster, namespace, python_job  # noqa: F401 - fixtures among them


@pytest.fixture
def impatient(cluster, server_config):
    """The cluster, with a server that takes a create unanswered after 1 s as not answered."""
    server_config["KubernetesConfig"]["api_timeout"] = 1.0
    return cluster


async def test_a_failing_api_server_delays_a_launch_without_using_a_retry_and_leaks_no_pod(
        impatient, api, wait_for, hetero_config):
    cluster = impatient
    cluster.api.fail("create", "pods", 500, times=2)
    cluster.api.fail("create", "pods", 0, delay_s=2.0)  # made, but answered too late: the pod must not stay
    job = await api("workloads", "POST", python_job("print('made it')", name="late"))
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), timeout=60)
    assert done["state"] == "succeeded" and done["failures"] == 0, done  # no retry used by the platform's faults
    events = [(e["type"], e["reason"]) for e in await api(f"workloads/{job['id']}/events")]
    requeued = [reason for kind, reason in events if kind == "requeued"]
    assert len(requeued) == 3 and "the Kubernetes API failed: injected fault: create pods answers 500" in requeued[0]
    assert "did not answer" in requeued[2] and "no retry is used" in requeued[2], requeued
    assert [a["outcome"] for a in done["attempts"]] == ["unlaunched"] * 3 + ["succeeded"]
    assert cluster.api.faults_served == 3

    await until_async(no_pods(cluster), "every pod of the job to be deleted, the late one included", timeout=30)
    store = Repository(hetero_config["db_url"], clock=time.time)
    assert not violations(store, load_catalog(DEFAULT_CATALOG_PATH), acknowledged={"late": job["id"]},
                          pods=cluster.api.list("Pod"))


async def test_a_410_and_dropped_watches_while_work_runs_lose_no_exit(cluster, api, wait_for, hetero_config):
    gate = Path(cluster.kubelet.root) / "open"
    jobs = [await api("workloads", "POST", python_job(
        f"import os, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.05)\nprint('done {i}')"))
        for i in range(3)]
    for job in jobs:
        await wait_for(job["id"], lambda w: w["state"] == "running", timeout=60)
    cluster.api.compact()  # the history the watches resume from is gone: they answer 410 and re-list
    cluster.api.drop_watches()
    store = Repository(hetero_config["db_url"], clock=time.time)
    assert len(cluster.pods()) == 3
    assert not violations(store, load_catalog(DEFAULT_CATALOG_PATH), pods=cluster.api.list("Pod"))
    gate.write_text("open")
    cluster.api.drop_watches()  # and again while the pods end
    for job in jobs:
        done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), timeout=60)
        assert done["state"] == "succeeded" and done["attempt_count"] == 1, done

    await until_async(no_pods(cluster), "every ended job's pod to be deleted", timeout=30)
    assert not violations(store, load_catalog(DEFAULT_CATALOG_PATH), pods=cluster.api.list("Pod"))


def no_pods(cluster):
    async def gone() -> bool:
        return not cluster.pods()

    return gone
