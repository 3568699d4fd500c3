"""A job array in My work, in a real JupyterLab: submitted through the API (``array: "0-2%1"``), its three tasks show as
one row (12[0-2%1], its tasks' states counted, the limit's blocker), which expands to the tasks' own rows; Cancel array,
once confirmed, cancels every task (DELETE /workloads/{id}?array=true)."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from .test_panel_sections import API, open_panel

pytestmark = pytest.mark.ui

# Each task runs until it is cancelled (or for two minutes): the limit of one holds the other two back meanwhile.
SLEEPER = "import time\nprint('task running', flush=True)\ntime.sleep(120)\n"


def _tasks(lab_server, array: int) -> list[dict]:
    return lab_server.api(f"{API}/workloads?array={array}")


def _until(lab_server, array: int, predicate, what: str, timeout: float = 60.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        tasks = _tasks(lab_server, array)
        if predicate(tasks):
            return tasks
        assert time.monotonic() < deadline, f"{what}: {[(t['id'], t['state']) for t in tasks]}"
        time.sleep(0.3)


def test_an_array_is_one_row_that_expands_to_its_tasks_and_is_cancelled_whole(lab_server, lab_page, ui_output):
    first = lab_server.api(f"{API}/workloads", "POST", {"kind": "job", "template": "data-preprocessing",
                                                        "name": "ui-shards", "code": SLEEPER, "array": "0-2%1"})
    array = first["array"]["id"]
    _until(lab_server, array, lambda tasks: [t["state"] for t in sorted(tasks, key=lambda t: t["array"]["index"])]
           == ["running", "queued", "queued"], "the first task to run, the others to wait on the limit")

    page = lab_page
    panel = open_panel(page, "work")
    row = panel.locator(f".jp-hetero-array[data-array-id='{array}']")
    expect(row).to_be_visible(timeout=30_000)
    expect(row.locator(".jp-hetero-workload-title")).to_have_text(f"Array {array}[0-2%1] ui-shards")
    expect(row.locator(".jp-hetero-array-states")).to_have_text("running 1, queued 2", timeout=30_000)
    expect(row.locator(".jp-hetero-blocker[data-kind='array-limit']")).to_contain_text(
        f"array limit: array {array} runs at most 1 tasks at once")
    # One row for the array: none of its tasks has a row of its own until it is expanded.
    expect(panel.locator(f".jp-hetero-workload[data-workload-id='{array}']")).to_have_count(0)
    page.screenshot(path=str(ui_output / "work-array.png"))

    row.locator(".jp-hetero-array-toggle").click()
    tasks = row.locator(".jp-hetero-array-tasks > .jp-hetero-workload")
    expect(tasks).to_have_count(3, timeout=30_000)
    assert [tasks.nth(i).get_attribute("data-workload-id") for i in range(3)] == [str(array + i) for i in range(3)]
    expect(tasks.nth(0)).to_have_attribute("data-state", "running")
    expect(tasks.nth(1).locator(".jp-hetero-workload-title")).to_have_text(f"#{array + 1} ui-shards[1]")
    for action in ("logs", "explain", "cancel"):
        expect(tasks.nth(2).locator(f".jp-hetero-action-{action}")).to_be_visible()
    page.screenshot(path=str(ui_output / "work-array-tasks.png"))

    row.locator(".jp-hetero-action-cancel-array").click()
    confirm = row.locator(".jp-hetero-array-confirm")
    expect(confirm).to_contain_text(f"Cancel every unfinished task of array {array}[0-2%1]?")
    assert {t["state"] for t in _tasks(lab_server, array)} == {"running", "queued"}  # nothing before the confirmation
    confirm.locator(".jp-hetero-action-confirm-cancel-array").click()
    _until(lab_server, array, lambda tasks: {t["state"] for t in tasks} == {"cancelled"}, "every task to be cancelled")
    expect(row.locator(".jp-hetero-array-states")).to_have_text("cancelled 3", timeout=30_000)
    expect(row.locator(".jp-hetero-action-cancel-array")).to_have_count(0)
    page.screenshot(path=str(ui_output / "work-array-cancelled.png"))
