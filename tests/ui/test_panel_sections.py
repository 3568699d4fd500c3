"""The Hetero panel's sections, status bar item and Chinese UI, in a real JupyterLab.

Every test starts from a fresh page on the session's lab server (demo emulated nodes: gpu-a100-0
with 2x A100-80GB, gpu-t4-0, npu-910b-0, cpu-0, plus this machine); the token holder is a
platform admin of tenant ``default``.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from ..harness import open_sidebar_tab, wait_for_lab_shell
from .conftest import MEMBER_TOKEN

pytestmark = pytest.mark.ui

API = "hetero/api/v1"
SCRIPT = "hello_hetero.py"
SCRIPT_OUTPUT = "hello from a hetero job"


def widen_left_sidebar(page: Page, width: int = 400) -> None:
    """Drag the sidebar's edge so the panel's cards read well in screenshots."""
    handle = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle:not(.lm-mod-hidden)").first
    box = handle.bounding_box()
    if box is None or box["x"] >= width - 10:
        return
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(width, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()


def open_panel(page: Page, section: str = "launch") -> Locator:
    """The Hetero panel, loaded, showing ``section`` (launch, queues, work, nodes, admin)."""
    panel = open_sidebar_tab(page, "Hetero")
    widen_left_sidebar(page)
    expect(panel.locator(".jp-hetero-version")).to_be_visible(timeout=30_000)
    tab = panel.locator(f".jp-hetero-tab[data-section={section}]")
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
    return panel


def choose_template(panel: Locator, name: str) -> None:
    panel.locator(".jp-hetero-template-picker select").select_option(name)
    # The preview answers for the chosen template: its first flavor row is there.
    expect(panel.locator(".jp-hetero-flavor[data-flavor]:not([data-flavor=''])").first).to_be_visible(timeout=30_000)


def set_parameter(panel: Locator, name: str, value: str) -> None:
    advanced = panel.locator(".jp-hetero-advanced")
    if advanced.get_attribute("open") is None:
        advanced.locator("summary").click()
    panel.locator(f"#jp-hetero-param-{name}").fill(value)


def submit_job(page: Page, panel: Locator) -> int:
    """Click "Submit job" and return the new workload's id from the success notification."""
    panel.locator(".jp-hetero-submit-job").click()
    toast = page.locator(".Toastify__toast", has_text="Submitted workload")
    expect(toast).to_be_visible(timeout=30_000)
    return int(re.search(r"Submitted workload (\d+)", toast.last.inner_text()).group(1))


def workload_row(panel: Locator, workload_id: int) -> Locator:
    return panel.locator(f".jp-hetero-workload[data-workload-id='{workload_id}']")


@pytest.fixture(scope="module")
def script(lab_server) -> str:
    """A tiny Python script at the server root, for jobs."""
    lab_server.api(
        f"api/contents/{SCRIPT}", "PUT",
        {"type": "file", "format": "text", "content": f"print({SCRIPT_OUTPUT!r})\n"},
    )
    return SCRIPT


def test_launch_previews_eligible_flavors_and_bounded_parameters(lab_page, ui_output):
    page = lab_page
    panel = open_panel(page)

    choose_template(panel, "fine-tuning")
    expect(panel.locator(".jp-hetero-description")).to_contain_text("40 GiB")
    expect(panel.locator(".jp-hetero-default-request")).to_have_text("1× device ≥ 40 GiB · 8 CPU · 64 GiB memory")
    a100 = panel.locator(".jp-hetero-flavor[data-flavor='a100-80g']")
    expect(a100).to_contain_text("A100-80G")
    expect(a100).to_contain_text(re.compile(r"\d of 2 devices free"))
    ascend = panel.locator(".jp-hetero-flavor[data-flavor='ascend-910b']")
    expect(ascend).to_contain_text("of 8 devices free")
    expect(ascend.locator(".jp-hetero-flavor-image")).to_have_text("image pytorch-modelzoo:24.0.RC3-A2")
    # No H100 node exists: that choice is greyed out and says why.
    h100 = panel.locator(".jp-hetero-flavor[data-flavor='h100-80g']")
    expect(h100).to_have_class(re.compile("jp-hetero-mod-unschedulable"))
    expect(h100).to_contain_text("no ready node belongs to flavor h100-80g")

    set_parameter(panel, "devices", "9")
    devices = panel.locator("#jp-hetero-param-devices")
    expect(devices).to_have_attribute("max", "8")
    expect(panel.locator("[data-parameter='devices'] [role=alert]")).to_have_text("At most 8.")
    expect(panel.locator(".jp-hetero-start-kernel")).to_be_disabled()
    devices.fill("2")
    expect(panel.locator("[data-parameter='devices'] [role=alert]")).to_have_count(0)
    expect(panel.locator(".jp-hetero-start-kernel")).to_be_enabled()
    page.screenshot(path=str(ui_output / "panel-launch.png"))


def test_start_kernel_on_an_emulated_gpu_shows_its_placement_in_the_status_bar(lab_server, lab_page, ui_output):
    page = lab_page
    panel = open_panel(page)
    choose_template(panel, "interactive")
    set_parameter(panel, "devices", "1")
    flavor = panel.locator(".jp-hetero-flavor[data-flavor='a100-80g']")
    expect(flavor).to_contain_text("starts now")
    flavor.locator("input[type=radio]").check()

    panel.locator(".jp-hetero-start-kernel").click()

    expect(page.locator(".jp-NotebookPanel")).to_have_count(1, timeout=60_000)
    status = page.locator(".jp-hetero-placement")
    expect(status).to_contain_text("A100-80G ×1 · experiment", timeout=30_000)
    expect(page.locator(".jp-Dialog")).to_have_count(0)  # attached to our kernel: no kernel picker
    kernel_id = status.get_attribute("data-kernel-id")
    usage = lab_server.api(f"{API}/kernels/{kernel_id}/usage")
    assert (usage["node"], usage["flavor"], len(usage["devices"])) == ("gpu-a100-0", "a100-80g", 1), usage
    page.screenshot(path=str(ui_output / "statusbar.png"))
    # Give the device back for the rest of the session.
    lab_server.api(f"api/kernels/{kernel_id}", "DELETE")


def test_submitted_job_reaches_succeeded_in_my_work_and_its_log_streams(lab_page, script):
    page = lab_page
    panel = open_panel(page)
    choose_template(panel, "data-preprocessing")
    # Take the script from the file browser's selection.
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id='filebrowser']").click()
    page.locator(".jp-DirListing-item", has_text=script).click()
    panel = open_panel(page)
    panel.locator(".jp-hetero-use-selection").click()
    expect(panel.locator("#jp-hetero-job-path")).to_have_value(script)

    workload_id = submit_job(page, panel)

    panel.locator(".jp-hetero-tab[data-section=work]").click()
    row = workload_row(panel, workload_id)
    expect(row).to_have_attribute("data-state", "succeeded", timeout=90_000)
    expect(row.locator(".jp-hetero-state")).to_have_text("succeeded")
    expect(row.locator(".jp-hetero-workload-placement")).to_contain_text("cpu-standard")
    expect(row.locator(".jp-hetero-workload-usage")).to_contain_text("peak memory")

    row.locator(".jp-hetero-action-logs").click()
    logs = page.locator(f".jp-hetero-logs[data-workload-id='{workload_id}']")
    expect(logs.locator(".jp-hetero-log-text")).to_contain_text(SCRIPT_OUTPUT, timeout=30_000)
    expect(logs).to_have_attribute("data-done", "true", timeout=30_000)


def test_a_job_that_does_not_fit_shows_its_blocker_and_can_be_cancelled(lab_page, script, ui_output):
    page = lab_page
    panel = open_panel(page)
    choose_template(panel, "data-preprocessing")
    set_parameter(panel, "cpu", "64")
    # No node has 64 cores: the preview already says so.
    cpu_standard = panel.locator(".jp-hetero-flavor[data-flavor='cpu-standard']")
    expect(cpu_standard).to_contain_text("64 CPU must fit on one node", timeout=30_000)
    expect(cpu_standard).to_have_class(re.compile("jp-hetero-mod-unschedulable"))
    # Choose the script in JupyterLab's file dialog.
    panel.locator(".jp-hetero-browse").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Choose a script or notebook")
    dialog.locator(".jp-DirListing-item", has_text=script).click()
    dialog.locator("button.jp-mod-accept").click()
    expect(panel.locator("#jp-hetero-job-path")).to_have_value(script)

    workload_id = submit_job(page, panel)

    panel.locator(".jp-hetero-tab[data-section=work]").click()
    row = workload_row(panel, workload_id)
    # No node could ever hold it: it waits as inadmissible, with the reason, until the inventory changes.
    expect(row).to_have_attribute("data-state", "inadmissible", timeout=30_000)
    expect(row.locator(".jp-hetero-blocker").first).to_contain_text(
        "the largest node of flavor cpu-standard has 32 CPU", timeout=30_000
    )
    expect(row.locator(".jp-hetero-workload-wait")).to_contain_text("No node can ever hold it")
    row.locator(".jp-hetero-action-explain").click()
    expect(row.locator(".jp-hetero-explanation")).to_contain_text("64 CPU")
    page.screenshot(path=str(ui_output / "panel-mywork.png"))

    row.get_by_role("button", name=f"Cancel workload {workload_id}").click()

    expect(row).to_have_attribute("data-state", "cancelled", timeout=30_000)
    expect(row.locator(".jp-hetero-action-resubmit")).to_be_visible()


def test_queues_nodes_and_admin_sections(lab_page, ui_output):
    page = lab_page
    panel = open_panel(page, "queues")
    queues = panel.locator(".jp-hetero-queue")
    expect(queues).to_have_count(5)
    experiment = panel.locator(".jp-hetero-queue[data-queue='experiment']")
    expect(experiment).to_contain_text("Research experiments")
    expect(experiment.locator(".jp-hetero-queue-wait")).to_contain_text("/")
    urgent = panel.locator(".jp-hetero-queue[data-queue='urgent']")
    expect(urgent).to_contain_text("experiment, batch, training")
    urgent.locator(".jp-hetero-quota-details summary").click()
    expect(urgent.locator(".jp-hetero-quota-flavor[data-flavor='a100-80g'] [role=progressbar]").first).to_be_visible()
    page.screenshot(path=str(ui_output / "panel-queues.png"))

    panel.locator(".jp-hetero-tab[data-section=nodes]").click()
    a100 = panel.locator(".jp-hetero-node[data-node='gpu-a100-0']")
    expect(a100.locator(".jp-hetero-badge.jp-hetero-mod-emulated")).to_have_text("emulated")
    expect(a100.locator(".jp-hetero-node-accelerator")).to_have_text("2× A100-SXM4-80GB, 80 GiB each")
    expect(a100).to_contain_text("550.54.15 / cuda 12.4")
    expect(panel.locator(".jp-hetero-node[data-node='npu-910b-0']")).to_contain_text("8× 910B3")
    expect(panel.locator(".jp-hetero-node:not(.jp-hetero-mod-emulated)")).to_have_count(1)
    expect(panel.locator(".jp-hetero-node:not(.jp-hetero-mod-emulated)")).to_contain_text("this machine")
    # This machine's use is measured (CPU and memory; no GPU here); an emulated node's is not.
    in_use = panel.locator(".jp-hetero-node:not(.jp-hetero-mod-emulated) .jp-hetero-node-utilisation [role=progressbar]")
    expect(in_use).to_have_count(2)
    expect(in_use.first).to_have_attribute("aria-label", re.compile(r"^CPU: [\d.]+%$"))
    expect(a100.locator(".jp-hetero-node-utilisation")).to_contain_text("Not measured: an emulated node")
    page.screenshot(path=str(ui_output / "panel-nodes.png"))

    panel.locator(".jp-hetero-tab[data-section=admin]").click()
    tenant = panel.locator(".jp-hetero-tenant[data-tenant='default']")
    expect(tenant).to_contain_text("Default team")
    expect(tenant).to_contain_text("CC-0000")
    expect(tenant.locator("[role=progressbar]").first).to_be_visible()
    page.screenshot(path=str(ui_output / "panel-admin.png"))


def test_a_plain_member_sees_no_admin_section(browser, lab_server, ui_output):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{lab_server.base_url}lab/workspaces/member?token={MEMBER_TOKEN}")
        wait_for_lab_shell(page)
        panel = open_panel(page, "queues")
        expect(panel.locator(".jp-hetero-tab")).to_have_text(
            ["Launch", "Queues", "My work", "Schedules", "Services", "Nodes"])
        # Mia's quota bars are her tenant's: she belongs to the catalog's default tenant.
        expect(panel.locator(".jp-hetero-queue").first).to_contain_text("tenant default")
    finally:
        context.close()


@pytest.fixture
def english_afterwards(lab_server):
    """Put JupyterLab's language back to English after the test, whatever happens."""
    yield
    lab_server.api(
        "lab/api/settings/@jupyterlab/translation-extension:plugin", "PUT",
        {"raw": json.dumps({"locale": "en"})},
    )


def test_the_panel_speaks_chinese_after_switching_the_language(lab_page, english_afterwards, ui_output):
    page = lab_page
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
    page.locator(".lm-Menu-item", has_text="Language").hover()
    page.locator(".lm-Menu-item", has_text="中文").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Change interface language?")
    with page.expect_navigation(timeout=60_000):
        dialog.locator("button.jp-mod-accept").click()
    wait_for_lab_shell(page)

    panel = open_sidebar_tab(page, "Hetero")
    widen_left_sidebar(page)
    tabs = panel.locator(".jp-hetero-tab")
    expect(tabs).to_have_text(["启动", "队列", "我的工作", "定时任务", "服务", "节点", "管理"],
                              timeout=30_000)
    expect(panel.locator(".jp-hetero-title")).to_have_text("Hetero 异构算力")
    expect(panel.locator(".jp-hetero-section-title")).to_have_text("启动")
    picker = panel.locator(".jp-hetero-template-picker select")
    picker.select_option("fine-tuning")
    expect(picker.locator("option:checked")).to_have_text("模型微调")
    expect(panel.locator(".jp-hetero-description")).to_contain_text("微调")
    expect(panel.locator(".jp-hetero-flavor[data-flavor='ascend-910b']")).to_contain_text("昇腾 910B", timeout=30_000)
    expect(panel.locator(".jp-hetero-start-kernel")).to_have_text("启动内核")
    page.screenshot(path=str(ui_output / "panel-zh.png"))
    panel.locator(".jp-hetero-tab[data-section=work]").click()
    expect(panel.locator(".jp-hetero-section-title")).to_have_text("我的工作")


def run_from_palette(page: Page, label: str) -> None:
    """Run a command by its label from JupyterLab's command palette."""
    search = page.locator(".jp-ModalCommandPalette .lm-CommandPalette-input")
    # The modal palette closes when something else takes the focus; open it again if so.
    for attempt in range(3):
        # Through the menu: the keyboard shortcut is not reliable while a notebook cell has focus.
        page.locator(".lm-MenuBar-itemLabel", has_text="View").click()
        page.locator(".lm-Menu-item", has_text="Activate Command Palette").click()
        try:
            expect(search).to_be_visible(timeout=5_000)
            search.fill(label, timeout=5_000)
            break
        except (AssertionError, PlaywrightTimeoutError):
            if attempt == 2:
                raise
    # The palette re-renders as commands change; Enter runs its best match, which is the exact label.
    active = page.locator(".jp-ModalCommandPalette .lm-CommandPalette-item.lm-mod-active .lm-CommandPalette-itemLabel")
    expect(active).to_have_text(label)
    search.press("Enter")


def open_idle_notebook(page: Page, url: str) -> None:
    """Open a notebook and wait until its kernel is idle, so nothing steals focus afterwards.

    Use a workspace of the test's own (``lab/workspaces/<name>/tree/...``), so the notebook
    does not reopen in later tests' default workspace.
    """
    page.goto(url)
    expect(page.locator(".jp-NotebookPanel")).to_be_visible(timeout=60_000)
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(1, timeout=60_000)
    # A /tree/ URL also reveals the file in the file browser, which then takes the focus.
    name = url.split("?")[0].rsplit("/", 1)[-1]
    expect(page.locator(".jp-DirListing-item.jp-mod-selected", has_text=name)).to_be_visible(timeout=30_000)
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.keyboard.press("Escape")


@pytest.fixture
def default_template_afterwards(lab_server):
    """Put the panel's settings back to their defaults after the test."""
    yield
    lab_server.api("lab/api/settings/jupyter-hetero:plugin", "PUT", {"raw": "{}"})


def test_palette_submits_the_current_notebook_with_the_default_template(lab_server, lab_page, default_template_afterwards):
    page = lab_page
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": "print(6 * 7)", "outputs": [], "execution_count": None}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    lab_server.api("api/contents/palette-job.ipynb", "PUT", {"type": "notebook", "format": "json", "content": notebook})
    open_idle_notebook(page, lab_server.lab_url("lab/workspaces/test-palette-submits/tree/palette-job.ipynb"))

    # The default template, interactive, only runs kernels: the server's reason is shown.
    run_from_palette(page, "Submit Current Notebook as Hetero Job")
    expect(page.locator(".Toastify__toast", has_text="Could not submit the job")).to_contain_text(
        "template interactive does not run jobs", timeout=30_000
    )

    lab_server.api(
        "lab/api/settings/jupyter-hetero:plugin", "PUT", {"raw": json.dumps({"defaultTemplate": "data-preprocessing"})}
    )
    open_idle_notebook(page, lab_server.lab_url("lab/workspaces/test-palette-submits/tree/palette-job.ipynb"))
    run_from_palette(page, "Submit Current Notebook as Hetero Job")
    toast = page.locator(".Toastify__toast", has_text="Submitted workload")
    expect(toast).to_be_visible(timeout=30_000)
    workload_id = int(re.search(r"Submitted workload (\d+)", toast.inner_text()).group(1))

    panel = open_panel(page, "work")
    expect(workload_row(panel, workload_id)).to_have_attribute("data-state", "succeeded", timeout=90_000)


def test_launcher_item_starts_a_kernel_of_its_template(lab_server, lab_page):
    page = lab_page
    open_panel(page)  # the panel has loaded the templates, so the launcher has their items
    run_from_palette(page, "New Launcher")
    card = page.locator(".jp-LauncherCard[data-category=\"Hetero\"]", has_text="Interactive notebook")
    card.click()

    expect(page.locator(".jp-NotebookPanel")).to_have_count(1, timeout=60_000)
    status = page.locator(".jp-hetero-placement")
    expect(status).to_contain_text("experiment", timeout=30_000)
    kernel_id = status.get_attribute("data-kernel-id")
    assert lab_server.api(f"{API}/kernels/{kernel_id}/usage")["template"] == "interactive"
    lab_server.api(f"api/kernels/{kernel_id}", "DELETE")


def luminance(css_color: str) -> float:
    """Relative luminance (0 black .. 1 white) of a computed ``rgb(...)``/``rgba(...)`` colour."""
    red, green, blue = (int(part) / 255 for part in re.findall(r"[\d.]+", css_color)[:3])
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


THEMES = "lab/api/settings/@jupyterlab/apputils-extension:themes"


@pytest.fixture
def light_theme_afterwards(lab_server):
    """Put JupyterLab's theme back to light after the test, whatever happens."""
    yield
    lab_server.api(THEMES, "PUT", {"raw": json.dumps({"theme": "JupyterLab Light"})})


def test_the_panel_follows_the_dark_theme_and_the_keyboard(lab_server, lab_page, light_theme_afterwards, ui_output):
    page = lab_page
    lab_server.api(THEMES, "PUT", {"raw": json.dumps({"theme": "JupyterLab Dark"})})
    page.reload()
    wait_for_lab_shell(page)
    expect(page.locator("body[data-jp-theme-light='false']")).to_have_count(1, timeout=30_000)

    panel = open_panel(page, "launch")
    # Arrow keys and End move between sections, as in any tab list.
    panel.locator(".jp-hetero-tab[data-section=launch]").focus()
    page.keyboard.press("ArrowRight")
    queues = panel.locator(".jp-hetero-tab[data-section=queues]")
    expect(queues).to_be_focused()
    expect(queues).to_have_attribute("aria-selected", "true")
    page.keyboard.press("End")
    expect(panel.locator(".jp-hetero-tab[data-section=admin]")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")

    # Every colour comes from the theme: a dark card with light text.
    card = panel.locator(".jp-hetero-queue").first
    expect(card).to_be_visible()
    background = card.evaluate("element => getComputedStyle(element).backgroundColor")
    text = card.locator(".jp-hetero-card-title").evaluate("element => getComputedStyle(element).color")
    assert luminance(background) < 0.25 < 0.6 < luminance(text), (background, text)
    page.screenshot(path=str(ui_output / "panel-dark.png"))
