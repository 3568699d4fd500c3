"""The panel's Services section in a real JupyterLab: a two-replica service with its endpoint, ready replicas,
traffic chart and a canary under trial, rolled back from the panel."""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

from .test_panel_sections import open_panel

pytestmark = pytest.mark.ui

API = "hetero/api/v1"
MODEL = [sys.executable, str(Path(__file__).resolve().parents[1] / "serving" / "model_server.py")]


def predict(lab_server, count: int) -> None:
    for _ in range(count):
        request = urllib.request.Request(lab_server.base_url + "hetero/endpoints/default/panel-demo/predict",
                                         json.dumps({"inputs": [1, 2]}).encode(),
                                         {"Authorization": f"token {lab_server.token}"})
        urllib.request.urlopen(request, timeout=30).read()


def test_the_services_section_shows_endpoint_replicas_chart_and_rollout(lab_server, lab_page, ui_output):
    lab_server.api(f"{API}/services", "POST", {"name": "panel-demo", "command": MODEL, "replicas": 2,
                                              "parameters": {"devices": 1}})
    try:
        deadline = time.monotonic() + 60
        while lab_server.api(f"{API}/services/panel-demo")["ready_replicas"] < 2:
            assert time.monotonic() < deadline, "the service's replicas never became ready"
            time.sleep(0.3)
        panel = open_panel(lab_page, "services")
        panel.get_by_role("button", name="Refresh").click()  # the page loaded before the service was created
        card = panel.locator('.jp-hetero-service[data-service="panel-demo"]')
        expect(card.locator(".jp-hetero-service-endpoint")).to_have_text("/hetero/endpoints/default/panel-demo/")
        expect(card.locator(".jp-hetero-service-replicas")).to_have_text("2 of 2 replicas ready")
        for _ in range(3):  # traffic between refreshes: the chart draws a point per refresh
            predict(lab_server, 20)
            panel.get_by_role("button", name="Refresh").click()
            time.sleep(0.3)
        expect(card.locator("svg.jp-hetero-traffic-chart path.jp-hetero-traffic-rps")).to_have_count(1)
        expect(card.locator(".jp-hetero-service-traffic")).to_contain_text("requests/s")

        lab_server.api(f"{API}/services/panel-demo/rollouts", "POST", {"env": {"MODEL_VERSION": "2"}})
        panel.get_by_role("button", name="Refresh").click()
        rollout = card.locator(".jp-hetero-service-rollout")
        expect(rollout).to_have_attribute("data-state", "canary", timeout=30_000)
        expect(rollout).to_contain_text("Canary: revision 2 takes 20% of requests")
        lab_page.screenshot(path=str(ui_output / "panel-services.png"))

        card.get_by_role("button", name="Roll back the canary of panel-demo").click()
        expect(rollout).to_have_attribute("data-state", "stable", timeout=30_000)
        service = lab_server.api(f"{API}/services/panel-demo")
        assert (service["rollout"], service["revisions"][-1]["outcome"]) == (None, "abandoned"), service
    finally:
        lab_server.api(f"{API}/services/panel-demo", "DELETE")
