"""My work's Metrics and Evidence views in a real JupyterLab, for a real job that reported its own loss.

The job runs on the session's lab server (demo emulated nodes) and calls ``jupyter_hetero.report(loss=...)`` three
times; the panel then draws the loss as a sparkline with its latest value, says why each other declared metric has
no figures, and shows the job's evidence chain section by section, its audit chain verified intact.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from .test_panel_sections import API, open_panel, workload_row

pytestmark = pytest.mark.ui

# Three losses, one second apart (a report in the same second as another replaces it), then the job ends.
REPORTING_JOB = """
import time
from jupyter_hetero import report
start = time.time() - 10
for step, loss in enumerate((0.9, 0.5, 0.25)):
    report(loss=loss, at=start + step)
print("reported", flush=True)
"""


def _wait_for_end(lab_server, workload_id: int, timeout: float = 90.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        workload = lab_server.api(f"{API}/workloads/{workload_id}")
        if workload["state"] in ("succeeded", "failed", "cancelled", "lost"):
            return workload
        assert time.monotonic() < deadline, f"workload {workload_id} never ended: {workload}"
        time.sleep(0.5)


def test_my_work_shows_a_jobs_reported_loss_and_its_evidence_chain(lab_server, lab_page, ui_output):
    job = lab_server.api(f"{API}/workloads", "POST",
                         {"kind": "job", "template": "training", "name": "reports-loss", "code": REPORTING_JOB})
    ended = _wait_for_end(lab_server, job["id"])
    assert ended["state"] == "succeeded", lab_server.api(f"{API}/workloads/{job['id']}/logs")

    page = lab_page
    panel = open_panel(page, "work")
    row = workload_row(panel, job["id"])
    expect(row).to_be_visible(timeout=30_000)

    row.locator(".jp-hetero-action-metrics").click()
    metrics = row.locator(".jp-hetero-metrics")
    expect(metrics).to_be_visible(timeout=30_000)
    loss = metrics.locator(".jp-hetero-metric[data-metric='loss']")
    expect(loss.locator(".jp-hetero-metric-latest")).to_have_text("0.25")
    expect(loss.locator(".jp-hetero-metric-source")).to_have_text("reported")
    expect(loss.locator("svg.jp-hetero-sparkline")).to_have_attribute("aria-label", "loss over time, 3 points")
    expect(loss.locator("svg.jp-hetero-sparkline path")).to_have_count(1)
    # The template's other declared names have no figures here, each saying why.
    missing = metrics.locator(".jp-hetero-metric-missing")
    expect(missing.locator("[data-metric='throughput_samples_per_s']")).to_contain_text(
        "not measured: throughput_samples_per_s: reported by the workload through jupyter_hetero.report(); none yet")
    expect(missing.locator("[data-metric='device_util']")).to_contain_text("emulated node's devices are never measured")
    expect(missing.locator("[data-metric='loss']")).to_have_count(0)
    # A note said of two names at once still names each one in its line.
    expect(missing.locator("[data-metric='net_rx_bytes']")).to_contain_text(
        "not measured: net_rx_bytes: network bytes are not measured on this machine")
    expect(missing.locator("[data-metric='net_tx_bytes']")).to_contain_text("not measured: net_tx_bytes: ")
    page.screenshot(path=str(ui_output / "work-metrics.png"))

    row.locator(".jp-hetero-action-evidence").click()
    evidence = row.locator(".jp-hetero-evidence")
    expect(evidence).to_be_visible(timeout=30_000)
    sections = evidence.locator(".jp-hetero-evidence-section")
    expect(sections).to_have_count(9)
    assert [sections.nth(i).get_attribute("data-section") for i in range(9)] == [
        "request", "attempts", "wait", "utilisation", "alerts", "preemptions", "release", "events", "audit"]
    expect(evidence.locator("[data-section='release']")).to_have_attribute("open", "")  # where a reader starts
    attempts = evidence.locator("[data-section='attempts']")
    attempts.locator("summary").click()
    expect(attempts.locator(".jp-hetero-evidence-attempt")).to_contain_text("Attempt 1 on")
    utilisation = evidence.locator("[data-section='utilisation']")
    utilisation.locator("summary").click()
    # Said as the Metrics view says it: the last loss is 0.25, not 0.3.
    expect(utilisation.locator(".jp-hetero-evidence-series", has_text="loss")).to_contain_text(
        "loss: 3 samples, last 0.25, peak 0.9")
    audit = evidence.locator("[data-section='audit']")
    audit.locator("summary").click()
    expect(audit.locator(".jp-hetero-evidence-intact")).to_contain_text("Audit chain intact")
    expect(audit.locator(".jp-hetero-evidence-broken")).to_have_count(0)
    expect(evidence.locator(".jp-hetero-evidence-page")).to_have_attribute(
        "href", re.compile(rf"workloads/{job['id']}/evidence\?format=html"))
    page.screenshot(path=str(ui_output / "work-evidence.png"))
