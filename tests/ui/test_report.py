"""The acceptance report in a real browser: the Admin tab (with its onboarding list) links a platform admin to it; it
opens in a new tab as one self-contained page (its charts inline SVG), with every section, rendered by Chromium."""

from __future__ import annotations

import sys
import time

import pytest
from playwright.sync_api import expect

from .test_panel_sections import open_panel

pytestmark = pytest.mark.ui

API = "hetero/api/v1"


def test_the_admin_tab_opens_the_acceptance_report_in_a_new_tab(lab_server, lab_page, ui_output):
    job = lab_server.api(f"{API}/workloads", "POST", {
        "kind": "job", "template": "data-preprocessing",
        "command": [sys.executable, "-c", "import os, pathlib; pathlib.Path(os.environ['HETERO_OUTPUT_DIR'], "
                                          "'rows.csv').write_text('a,b')"]})
    deadline = time.monotonic() + 60
    while lab_server.api(f"{API}/workloads/{job['id']}")["state"] != "succeeded":
        assert time.monotonic() < deadline, "the job never succeeded"
        time.sleep(0.3)
    panel = open_panel(lab_page, "admin")
    # The shipped catalog asks no onboarding: the Admin tab says nodes take work as they are seen.
    expect(panel.locator(".jp-hetero-subtitle", has_text="Onboarding")).to_be_visible()
    expect(panel.get_by_text("No onboarding yet: nodes take work as they are seen.")).to_be_visible()
    link = panel.get_by_role("link", name="Acceptance report (last 30 days)")
    with lab_page.context.expect_page() as opened:
        link.click()
    report = opened.value
    report.wait_for_load_state()
    expect(report.locator("h1")).to_have_text("jupyter-hetero acceptance report")
    for section in ("checkpoints", "task-types", "queues", "utilisation", "usage", "alerts", "releases", "capacity"):
        expect(report.locator(f"h2#{section}")).to_be_visible()
    expect(report.locator("#checkpoints + table")).to_contain_text("data-preprocessing")
    expect(report.locator("svg.chart").first).to_be_visible()
    report.screenshot(path=str(ui_output / "acceptance-report.png"), full_page=True)
    report.close()
