"""The panel's Schedules tab in a real JupyterLab: a schedule made in the form (a refused time zone shown under its
field first), listed with its cadence in words and its next run, edited (the form filled with it, a refused cron
under its field, then a new cron: a new description and next run), run now (its run listed, its workload done),
paused and deleted; a plain member of the same tenant does not see it."""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import expect

from ..harness import wait_for_lab_shell
from .conftest import MEMBER_TOKEN
from .test_panel_sections import open_panel

pytestmark = pytest.mark.ui

API = "hetero/api/v1"
SCRIPT = "scheduled_hello.py"
OUTPUT = "hello from a scheduled job"


def test_a_schedule_is_made_listed_run_now_paused_and_deleted_in_the_panel(browser, lab_server, lab_page, ui_output):
    lab_server.api(f"api/contents/{SCRIPT}", "PUT",
                   {"type": "file", "format": "text", "content": f"print({OUTPUT!r})\n"})
    page = lab_page
    panel = open_panel(page, "schedules")

    panel.get_by_role("button", name="New schedule").click()
    form = panel.locator("form.jp-hetero-schedule-form")
    form.locator("#jp-hetero-schedule-name").fill("ui-nightly")
    form.locator(".jp-hetero-template-picker select").select_option("data-preprocessing")
    form.locator("#jp-hetero-job-path").fill(SCRIPT)
    expect(form.locator("#jp-hetero-schedule-preset")).to_have_value("daily")
    expect(form.locator("#jp-hetero-schedule-cron")).to_have_value("0 2 * * *")
    form.locator("#jp-hetero-schedule-timezone").fill("Mars/Olympus")
    form.get_by_label("Skip").check()
    expect(form.locator(".jp-hetero-schedule-missed-hint")).to_contain_text("are skipped")

    # The server knows no such zone: its refusal stands under the zone, which it names, and the form stays.
    form.get_by_role("button", name="Create schedule").click()
    problem = form.locator(".jp-hetero-schedule-server-problem")
    expect(problem).to_have_attribute("data-field", "timezone", timeout=30_000)
    expect(problem).to_contain_text("Mars/Olympus")
    expect(form.locator("#jp-hetero-schedule-timezone")).to_have_attribute("aria-invalid", "true")
    page.screenshot(path=str(ui_output / "panel-schedules-form.png"))
    assert [s for s in lab_server.api(f"{API}/schedules") if s["name"] == "ui-nightly"] == []

    form.locator("#jp-hetero-schedule-timezone").fill("Asia/Shanghai")
    expect(problem).to_have_count(0)
    form.get_by_role("button", name="Create schedule").click()
    expect(page.locator(".Toastify__toast", has_text="Created schedule ui-nightly")).to_be_visible(timeout=30_000)
    expect(form).to_have_count(0)

    schedule = next(s for s in lab_server.api(f"{API}/schedules") if s["name"] == "ui-nightly")
    assert (schedule["cron"], schedule["timezone"], schedule["missed"]) == ("0 2 * * *", "Asia/Shanghai", "skip")
    assert schedule["job"]["payload"] == "script" and schedule["job"]["script"]["path"] == SCRIPT
    row = panel.locator(f".jp-hetero-schedule[data-schedule-id='{schedule['id']}']")
    expect(row.locator(".jp-hetero-schedule-description")).to_have_text("every day at 02:00 (Asia/Shanghai)")
    next_run = datetime.fromtimestamp(schedule["next_run_at"], ZoneInfo("Asia/Shanghai"))
    expect(row.locator(".jp-hetero-schedule-next")).to_have_text(
        re.compile(rf"^Next run: {next_run:%Y-%m-%d} 02:00 \(in .+\)$"))
    expect(row.locator(".jp-hetero-schedule-last")).to_have_text("Last run: none yet")
    expect(row.locator(".jp-hetero-schedule-state")).to_have_text("active")
    page.screenshot(path=str(ui_output / "panel-schedules.png"))

    # Edit: the form opens filled with the schedule; a refused cron is shown under it; a new one is saved alone and
    # the row reads the new cadence and next run.
    row.get_by_role("button", name="Edit schedule ui-nightly").click()
    editor = panel.locator("form.jp-hetero-schedule-form[data-mode='edit']")
    expect(editor.locator("#jp-hetero-schedule-name")).to_have_value("ui-nightly")
    expect(editor.locator("#jp-hetero-schedule-cron")).to_have_value("0 2 * * *")
    expect(editor.locator("#jp-hetero-schedule-preset")).to_have_value("daily")
    expect(editor.locator("#jp-hetero-schedule-timezone")).to_have_value("Asia/Shanghai")
    expect(editor.locator("#jp-hetero-job-path")).to_have_value(SCRIPT)
    expect(editor.get_by_label("Skip")).to_be_checked()
    expect(editor.get_by_role("button", name="Save changes")).to_be_disabled()  # nothing changed yet
    editor.locator("#jp-hetero-schedule-cron").fill("30 25 * * 1-5")
    editor.get_by_role("button", name="Save changes").click()
    refused = editor.locator(".jp-hetero-schedule-server-problem")
    expect(refused).to_have_attribute("data-field", "cron", timeout=30_000)
    assert lab_server.api(f"{API}/schedules/{schedule['id']}")["cron"] == "0 2 * * *"
    editor.locator("#jp-hetero-schedule-cron").fill("30 6 * * 1-5")
    editor.get_by_role("button", name="Save changes").click()
    expect(editor).to_have_count(0, timeout=30_000)
    edited = lab_server.api(f"{API}/schedules/{schedule['id']}")
    assert (edited["cron"], edited["timezone"], edited["missed"], edited["name"]) == (
        "30 6 * * 1-5", "Asia/Shanghai", "skip", "ui-nightly")
    assert edited["job"] == schedule["job"] and edited["description"] != schedule["description"]
    expect(row.locator(".jp-hetero-schedule-description")).to_have_text(edited["description"], timeout=30_000)
    next_run = datetime.fromtimestamp(edited["next_run_at"], ZoneInfo("Asia/Shanghai"))
    assert (next_run.hour, next_run.minute, next_run.weekday() < 5) == (6, 30, True)
    expect(row.locator(".jp-hetero-schedule-next")).to_have_text(
        re.compile(rf"^Next run: {next_run:%Y-%m-%d} 06:30 \(in .+\)$"))
    page.screenshot(path=str(ui_output / "panel-schedules-edited.png"))

    # A member of the same tenant lists only her own schedules: not this one.
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        member = context.new_page()
        member.goto(f"{lab_server.base_url}lab/workspaces/schedules-member?token={MEMBER_TOKEN}")
        wait_for_lab_shell(member)
        other = open_panel(member, "schedules")
        expect(other.locator(".jp-hetero-schedules-empty")).to_contain_text("No schedule yet")
        expect(other.locator(".jp-hetero-schedule")).to_have_count(0)
    finally:
        context.close()

    row.get_by_role("button", name="Run schedule ui-nightly now").click()
    toast = page.locator(".Toastify__toast", has_text="Schedule ui-nightly submitted workload")
    expect(toast).to_be_visible(timeout=30_000)
    workload_id = int(re.search(r"submitted workload (\d+)", toast.last.inner_text()).group(1))
    run = row.locator(f".jp-hetero-schedule-run[data-workload-id='{workload_id}']")
    expect(run).to_be_visible(timeout=30_000)
    expect(row.locator(".jp-hetero-schedule-toggle-runs")).to_have_attribute("aria-expanded", "true")
    for _ in range(45):  # the run's state follows its workload at each refresh
        if run.get_attribute("data-state") == "succeeded":
            break
        panel.get_by_role("button", name="Refresh").click()
        page.wait_for_timeout(1000)
    expect(run).to_have_attribute("data-state", "succeeded")
    expect(row.locator(".jp-hetero-schedule-last")).to_contain_text(f"workload {workload_id}")
    assert lab_server.api(f"{API}/workloads/{workload_id}")["schedule"] == schedule["id"]
    page.screenshot(path=str(ui_output / "panel-schedules-run.png"))

    row.get_by_role("button", name="Pause schedule ui-nightly").click()
    expect(row).to_have_attribute("data-state", "paused", timeout=30_000)
    expect(row.locator(".jp-hetero-schedule-next")).to_have_text("Next run: none while paused")
    assert lab_server.api(f"{API}/schedules/{schedule['id']}")["next_run_at"] is None

    row.get_by_role("button", name="Delete schedule ui-nightly").click()
    row.get_by_role("button", name="Yes, delete schedule ui-nightly").click()
    expect(row).to_have_count(0, timeout=30_000)
    assert lab_server.api(f"{API}/schedules/{schedule['id']}")["state"] == "deleted"
    assert schedule["id"] not in [s["id"] for s in lab_server.api(f"{API}/schedules")]
    # The workload it submitted stays.
    assert lab_server.api(f"{API}/workloads/{workload_id}")["state"] == "succeeded"
