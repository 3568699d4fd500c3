"""A hub session in a real browser: log in to a real JupyterHub as a tenant's user, choose a profile on the
spawn page, land in JupyterLab, see the tenant's quotas in the panel (answered by the hub's one hetero
service, through the user's own server), and submit a job that the service runs."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from ..harness import wait_for_lab_shell
from ..hub.harness import CHP, PASSWORD, HubProcess, hetero_service
from .conftest import _save_failure_evidence
from .test_panel_sections import choose_template, open_panel, submit_job, workload_row

pytestmark = pytest.mark.ui

SCRIPT, OUTPUT = "hello_hub.py", "hello from the hub's service"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub-ui")
    catalog = team_catalog(root)
    service, service_url = hetero_service(root, catalog, DEMO_NODES)
    extra = service + f"""
import jupyter_hetero.hub
c.Spawner.default_url = "/lab"
c.Spawner.options_form = jupyter_hetero.hub.options_form
c.Spawner.options_from_form = jupyter_hetero.hub.options_from_form
c.Spawner.pre_spawn_hook = jupyter_hetero.hub.pre_spawn_hook
c.HeteroHub.service_url = "{service_url}"
c.HeteroHub.catalog_file = "{catalog}"
"""
    with HubProcess.start(root, groups={"nlp-team": ["bob"]}, users=("alice",), extra_config=extra) as running:
        yield running


@pytest.fixture
def hub_page(request, browser, hub, ui_output):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    try:
        yield page
    finally:
        report = getattr(request.node, "ui_call_report", None)
        if report is None or report.failed:
            console.append(f"hub log:\n{hub.log()}")
            _save_failure_evidence(page, console, ui_output, request.node.nodeid)
        context.close()


def test_a_tenant_user_logs_in_chooses_a_profile_sees_the_quotas_and_submits_a_job(hub, hub_page, ui_output):
    page = hub_page
    page.goto(hub.url + "hub/login")
    page.locator("#username_input").fill("alice")
    page.locator("#password_input").fill(PASSWORD)
    page.locator("#login_submit").click()

    # The spawn page: alice's tenant (vision) profiles, with live capacity from the service.
    page.goto(hub.url + "hub/spawn")
    profiles = page.locator("label.hetero-profile")
    expect(profiles.first).to_be_visible(timeout=30_000)
    expect(page.locator("form")).to_contain_text("Interactive")
    page.screenshot(path=str(ui_output / "hub-spawn.png"))
    page.locator("input[name=profile]").first.check()
    page.locator("form input[type=submit], form button[type=submit]").first.click()

    # JupyterLab in alice's server; its panel answers from the hub's service.
    page.wait_for_url("**/user/alice/lab**", timeout=120_000)
    wait_for_lab_shell(page)
    panel = open_panel(page, "queues")
    expect(panel.locator(".jp-hetero-queue").first).to_contain_text("tenant vision", timeout=30_000)
    page.screenshot(path=str(ui_output / "hub-panel-quotas.png"))

    # A job from the panel on a script in alice's server; the service runs it.
    token = hub.token_for("alice")
    hub._request(f"user/alice/api/contents/{SCRIPT}", "PUT",
                 {"type": "file", "format": "text", "content": f"print({OUTPUT!r})\n"}, token=token)
    panel = open_panel(page)
    choose_template(panel, "data-preprocessing")
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id='filebrowser']").click()
    page.locator(".jp-DirListing-item", has_text=SCRIPT).click()
    panel = open_panel(page)
    panel.locator(".jp-hetero-use-selection").click()
    workload_id = submit_job(page, panel)
    panel.locator(".jp-hetero-tab[data-section=work]").click()
    row = workload_row(panel, workload_id)
    expect(row).to_have_attribute("data-state", "succeeded", timeout=60_000)
    page.screenshot(path=str(ui_output / "hub-panel-job.png"))
    status, workload = hub.get(f"services/hetero/hetero/api/v1/workloads/{workload_id}", token)
    assert (status, workload["user"], workload["tenant"]) == (200, "alice", "vision")
