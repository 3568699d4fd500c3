"""Browser tests: a real ``jupyter lab`` subprocess with jupyter-hetero, driven by Debian chromium.

Fixtures: ``lab_server`` (session; ``.lab_url()``, ``.api(path, method, body)``), ``browser``
(session), ``lab_page`` (a fresh logged-in JupyterLab page per test) and ``ui_output``
(where screenshots go: ``<repo>/test-output/ui``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ..harness import CHROMIUM, CHROMIUM_ARGS, LabServer, ServerLayout, kill_runners_under, wait_for_lab_shell

REPO = Path(__file__).resolve().parents[2]
UI_OUTPUT = REPO / "test-output" / "ui"


# A personal token of a plain member of the default tenant (the server's own token is its owner,
# a platform admin).
MEMBER_TOKEN = "member-token-for-ui-tests"


def _catalog_with_member(layout: ServerLayout) -> Path:
    """The shipped catalog with mia named in its default tenant (the default tenant is the owner's only)."""
    from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH

    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    next(t for t in data["tenants"] if t["name"] == data["default_tenant"])["users"] = ["mia"]
    path = layout.state / "catalog.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def hetero_server_args(layout: ServerLayout) -> list[str]:
    """Every jupyter-hetero setting the UI test server runs with, in one place."""
    return [
        "--ServerApp.identity_provider_class=jupyter_hetero.auth.TeamIdentityProvider",
        f"--HeteroApp.catalog_file={_catalog_with_member(layout)}",
        f"--TeamIdentityProvider.user_tokens={MEMBER_TOKEN}=mia",
        f"--HeteroApp.emulated_nodes_file={REPO / 'binder' / 'demo-nodes.yaml'}",
        f"--HeteroApp.db_url=sqlite:///{layout.state / 'hetero.sqlite'}",
        f"--HeteroApp.work_dir={layout.state / 'work'}",
        "--HeteroApp.schedule_interval=0.5",
    ]


# pytest-jupyter (loaded by tests/conftest.py) makes every test open and close an asyncio
# loop and clean up an in-process ServerApp. Playwright's sync API runs its own loop on
# this thread, so closing that loop fails at teardown; UI tests use a subprocess server
# and need neither, so these names resolve to no-ops below tests/ui.
@pytest.fixture
def jp_asyncio_loop():
    yield None


@pytest.fixture
def jp_server_cleanup():
    yield


@pytest.fixture(scope="session")
def ui_output() -> Path:
    """``<repo>/test-output/ui``, created; screenshots and server logs go here."""
    UI_OUTPUT.mkdir(parents=True, exist_ok=True)
    return UI_OUTPUT


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory, ui_output) -> Iterator[LabServer]:
    """One ``jupyter lab`` for the whole session, killed by process group at the end."""
    layout = ServerLayout.create(tmp_path_factory.mktemp("jupyter-lab"))
    server = LabServer.start(
        layout,
        log_path=ui_output / "jupyter-lab.log",
        extra_args=hetero_server_args(layout),
    )
    try:
        yield server
    finally:
        server.stop()
        kill_runners_under(layout.root)  # a service's replicas run until scaled down


@pytest.fixture(scope="session")
def browser():
    """Headless Debian chromium driven by Playwright; a missing browser fails, it never skips."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} not found: UI tests need Debian's chromium (apt-get install -y chromium). "
            "Do not run `playwright install`; it downloads from hosts this project cannot reach.",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def lab_page(request, browser, lab_server, ui_output):
    """A fresh browser context logged into JupyterLab with the shell loaded.

    On failure a screenshot and the browser console go to ``test-output/ui/failures/``.
    """
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
    try:
        # A workspace of the test's own: it starts from a clean layout, and the notebooks it
        # opens do not reopen in later tests (which would steal focus and match their locators).
        workspace = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-")[:80]
        page.goto(lab_server.lab_url(f"lab/workspaces/{workspace}"))
        wait_for_lab_shell(page)
        yield page
    finally:
        report = getattr(request.node, "ui_call_report", None)
        if report is None or report.failed:
            _save_failure_evidence(page, console, ui_output, request.node.nodeid)
        context.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep the call-phase report on the item, so ``lab_page`` knows whether the test failed."""
    report = yield
    if report.when == "call":
        item.ui_call_report = report
    return report


def _save_failure_evidence(page, console: list[str], ui_output: Path, nodeid: str) -> None:
    failures = ui_output / "failures"
    failures.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid)
    try:
        page.screenshot(path=str(failures / f"{stem}.png"), full_page=True)
    except Exception as error:  # a crashed page must not hide the test's own failure
        console.append(f"screenshot failed: {error}")
    (failures / f"{stem}.console.log").write_text("\n".join(console) + "\n")
