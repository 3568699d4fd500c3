"""The acceptance report's checkpoints, pure: each item met, failed or not measured by its own evidence only.

The report's whole run through a real server is tests/handlers/test_report.py; here each rule, one case each."""

from __future__ import annotations

import re

import pytest

from jupyter_hetero.platform.governance.checkpoints import judge_checkpoints
from jupyter_hetero.store.tables import AttemptRow, WorkloadRow


def workload(wid: int, template: str = "training", state: str = "succeeded", attempts: int = 1,
             checkpoint_at: float | None = None) -> WorkloadRow:
    return WorkloadRow(id=wid, template=template, state=state, attempts=attempts, checkpoint_at=checkpoint_at,
                       created_at=0.0, admitted_at=1.5)


def attempt(wid: int, number: int = 1, outcome: str = "succeeded", replicas: int = 1, archive: str | None = None,
            **metrics) -> AttemptRow:
    return AttemptRow(workload_id=wid, number=number, outcome=outcome, archive_path=archive, metrics=metrics,
                      placement={"flavor": "a100-80g", "slots": [{"node": f"n{i}"} for i in range(replicas)]})


def judged(by_task, attempts=(), measured=None, releases=(), costs=None) -> dict[tuple[str, str], dict]:
    per_workload: dict[int, list[AttemptRow]] = {}
    for one in attempts:
        per_workload.setdefault(one.workload_id, []).append(one)
    found = judge_checkpoints(by_task, per_workload, list(releases), costs or {}, measured or {})
    return {(check["task_type"], item["name"]): item for check in found for item in check["items"]}


CASES = [
    pytest.param(
        {"training": [workload(1)]}, [attempt(1, peak_rss_mib=900.0, device_memory_peak_mib=4000.0)], {},
        ("training", "device-memory"), "not-measured", "no device memory was measured",
        id="the host's RSS and a whole-device figure do not stand in for a per-process device memory watermark"),
    pytest.param(
        {"training": [workload(1)]}, [attempt(1)], {1: {"device_memory_peak": (2048.0, "nvidia-smi")}},
        ("training", "device-memory"), "met", "device memory peak 2048 MiB (nvidia-smi) in workloads 1",
        id="a per-process device memory watermark meets device-memory, naming its figure and source"),
    pytest.param(
        {"training": [workload(1)]}, [attempt(1)], {},
        ("training", "communication"), "not-measured", "no collective figure reported",
        id="communication is not measured when no job reports a collective figure"),
    pytest.param(
        {"training": [workload(1)]}, [attempt(1)], {1: {"collective_bandwidth_gbps": (92.5, "reported")}},
        ("training", "communication"), "met", "collective_bandwidth_gbps 92.5 (reported) in workload 1",
        id="a reported collective bandwidth meets communication"),
    pytest.param(
        {"training": [workload(1)]}, [attempt(1, replicas=1)], {1: {"net_rx_bytes": (5e9, "procfs")}},
        ("training", "communication"), "not-measured", "no collective figure",
        id="one replica's network bytes are not communication between replicas"),
    pytest.param(
        {"training": [workload(1)]}, [attempt(1, replicas=2)],
        {1: {"net_rx_bytes": (5e9, "procfs"), "net_tx_bytes": (1e9, "procfs")}},
        ("training", "communication"), "met", "6 GB over the network (procfs) in workload 1",
        id="a multi-replica job's measured network bytes meet communication"),
    pytest.param(
        {"data-preprocessing": [workload(4, "data-preprocessing")]}, [attempt(4, archive="/nonexistent")], {},
        ("data-preprocessing", "io"), "not-measured", "no bytes read or written were measured",
        id="an archive does not stand in for measured IO"),
    pytest.param(
        {"data-preprocessing": [workload(4, "data-preprocessing"), workload(7, "data-preprocessing")]},
        [attempt(4), attempt(7)],
        {4: {"io_read_bytes": (1.0e9, "procfs"), "io_write_bytes": (3.0e8, "procfs")},
         7: {"io_read_bytes": (2.0e8, "procfs"), "io_write_bytes": (1.0e7, "procfs")}},
        ("data-preprocessing", "io"), "met", "read 1.2 GB, wrote 310 MB (procfs) in workloads 4, 7",
        id="measured bytes meet io, summed and named"),
    pytest.param(
        {"data-preprocessing": [workload(4, "data-preprocessing", attempts=2)]},
        [attempt(4, 1, "failed"), attempt(4, 2)], {},
        ("data-preprocessing", "retries"), "met", "failed and retried: workloads 4",
        id="a failure followed by another attempt meets retries"),
    pytest.param(
        {"data-preprocessing": [workload(4, "data-preprocessing", attempts=2),
                                workload(5, "data-preprocessing", state="failed")]},
        [attempt(4, 1, "failed"), attempt(4, 2), attempt(5, 1, "failed")], {},
        ("data-preprocessing", "retries"), "failed", "failed without a retry: workloads 5",
        id="a failure that ended its workload without a retry fails retries"),
    pytest.param(
        {"data-preprocessing": [workload(4, "data-preprocessing")]}, [attempt(4)], {},
        ("data-preprocessing", "retries"), "not-measured", "failed and retried: workloads none",
        id="nothing failed: retries are not measured"),
    pytest.param(
        {"data-preprocessing": [workload(4, "data-preprocessing", state="failed")]}, [attempt(4, 1, "failed")], {},
        ("data-preprocessing", "template"), "failed", "succeeded: workloads none",
        id="a template's job that ran and never succeeded fails template"),
    pytest.param(
        {}, [], {}, ("batch-inference", "queueing"), "not-measured", "no wait recorded for 0 workloads",
        id="no batch inference ran: its items are not measured"),
]


@pytest.mark.parametrize(("by_task", "attempts", "measured", "key", "status", "evidence"), CASES)
def test_each_item_is_judged_by_its_own_evidence(by_task, attempts, measured, key, status, evidence):
    item = judged(by_task, attempts, measured)[key]
    assert item["status"] == status, item
    assert evidence in item["evidence"], item
    assert (item["needs"] is not None) == (status == "not-measured"), item


def test_a_rollout_judged_and_rolled_back_names_its_figures():
    releases = [{"service": "s", "revision": 2, "outcome": "rolled-back",
                 "canary": {"latency_ms": {"p95": 41.0}, "requests_per_s": 12.5}}]
    items = judged({}, releases=releases)
    assert items["online-inference", "latency"]["evidence"] == "s r2 canary p95 41 ms"
    assert items["online-inference", "throughput"]["evidence"] == "s r2 canary 12.5 requests/s"
    assert items["online-inference", "rollback"] == {"name": "rollback", "status": "met",
                                                     "evidence": "s r2 rolled-back", "needs": None}


def test_every_item_not_measured_says_what_would_measure_it():
    items = judged({})
    assert {key: item["status"] for key, item in items.items()} == {key: "not-measured" for key in items}
    assert "nvidia-smi, amd-smi, npu-smi, xpu-smi" in items["training", "device-memory"]["needs"]
    assert "collective_bandwidth_gbps" in items["training", "communication"]["needs"]


_CJK = re.compile(r"[\u4e00-\u9fff]")


def _every_branch() -> list[tuple[str, dict, dict]]:
    """Each item's evidence once met (or failed) and once not measured, in English and in Chinese."""
    rows = {"data-preprocessing": [workload(4, "data-preprocessing", attempts=2),
                                   workload(5, "data-preprocessing", state="failed")],
            "training": [workload(1, checkpoint_at=5.0), workload(2)],
            "batch-inference": [workload(9, "batch-inference")]}
    attempts = [attempt(4, 1, "failed"), attempt(4, 2), attempt(5, 1, "failed"), attempt(1), attempt(2, replicas=2),
                attempt(9)]
    measured = {4: {"io_read_bytes": (1.0e9, "procfs")}, 1: {"device_memory_peak": (2048.0, "nvidia-smi"),
                                                            "collective_bandwidth_gbps": (80.0, "reported")},
                2: {"net_rx_bytes": (5.0e9, "procfs")}}
    releases = [{"service": "s", "revision": 2, "outcome": "rolled-back",
                 "canary": {"latency_ms": {"p95": 41.0}, "requests_per_s": 12.5}},
                {"service": "s", "revision": 1, "outcome": "rolled-back-to"}]
    per_workload: dict[int, list[AttemptRow]] = {}
    for one in attempts:
        per_workload.setdefault(one.workload_id, []).append(one)
    said = []
    for case in ((rows, per_workload, releases, {"batch-inference": 2.5}, measured),
                 ({}, {}, [], {}, {}),
                 ({"training": [workload(1)]}, {1: [attempt(1, device_note="no nvidia-smi here")]}, [], {}, {})):
        english, chinese = (judge_checkpoints(*case, language=language) for language in ("en", "zh"))
        said += [(f"{check['task_type']}/{item['name']}", item, zh_item)
                 for check, zh_check in zip(english, chinese)
                 for item, zh_item in zip(check["items"], zh_check["items"])]
    return said


def test_every_evidence_sentence_is_said_in_chinese_in_a_chinese_report():
    said = _every_branch()
    assert {item["status"] for _key, item, _zh in said} == {"met", "failed", "not-measured"}
    english_left = [(key, zh["evidence"]) for key, item, zh in said
                    if zh["evidence"] == item["evidence"] or not _CJK.search(zh["evidence"])]
    assert english_left == []
    assert all(_CJK.search(zh["needs"]) for _key, item, zh in said if item["needs"])
    # The figures stay as they are, whatever the language.
    zh_of: dict[str, str] = {}
    for key, _item, zh in said:
        zh_of.setdefault(key, zh["evidence"])  # the first case's: everything met
    assert "2048" in zh_of["training/device-memory"] and "1 GB" in zh_of["data-preprocessing/io"]
