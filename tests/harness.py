"""A real ``jupyter lab`` in a subprocess and a Debian chromium, for browser tests.

```python
with LabServer.start(ServerLayout.create(tmp), log_path=..., extra_args=[...]) as lab:
    lab.api("hetero/api/v1/version")     # -> {"version": "0.1.0", ...}
    page.goto(lab.lab_url())            # /lab?token=...
```
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "LabApiError",
    "kill_runners_under",
    "LabServer",
    "ServerLayout",
    "free_port",
    "isolated_server_args",
    "open_sidebar_tab",
    "start_hetero_server",
    "until",
    "wait_for_lab_shell",
]

CHROMIUM = Path("/usr/bin/chromium")

# Keeps a headless Debian chromium quiet and offline: no sandbox (we run as root),
# no GPU, no background fetches that could stall or pollute a test.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]

TOKEN = "hetero-ui-test-token"

# JupyterLab settings that stop the news and update checks from calling out and
# from popping notifications over the UI under test.
_SEEDED_USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


class LabApiError(Exception):
    """A REST call to the test server answered with an HTTP error; ``body`` is its decoded JSON, if any."""

    def __init__(self, method: str, url: str, status: int, body: Any) -> None:
        super().__init__(f"{method} {url} -> HTTP {status}: {body!r}")
        self.status = status
        self.body = body


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class ServerLayout:
    """The private directories of one test server, all under ``root``."""

    root: Path

    @classmethod
    def create(cls, root: Path) -> ServerLayout:
        layout = cls(root)
        for directory in (
            layout.notebooks,
            layout.workspaces,
            layout.user_settings,
            layout.jupyter_config,
            layout.jupyter_data,
            layout.jupyter_runtime,
            layout.state,
        ):
            directory.mkdir(parents=True, exist_ok=True)
        for relative, settings in _SEEDED_USER_SETTINGS.items():
            path = layout.user_settings / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(settings))
        return layout

    @property
    def notebooks(self) -> Path:
        return self.root / "notebooks"

    @property
    def workspaces(self) -> Path:
        return self.root / "workspaces"

    @property
    def user_settings(self) -> Path:
        return self.root / "user-settings"

    @property
    def jupyter_config(self) -> Path:
        return self.root / "jupyter-config"

    @property
    def jupyter_data(self) -> Path:
        return self.root / "jupyter-data"

    @property
    def jupyter_runtime(self) -> Path:
        return self.root / "jupyter-runtime"

    @property
    def state(self) -> Path:
        """Where server-side state such as the hetero SQLite file goes."""
        return self.root / "state"

    def environ(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The server's environment: user-level Jupyter dirs private, the environment's own share kept.

        Only the *user* config/data/runtime dirs move; ``{sys.prefix}/share/jupyter`` and
        ``{sys.prefix}/etc/jupyter`` stay on Jupyter's search paths, which is where
        ``pip install`` put the labextension and the server-extension switch.
        """
        env = dict(os.environ)
        for leaked in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTER_PREFER_ENV_PATH", "JUPYTER_TOKEN"):
            env.pop(leaked, None)
        env.update(
            JUPYTER_CONFIG_DIR=str(self.jupyter_config),
            JUPYTER_DATA_DIR=str(self.jupyter_data),
            JUPYTER_RUNTIME_DIR=str(self.jupyter_runtime),
            JUPYTER_PLATFORM_DIRS="0",
            PYTHONUNBUFFERED="1",
        )
        return {**env, **(extra or {})}


def isolated_server_args(layout: ServerLayout, *, lab: bool = True) -> list[str]:
    """What every test server adds to its command line: this harness's token, no other port than its own, and
    (for JupyterLab) ``layout``'s workspaces and settings, no extension manager and no update checks."""
    server_args = ["--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}"]
    lab_args = [
        f"--LabApp.workspaces_dir={layout.workspaces}",
        f"--LabApp.user_settings_dir={layout.user_settings}",
        "--LabApp.extension_manager=readonly",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    return server_args + (lab_args if lab else [])


class LabServer:
    """A ``jupyter lab`` subprocess in its own process group, reachable with a fixed token."""

    def __init__(self, process: subprocess.Popen, port: int, log_path: Path) -> None:
        self.process = process
        self.port = port
        self.log_path = log_path
        self.token = TOKEN
        self.base_url = f"http://127.0.0.1:{port}/"

    @classmethod
    def start(
        cls,
        layout: ServerLayout,
        *,
        log_path: Path,
        extra_args: Sequence[str] = (),
        startup_timeout: float = 120.0,
        app: str = "lab",
        env: dict[str, str] | None = None,
    ) -> LabServer:
        """Start the server and return once ``/api/status`` answers; raise with the log tail if it never does.

        ``app="server"`` starts a plain ``jupyter server`` (no JupyterLab) for API-only tests; ``env`` adds to
        its environment (e.g. a PATH with recorded vendor tools)."""
        port = free_port()
        command = [
            sys.executable,
            "-m",
            "jupyter",
            app,
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--ServerApp.root_dir={layout.notebooks}",
            *isolated_server_args(layout, lab=app == "lab"),
            *extra_args,
        ]
        return cls.launch(command, layout, port=port, log_path=log_path, startup_timeout=startup_timeout, env=env)

    @classmethod
    def launch(
        cls,
        command: Sequence[str],
        layout: ServerLayout,
        *,
        port: int,
        log_path: Path,
        startup_timeout: float = 120.0,
        env: dict[str, str] | None = None,
    ) -> LabServer:
        """Run ``command``, a Jupyter server that listens on ``port`` with this harness's token (see
        :func:`isolated_server_args`), in ``layout.notebooks`` and ``layout``'s environment; return once it answers."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                list(command),
                cwd=layout.notebooks,
                env=layout.environ(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Own process group, so teardown also reaches kernels and other children.
                start_new_session=True,
            )
        server = cls(process, port, log_path)
        try:
            server._wait_until_ready(startup_timeout)
        except BaseException:
            server.stop()
            raise
        return server

    def __enter__(self) -> LabServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def lab_url(self, path: str = "lab", **query: str) -> str:
        """An authenticated browser URL, e.g. ``lab_url("lab/tree/x.ipynb")``."""
        params = urllib.parse.urlencode({**query, "token": self.token})
        return f"{self.base_url}{path.lstrip('/')}?{params}"

    def api(self, path: str, method: str = "GET", body: Any = None, *, timeout: float = 30.0) -> Any:
        """Call a REST endpoint with the token and return its decoded JSON (None when empty).

        ``lab.api("hetero/api/v1/version")``; ``lab.api("api/contents/x", "PUT", {...})``.
        Raises ``LabApiError`` for HTTP errors, carrying the status and the decoded body.
        """
        url = self.base_url + path.lstrip("/")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"token {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return _decode(response.read())
        except urllib.error.HTTPError as error:
            raise LabApiError(method, url, error.code, _decode(error.read())) from None

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the server printed, for failure messages."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "<no log>"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 15.0) -> None:
        """Terminate the whole process group, escalating to SIGKILL if it lingers."""
        if self.process.poll() is None:
            _signal_group(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        # Children (kernels) may outlive the server process itself.
        _signal_group(self.process.pid, signal.SIGKILL)
        if self.process.poll() is None:
            self.process.wait(timeout)

    def _wait_until_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_error: object = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"jupyter lab exited with code {self.process.returncode} before it was ready; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            try:
                self.api("api/status", timeout=2.0)
                return
            except (OSError, LabApiError) as error:
                last_error = error
            time.sleep(0.25)  # poll interval, bounded by the deadline above
        raise TimeoutError(
            f"jupyter lab did not answer /api/status within {timeout:.0f}s (last error: {last_error}); "
            f"log {self.log_path}:\n{self.log_tail()}"
        )


def until(predicate, what: str, timeout: float = 30.0):
    """Poll ``predicate`` until it returns something truthy (returned); fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


async def until_async(predicate, what: str, timeout: float = 30.0, interval: float = 0.05):
    """:func:`until` for a test on the event loop; ``predicate`` may be a coroutine function."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(interval)


@contextlib.contextmanager
def workload_rows_loaded():
    """The ids of the workload rows the store loads while the block runs (what a tick reads).

        with workload_rows_loaded() as loaded:
            scheduler.tick()
        assert loaded == []
    """
    from sqlalchemy import event  # noqa: PLC0415 - only the service tests need it

    from jupyter_hetero.store.tables import WorkloadRow  # noqa: PLC0415

    loaded: list[int] = []

    def listener(row, _context):
        loaded.append(row.id)

    event.listen(WorkloadRow, "load", listener)
    try:
        yield loaded
    finally:
        event.remove(WorkloadRow, "load", listener)


def start_hetero_server(layout: ServerLayout, name: str, nodes: Path, *extra_args: str,
                        db_url: str | None = None, env: dict[str, str] | None = None) -> LabServer:
    """A `jupyter server` with jupyter-hetero over ``layout``'s store (or ``db_url``), with ``nodes`` as its
    emulated nodes."""
    return LabServer.start(
        layout, app="server", log_path=layout.root / f"{name}.log", env=env,
        extra_args=[f"--HeteroApp.db_url={db_url or 'sqlite:///' + str(layout.state / 'hetero.sqlite')}",
                    f"--HeteroApp.work_dir={layout.state / 'work'}",
                    f"--HeteroApp.emulated_nodes_file={nodes}",
                    "--HeteroApp.local_node_name=local",
                    "--HeteroApp.schedule_interval=0.2", *extra_args],
    )


def wait_for_lab_shell(page, timeout_ms: float = 90_000) -> None:
    """Wait until the JupyterLab shell is up and the splash screen is gone."""
    page.locator("#main.jp-LabShell").wait_for(state="attached", timeout=timeout_ms)
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=timeout_ms)


def open_sidebar_tab(page, title: str, side: str = "left", timeout_ms: float = 30_000):
    """Activate the sidebar tab whose caption is ``title`` and return the locator of its panel.

    Clicking the current tab would collapse the sidebar, so a tab already open is left alone.
    """
    tab = page.locator(f".jp-SideBar.jp-mod-{side} .lm-TabBar-tab[title={json.dumps(title)}]")
    tab.wait_for(state="visible", timeout=timeout_ms)
    if "lm-mod-current" not in (tab.get_attribute("class") or ""):
        tab.click()
    panel_id = tab.get_attribute("data-id")
    panel = page.locator(f"#{panel_id}")
    panel.wait_for(state="visible", timeout=timeout_ms)
    return panel


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def kill_runners_under(root: Path) -> int:
    """Kill what the local backend started for a server whose work lies under ``root`` (a service's replicas run
    until they are scaled down, so they outlive a test's server): each runner's process group. How many."""
    import psutil

    killed = 0
    for process in psutil.process_iter(["cmdline", "cwd"]):
        line = process.info["cmdline"] or []
        runner = "jupyter_hetero.kernel.runner" in line and any(part.startswith(str(root)) for part in line)
        # Or a command a runner started, in its attempt's folder (orphaned, should a test kill its runner).
        if runner or (process.info.get("cwd") or "").startswith(str(root) + "/"):
            try:
                os.killpg(os.getpgid(process.pid), signal.SIGKILL) if runner else process.kill()
                killed += 1
            except (ProcessLookupError, PermissionError, psutil.Error):
                pass
    return killed
