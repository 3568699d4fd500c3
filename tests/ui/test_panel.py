"""The Hetero sidebar panel, in a real JupyterLab."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from ..harness import open_sidebar_tab

pytestmark = pytest.mark.ui


def test_panel_shows_server_version(lab_server, lab_page, ui_output):
    expected = lab_server.api("hetero/api/v1/version")["version"]

    panel = open_sidebar_tab(lab_page, "Hetero")

    expect(panel).to_have_id("jp-hetero-panel")
    version = panel.locator(".jp-hetero-version")
    expect(version).to_contain_text(expected, timeout=30_000)
    expect(version).to_contain_text("jupyter-hetero")
    expect(panel.locator(".jp-hetero-error")).to_have_count(0)
    lab_page.screenshot(path=str(ui_output / "panel-version.png"))


def test_panel_shows_the_server_error_message(lab_page, ui_output):
    lab_page.route(
        "**/hetero/api/v1/version*",
        lambda route: route.fulfill(
            status=503,
            content_type="application/json",
            body='{"message": "scheduler is restarting", "reason": null}',
        ),
    )
    panel = open_sidebar_tab(lab_page, "Hetero")

    panel.get_by_role("button", name="Refresh").click()

    expect(panel.locator(".jp-hetero-error")).to_contain_text("scheduler is restarting")
    lab_page.screenshot(path=str(ui_output / "panel-error.png"))
