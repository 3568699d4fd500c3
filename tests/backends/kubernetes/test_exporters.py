"""Device exporters' Prometheus text, as recorded from real exporters (tests/data/exporters/SOURCES.md), read as
per-pod device use; and the scraper's passes over their endpoints, with endpoints that fail."""

from __future__ import annotations

import logging
import re
import threading
import time
import urllib.error
from pathlib import Path

import pytest

from jupyter_hetero.backends.kubernetes.exporters import DeviceReading, by_pod, parse
from jupyter_hetero.backends.kubernetes.telemetry import Exporter, ExporterScraper, NodeTarget, exporters_from_config

DATA = Path(__file__).parents[2] / "data" / "exporters"


def recorded(kind: str, name: str) -> str:
    return (DATA / kind / name).read_text(encoding="utf-8")


def pods_of(kind: str, text: str) -> dict[str, dict[str, tuple[float | None, float | None]]]:
    return {key: {device: (r.util_pct, r.memory_mib) for device, r in devices.items()}
            for key, devices in by_pod(parse(kind, text)).items()}


@pytest.mark.parametrize(("kind", "name", "expected"), [
    pytest.param("dcgm", "pr-432-gke-a100-mps.txt", {
        "default/gpu-burn-deployment-1-85dc8ff699-clvh5": {"GPU-3bc239e1-4cc8-97e4-e817-5a36dfd2885e": (100, 15866)},
        "vllm-inference/vllm-medgemma-4b-it-d599b4c99-f95nk": {
            "GPU-3bc239e1-4cc8-97e4-e817-5a36dfd2885e": (100, 15866)}},
        id="dcgm: one GPU shared by two pods (MPS) reads for each"),
    # Through Prometheus a device no pod holds keeps the scrape target's labels: the exporter's own pod, never ours.
    pytest.param("dcgm", "federated-exported-pod.txt", {
        "team-a/resnet-train-0": {"GPU-2a1f0c3e-77b4-4e0e-9f6a-0d5c3c1b8e21": (87, 21034)},
        "gpu-operator/nvidia-dcgm-exporter-7xk2p": {"GPU-16355474-d5ef-9c9f-3367-6ff0eaa0e4a7": (0, 0)}},
        id="dcgm through /federate: exported_pod is the workload, pod the exporter"),
    pytest.param("dcgm", "issue-58-titan-v-no-pods.txt", {}, id="dcgm: devices no pod holds are no pod's"),
    pytest.param("dcgm", "issue-272-mig-a100.txt", {
        "ai-1/d85np-t6mdg": {"GPU-931446e6-0413-2864-5b76-11227dcda4ae": (0.825, None)}},
        id="dcgm, old names and labels in lower case: the engine-active ratio as a percentage"),
    pytest.param("npu-exporter", "mindcluster-7.0-pods.txt", {
        "team-b/bert-pretrain-0": {"185011D4-20C02418-59D4ED94-14CC040A-F9102003": (92, 28544),
                                   "185011D4-21502C18-0464ED94-14CC040A-6E102003": (88, 28160)}},
        id="npu-exporter 7.0: chip families carry the pod"),
    pytest.param("npu-exporter", "v5-container-npu.txt", {
        "serving/ocr-7d9f8b6c5-x2kqp": {"0": (37, 3105)}},
        id="npu-exporter 5: only container_npu_* name the pod"),
    pytest.param("npu-exporter", "v5-testdata-910a-no-pods.txt", {}, id="npu-exporter 5: eight chips, no pods"),
    pytest.param("amd-device-metrics", "kaiwo-mi300x.txt", {
        "default/high-utilization-57ls6": {"3dff74a1-0000-1000-80d3-0c4c1df1df58": (100, 163840)}},
        id="amd: the exporter's own pod without a namespace is no workload's"),
])
def test_recorded_outputs_read_as_each_pods_devices(kind, name, expected):
    assert pods_of(kind, recorded(kind, name)) == expected


def test_devices_no_pod_holds_are_read_too_with_an_empty_pod():
    readings = parse("dcgm", recorded("dcgm", "issue-58-titan-v-no-pods.txt"))
    assert [(r.key, r.device, r.util_pct, r.memory_mib) for r in readings] == [
        ("", "GPU-55274b56-9033-f166-7723-77088b0ff94d", 0, 0),
        ("", "GPU-a29d2dc7-d18a-858c-a87b-f81eb1384333", 0, 0),
        ("", "GPU-dad58a68-8239-6bb7-1f07-539b85fabfee", 0, 0)]
    [mig] = parse("dcgm", recorded("dcgm", "issue-272-mig-a100.txt"))[:1]
    assert (mig.key, mig.device, mig.util_pct) == ("", "GPU-af2c63a8-8c8b-21cc-581a-bab6bba89d08/1", 0)
    chips = parse("npu-exporter", recorded("npu-exporter", "v5-testdata-910a-no-pods.txt"))
    assert len(chips) == 8 and {(r.pod, r.util_pct, r.memory_mib) for r in chips} == {("", 0, 0)}


@pytest.mark.parametrize(("kind", "name"), [
    pytest.param("dcgm", "pr-432-gke-a100-mps.txt", id="dcgm"),
    pytest.param("npu-exporter", "mindcluster-7.0-pods.txt", id="npu-exporter"),
    pytest.param("amd-device-metrics", "kaiwo-mi300x.txt", id="amd"),
])
def test_a_body_cut_short_keeps_what_came_before_the_cut(kind, name):
    text = recorded(kind, name)
    memory_family = {"dcgm": "DCGM_FI_DEV_FB_USED", "npu-exporter": "npu_chip_info_utilization",
                     "amd-device-metrics": "gpu_used_vram"}[kind]
    cut = text[:text.index(f"\n{memory_family}{{") + 40]  # in the middle of the family's first series
    whole, partial = by_pod(parse(kind, text)), by_pod(parse(kind, cut))
    assert partial.keys() <= whole.keys()
    for key, devices in partial.items():  # nothing made up: each figure read is the whole body's figure
        for device, reading in devices.items():
            full = whole[key][device]
            assert reading.util_pct in (None, full.util_pct) and reading.memory_mib in (None, full.memory_mib)
    assert parse(kind, text[:len(text) // 3].rsplit("\n", 1)[0] + "\n{garbage") is not None
    assert parse(kind, "") == [] and parse(kind, "<html>502 Bad Gateway</html>") == []


def test_the_preferred_family_wins_and_nan_is_not_a_reading():
    text = ('npu_chip_info_utilization{id="0",namespace="a",pod_name="p"} 40\n'
            'container_npu_utilization{id="0",namespace="a",pod_name="p"} 41\n'
            'npu_chip_info_utilization{id="1",namespace="a",pod_name="p"} NaN\n')
    assert parse("npu-exporter", text) == [DeviceReading("a", "p", "0", 40.0, None)]


class Endpoints:
    """Recorded bodies or failures by URL, as the scraper's fetch; counts the reads."""

    def __init__(self, **bodies):
        self.bodies = dict(bodies)
        self.reads: list[str] = []

    def __call__(self, url: str, timeout_s: float) -> str:
        self.reads.append(url)
        body = self.bodies[url]
        if isinstance(body, BaseException):
            raise body
        return body


GPU_POD = "hetero/hetero-job-1-a1-r0-ann"
DCGM_TEXT = (f'DCGM_FI_DEV_GPU_UTIL{{UUID="GPU-a",namespace="hetero",pod="{GPU_POD.split("/")[1]}"}} 30\n'
             f'DCGM_FI_DEV_GPU_UTIL{{UUID="GPU-b",namespace="hetero",pod="{GPU_POD.split("/")[1]}"}} 50\n'
             f'DCGM_FI_DEV_FB_USED{{UUID="GPU-a",namespace="hetero",pod="{GPU_POD.split("/")[1]}"}} 1000\n')


def scraper(endpoints: Endpoints, targets: list[NodeTarget]) -> ExporterScraper:
    return ExporterScraper([Exporter("dcgm", "http://{node_ip}:9400/metrics"),
                            Exporter("npu-exporter", "http://prometheus:9090/federate")],
                           targets=lambda: targets, fetch=endpoints)


def test_per_node_endpoints_are_read_for_nodes_with_the_vendors_devices_and_figures_are_never_guessed():
    endpoints = Endpoints(**{"http://10.0.0.1:9400/metrics": DCGM_TEXT})
    scrape = scraper(endpoints, [NodeTarget("gpu-1", "10.0.0.1", frozenset({"nvidia.com/"})),
                                 NodeTarget("cpu-1", "10.0.0.9", frozenset())])
    scrape.scrape()
    assert endpoints.reads == ["http://10.0.0.1:9400/metrics"]  # no Ascend pod: the federate URL is not read
    # Two GPUs read: their mean; memory only for one of them, so none is given.
    assert scrape.usage(GPU_POD, devices=2, node="gpu-1") == {"device_util_pct": 40.0, "device_source": "exporter:dcgm"}
    assert scrape.usage(GPU_POD, devices=3, node="gpu-1") == {}  # holds a third the exporter did not report
    assert scrape.usage("hetero/other", devices=1, node="gpu-1") == {}


@pytest.mark.parametrize("failure", [
    pytest.param(urllib.error.HTTPError("u", 500, "Internal Server Error", {}, None), id="HTTP 500"),
    pytest.param(TimeoutError("timed out"), id="timed out"),
    pytest.param(urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")), id="refused"),
])
def test_an_endpoint_that_fails_leaves_its_pods_unmeasured_with_a_note_logged_once(failure, caplog):
    endpoints = Endpoints(**{"http://10.0.0.1:9400/metrics": DCGM_TEXT})
    scrape = scraper(endpoints, [NodeTarget("gpu-1", "10.0.0.1", frozenset({"nvidia.com/"}))])
    scrape.scrape()
    assert scrape.usage(GPU_POD, devices=2, node="gpu-1")["device_util_pct"] == 40.0
    endpoints.bodies["http://10.0.0.1:9400/metrics"] = failure
    with caplog.at_level(logging.INFO, logger="jupyter_hetero.backends.kubernetes.telemetry"):
        for _ in range(3):
            scrape.scrape()
            usage = scrape.usage(GPU_POD, devices=2, node="gpu-1")
            assert "device_util_pct" not in usage  # never the figures of the pass before
            assert usage["device_note"].startswith("the dcgm exporter at http://10.0.0.1:9400/metrics did not answer: ")
        assert scrape.usage(GPU_POD, devices=2, node="gpu-2") == {}  # another node's exporter is not this one
        endpoints.bodies["http://10.0.0.1:9400/metrics"] = DCGM_TEXT
        scrape.scrape()
    assert scrape.usage(GPU_POD, devices=2, node="gpu-1")["device_util_pct"] == 40.0
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 2 and "did not answer" in said[0] and "answers again" in said[1], said


def test_a_slow_endpoint_is_given_up_on_within_the_timeout():
    release = threading.Event()

    def slow(url: str, timeout_s: float) -> str:
        release.wait(10)
        return DCGM_TEXT

    scrape = ExporterScraper([Exporter("dcgm", "http://exporter:9400/metrics")], timeout_s=0.2, fetch=slow,
                             targets=lambda: [NodeTarget("gpu-1", "10.0.0.1", frozenset({"nvidia.com/"}))])
    started = time.monotonic()
    scrape.scrape()
    assert time.monotonic() - started < 3
    assert scrape.usage(GPU_POD, devices=2, node="gpu-1") == {
        "device_note": "the dcgm exporter at http://exporter:9400/metrics did not answer: no answer within 0.2 s"}
    release.set()
    scrape.stop()


@pytest.mark.parametrize(("entry", "error"), [
    pytest.param({"kind": "prometheus", "url": "http://x/metrics"}, "kind must be one of", id="unknown kind"),
    pytest.param({"kind": "dcgm", "url": "x:9400"}, "url must be an http(s) URL", id="not a URL"),
    pytest.param({"kind": "dcgm", "url": "http://x/", "port": 1}, "unknown keys ['port']", id="unknown key"),
])
def test_a_bad_exporter_setting_is_named(entry, error):
    with pytest.raises(ValueError, match="exporter 1: " + re.escape(error)):
        exporters_from_config([entry])
