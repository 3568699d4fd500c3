"""The demo's first run in a real JupyterLab, started as ``make demo`` starts it (the shipped catalog, the demo's
emulated nodes): after its own onboarding (every node, chip, template variant and tenant) no failed-onboarding
banner covers the panel; alerts, when some fire, are one closed line ("1 alert ▸") that opens on click and stays
open or closed for the browser session."""

from __future__ import annotations

import time
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from ..demo import start_demo
from ..harness import LabServer, ServerLayout, wait_for_lab_shell
from .conftest import _save_failure_evidence
from .test_panel_sections import open_panel

pytestmark = pytest.mark.ui

API = "hetero/api/v1"


@pytest.fixture(scope="module")
def demo_lab(tmp_path_factory, ui_output) -> Iterator[LabServer]:
    """``make demo``'s server (its own command, on a fresh clone): no catalog of its own, the demo's nodes; a store
    and alerts checked often."""
    layout = ServerLayout.create(tmp_path_factory.mktemp("demo-lab"))
    lab = start_demo(layout, log_path=ui_output / "jupyter-lab-first-run.log", extra_args=[
        f"--HeteroApp.db_url=sqlite:///{layout.state / 'hetero.sqlite'}",
        f"--HeteroApp.work_dir={layout.state / 'work'}",
        "--HeteroApp.schedule_interval=0.5",
        "--HeteroApp.alert_interval=0.5",
    ])
    try:
        yield lab
    finally:
        lab.stop()


def _onboard_the_demo(lab: LabServer) -> list[dict]:
    """Every checklist the demo has, as the README's `jupyter hetero onboard ...` runs them."""
    nodes = lab.api(f"{API}/nodes")
    templates = lab.api(f"{API}/templates")
    paths = [f"nodes/{n['name']}" for n in nodes]
    paths += sorted({f"chips/{quote(n['accelerator']['model'])}" for n in nodes if n.get("accelerator")})
    paths += [f"frameworks/{t['name']}/{v['family']}" for t in templates for v in t["variants"]]
    paths += ["tenants/default"]
    return [lab.api(f"{API}/onboarding/{path}", "POST", {}, timeout=120) for path in paths]


def _until(what: str, check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, what
        time.sleep(0.3)
    return found


def test_the_demos_first_screen_has_no_failed_onboarding_and_alerts_are_one_closed_line(
        request, browser, demo_lab, ui_output):
    lab = demo_lab
    records = _onboard_the_demo(lab)
    assert [(r["kind"], r["name"], r["failed_step"]) for r in records if r["state"] != "accepted"] == []
    time.sleep(1.5)  # three alert evaluations: an onboarding-failed alert would be firing by now
    assert [a["subject"] for a in lab.api(f"{API}/alerts?state=firing")] == []

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    try:
        page.goto(lab.lab_url("lab/workspaces/first-run"))
        wait_for_lab_shell(page)
        panel = open_panel(page, "queues")
        expect(panel.locator(".jp-hetero-queue").first).to_be_visible(timeout=30_000)
        expect(panel.locator(".jp-hetero-alerts")).to_have_count(0)
        page.screenshot(path=str(ui_output / "first-run.png"))

        # Five failed jobs of the experiment queue (no retries) fire its failure-rate alert: one line, closed.
        for n in range(5):
            lab.api(f"{API}/workloads", "POST", {
                "kind": "job", "template": "data-preprocessing", "queue": "experiment", "name": f"fails-{n}",
                "command": ["python", "-c", "raise SystemExit(1)"]})
        _until("the failure-rate alert never fired",
               lambda: [a for a in lab.api(f"{API}/alerts?state=firing") if a["rule"] == "failure-rate"], timeout=90)
        panel.get_by_role("button", name="Refresh").click()
        line = panel.locator(".jp-hetero-alerts-toggle")
        expect(line).to_have_text("1 alert ▸", timeout=15_000)
        expect(line).to_have_attribute("aria-expanded", "false")
        expect(panel.locator(".jp-hetero-alert")).to_have_count(0)
        assert line.bounding_box()["height"] < 40  # one line, not a banner per alert
        page.screenshot(path=str(ui_output / "first-run-alert-line.png"))

        line.click()
        alert = panel.locator('.jp-hetero-alert[data-rule="failure-rate"]')
        expect(alert).to_contain_text("queue experiment")
        expect(line).to_have_text("1 alert ▾")
        # Open stays open in this browser session, in another tab of the panel and after a reload.
        panel = open_panel(page, "nodes")
        expect(panel.locator('.jp-hetero-alert[data-rule="failure-rate"]')).to_be_visible()
        page.reload()
        wait_for_lab_shell(page)
        panel = open_panel(page, "queues")
        expect(panel.locator('.jp-hetero-alert[data-rule="failure-rate"]')).to_be_visible(timeout=15_000)
        panel.locator(".jp-hetero-alerts-toggle").click()
        expect(panel.locator(".jp-hetero-alert")).to_have_count(0)
        expect(panel.locator(".jp-hetero-alerts-toggle")).to_have_text("1 alert ▸")
    except BaseException:
        _save_failure_evidence(page, console, ui_output, request.node.nodeid)
        raise
    finally:
        context.close()
