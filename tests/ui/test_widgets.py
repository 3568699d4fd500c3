"""The %hetero_submit form and the live status widget, in a real JupyterLab notebook."""

from __future__ import annotations

import nbformat
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.ui


def open_notebook(lab_server, page, name: str, *sources: str):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    lab_server.api(f"api/contents/{name}", "PUT", {"type": "notebook", "format": "json", "content": notebook})
    page.goto(lab_server.lab_url(f"lab/tree/{name}"))
    page.locator(".jp-Notebook").wait_for(timeout=60_000)
    # With several kernelspecs installed JupyterLab may ask which one; the notebook names python3.
    select = page.get_by_role("button", name="Select Kernel")
    try:
        select.wait_for(timeout=5_000)
        select.click()
    except Exception:  # noqa: BLE001 - no dialog: the preferred kernel started by itself
        pass
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(1, timeout=60_000)


def run_first_cell(page):
    page.locator(".jp-Cell .jp-InputArea-editor").first.click()
    page.keyboard.press("Shift+Enter")


def test_the_submit_form_submits_and_the_status_widget_reaches_succeeded(lab_server, lab_page, ui_output):
    page = lab_page
    open_notebook(lab_server, page, "widgets.ipynb", "%load_ext jupyter_hetero\n%hetero_submit")
    run_first_cell(page)
    form = page.locator(".jp-hetero-form")
    expect(form).to_be_visible(timeout=60_000)
    form.locator(".jp-hetero-form-template select").select_option(label="Data preprocessing")
    expect(form.locator(".jp-hetero-form-flavors")).to_contain_text("cpu-standard", timeout=30_000)
    expect(form.locator(".jp-hetero-form-flavors")).to_contain_text("starts now")
    form.locator(".jp-hetero-form-command input").fill("python -c print(6*7)")
    page.screenshot(path=str(ui_output / "widgets-form.png"))
    form.locator(".jp-hetero-form-submit").click()
    expect(form.locator(".jp-hetero-form-message")).to_contain_text("submitted workload", timeout=30_000)
    state = form.locator(".jp-hetero-status-state")
    expect(state).to_have_text("succeeded", timeout=90_000)
    expect(form.locator(".jp-hetero-status textarea")).to_have_value("42\n", timeout=30_000)
    page.screenshot(path=str(ui_output / "widgets-status.png"))
