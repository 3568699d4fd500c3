"""Alerts in a real JupyterLab: a queue waiting past its max wait fires an alert, which the panel shows above its
sections and JupyterLab notifies; a webhook on 127.0.0.1 hears it; it resolves once nothing waits, and leaves the
panel. The server is a ``jupyter lab`` of this module's own, with a 1-second max wait on the batch queue."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import yaml
from playwright.sync_api import expect

from ..handlers.test_alerts import Webhook
from ..harness import LabServer, ServerLayout, wait_for_lab_shell
from .conftest import REPO, _save_failure_evidence
from .test_panel_sections import open_panel

pytestmark = pytest.mark.ui

API = "hetero/api/v1"


@pytest.fixture(scope="module")
def alert_lab(tmp_path_factory, ui_output) -> Iterator[tuple[LabServer, Webhook]]:
    from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH

    layout = ServerLayout.create(tmp_path_factory.mktemp("alert-lab"))
    catalog = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    next(queue for queue in catalog["queues"] if queue["name"] == "batch")["max_wait_s"] = 1
    (layout.state / "catalog.yaml").write_text(yaml.safe_dump(catalog, allow_unicode=True), encoding="utf-8")
    webhook = Webhook()
    lab = LabServer.start(layout, log_path=ui_output / "jupyter-lab-alerts.log", extra_args=[
        f"--HeteroApp.catalog_file={layout.state / 'catalog.yaml'}",
        f"--HeteroApp.emulated_nodes_file={REPO / 'binder' / 'demo-nodes.yaml'}",
        f"--HeteroApp.db_url=sqlite:///{layout.state / 'hetero.sqlite'}",
        f"--HeteroApp.work_dir={layout.state / 'work'}",
        "--HeteroApp.schedule_interval=0.5",
        "--HeteroApp.alert_interval=0.5",
        f"--HeteroApp.alert_webhook={webhook.url}",
    ])
    try:
        yield lab, webhook
    finally:
        lab.stop()
        webhook.server.shutdown()


def test_a_queue_waiting_past_its_max_wait_shows_an_alert_in_the_panel_until_it_resolves(
        request, browser, alert_lab, ui_output):
    lab, webhook = alert_lab
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    try:
        page.goto(lab.lab_url("lab/workspaces/alerts"))
        wait_for_lab_shell(page)
        # Eight A100s in one replica: the demo's A100 node has two, so it waits (as inadmissible) in batch.
        waiting = lab.api(f"{API}/workloads", "POST", {
            "kind": "job", "template": "training", "queue": "batch", "parameters": {"devices": 8, "flavor": "a100-80g"},
            "command": ["python", "-c", "print('never')"]})
        deadline = time.monotonic() + 30
        while not [a for a in lab.api(f"{API}/alerts?state=firing") if a["rule"] == "queue-wait"]:
            assert time.monotonic() < deadline, "the queue-wait alert never fired"
            time.sleep(0.3)
        panel = open_panel(page, "queues")
        panel.get_by_role("button", name="Refresh").click()
        # The alerts are one closed line above the sections (tests/ui/test_first_run.py): opened, each alert.
        panel.locator(".jp-hetero-alerts-toggle").click()
        alert = panel.locator('.jp-hetero-alert[data-rule="queue-wait"]')
        expect(alert).to_contain_text(f"Warning queue batch: workload {waiting['id']} has waited ", timeout=15_000)
        expect(page.locator(".jp-toast-container, .Toastify")).to_contain_text("Hetero alert: queue batch",
                                                                             timeout=15_000)
        page.screenshot(path=str(ui_output / "panel-alert.png"))
        assert "firing" in webhook.statuses("queue-wait")

        lab.api(f"{API}/workloads/{waiting['id']}", "DELETE")  # nothing waits any more: it resolves
        deadline = time.monotonic() + 30
        while "resolved" not in webhook.statuses("queue-wait"):
            assert time.monotonic() < deadline, "the webhook never heard the alert resolve"
            time.sleep(0.3)
        panel.get_by_role("button", name="Refresh").click()
        expect(alert).to_have_count(0, timeout=15_000)
    except BaseException:
        _save_failure_evidence(page, console, ui_output, request.node.nodeid)
        raise
    finally:
        context.close()
