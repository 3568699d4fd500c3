"""Device use of pods from the cluster's exporter: a real jupyter-server on the Kubernetes backend (the fake API
server and its local kubelet) reads a DCGM exporter on 127.0.0.1 serving recorded DCGM output whose pod labels
are those of the GPU pods the fake cluster runs. Jobs get measured usage records, an idle GPU kernel is culled by
the idle rules, and an exporter that fails leaves the work unmeasured, with a note."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ..handlers.test_kernels import kernelspecs, start_kernel  # noqa: F401 - a fixture among them
from ..harness import until_async
from .exporter import FakeDcgmExporter
from .fixtures import kube_api  # noqa: F401 - a fixture
from .test_backend import GPU_NODE, cluster, first_attempt, namespace  # noqa: F401 - fixtures among them

GPU_JOB = {"kind": "job", "template": "training", "parameters": {"devices": 2},
           "command": ["python", "-c", "import time; time.sleep(4)"]}


@pytest.fixture
def exporter(kube_api):  # noqa: F811 - the imported fixture
    """The fake DCGM exporter on 127.0.0.1."""
    served = FakeDcgmExporter(kube_api).start()
    yield served
    served.stop()


@pytest.fixture
def telemetry_cluster(exporter, cluster, server_config):  # noqa: F811
    """The fake cluster, its server reading the exporter as a per-node endpoint every 0.2 s (0.5 s at most)."""
    server_config["KubernetesConfig"].update(exporters=[{"kind": "dcgm", "url": exporter.url_template}],
                                             exporter_interval=0.2, exporter_timeout=0.5)
    return cluster


async def test_a_gpu_job_in_a_pod_has_its_measured_use_in_its_usage_record(exporter, telemetry_cluster, api,
                                                                          wait_for):
    job = await api("workloads", "POST", GPU_JOB)
    attempt = await first_attempt(wait_for, job["id"])
    assert attempt["outcome"] == "succeeded" and attempt["node"] == GPU_NODE, attempt
    # Both of its GPUs read 60 % and 15866 MiB in every pass: the mean, and the sum as the peak.
    assert attempt["metrics"]["device_util_pct_mean"] == 60.0, attempt["metrics"]
    assert attempt["metrics"]["device_memory_peak_mib"] == 2 * 15866.0
    assert any(path == f"/{GPU_NODE}/metrics" for path in exporter.requests)
    usage = await api("usage", since="1d", by="tenant")
    [row] = usage["rows"]
    assert row["unmeasured_device_hours"] == 0 and row["device_hours"] > 0
    assert row["idle_device_hours"] == pytest.approx(row["device_hours"] * 0.4, rel=1e-3)
    events = [e["type"] for e in await api(f"workloads/{job['id']}/events")]
    assert "unmeasured" not in events
    # The metrics endpoint and the acceptance report read the same attempt, as they do for local work.
    marks = {sample.labels["flavor"]: sample.value for family in text_string_to_metric_families(await api.text("metrics"))
             if family.name == "hetero_device_memory_watermark_bytes" for sample in family.samples}
    assert marks == {"a100-80g": 2 * 15866 * 1024 * 1024}
    report = await api("report", since="1h")
    training = next(t for t in report["task_types"] if t["task_type"] == "training")
    assert (training["device_util_pct_mean"], training["device_memory_peak_mib"]) == (60.0, 2 * 15866.0)


@pytest.mark.parametrize("failure", ["500", "slow"])
async def test_an_exporter_that_fails_leaves_the_work_unmeasured_with_a_note(failure, exporter, telemetry_cluster,
                                                                             api, wait_for):
    exporter.failure = failure
    exporter.delay_s = 2.0  # past the 0.5 s timeout
    job = await api("workloads", "POST", GPU_JOB)
    attempt = await first_attempt(wait_for, job["id"])
    assert attempt["outcome"] == "succeeded", attempt
    why = "HTTP 500" if failure == "500" else "no answer within 0.5 s"
    assert "device_util_pct_mean" not in attempt["metrics"]  # never guessed
    assert attempt["metrics"]["device_note"].startswith("the dcgm exporter at http://127.0.0.1:")
    assert why in attempt["metrics"]["device_note"], attempt["metrics"]
    events = [e for e in await api(f"workloads/{job['id']}/events") if e["type"] == "unmeasured"]
    assert len(events) == 1 and why in events[0]["reason"], events  # once, however many passes failed
    [row] = (await api("usage", since="1d", by="tenant"))["rows"]
    assert row["idle_device_hours"] == 0 and row["unmeasured_device_hours"] == pytest.approx(row["device_hours"])


@pytest.fixture
def quick_device_culling(hetero_config):
    hetero_config.update(cull_device_idle_pct=5.0, cull_device_idle_after=2.0)


async def test_an_idle_gpu_kernel_pod_is_culled_and_a_busy_one_is_not(quick_device_culling, exporter,
                                                                      telemetry_cluster, kernelspecs, api,  # noqa: F811
                                                                      jp_fetch, jp_serverapp):
    kernelspecs("hetero-gpu", parameters={"devices": 1, "flavor": "a100-80g"})
    busy_pods: set[str] = set()
    exporter.utilisation = lambda pod: 70.0 if pod["metadata"]["name"] in busy_pods else 0.0
    busy = await start_kernel(jp_fetch, "hetero-gpu")
    workloads = {w["spec"]["kernel_id"]: w for w in await api("workloads", kind="kernel")}
    busy_pods.add(telemetry_cluster.pod_of(workloads[busy]["id"])["metadata"]["name"])
    idle = await start_kernel(jp_fetch, "hetero-gpu")
    workloads = {w["spec"]["kernel_id"]: w for w in await api("workloads", kind="kernel")}
    assert telemetry_cluster.pod_of(workloads[idle]["id"])["spec"]["nodeName"] == GPU_NODE

    await until_async(lambda: idle not in jp_serverapp.kernel_manager, "the idle GPU kernel to be culled",
                      timeout=60)
    culled = await api(f"workloads/{workloads[idle]['id']}")
    assert culled["reason"].startswith("culled: device utilisation below 5% for 2 s"), culled
    await until_async(lambda: telemetry_cluster.pod_of(workloads[idle]["id"]) is None, "its pod to go")
    assert busy in jp_serverapp.kernel_manager  # measured at 70 % all along
    assert (await api(f"workloads/{workloads[busy]['id']}"))["state"] == "running"
    usage = await api(f"kernels/{busy}/usage")
    assert usage["device_utilisation"] == {"device_util_pct": 70.0, "device_memory_used_mib": 15866.0}, usage
    assert usage["device_note"] is None
    await jp_fetch("api", "kernels", busy, method="DELETE")
