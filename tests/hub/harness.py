"""A real JupyterHub for the tests: configurable-http-proxy, DummyAuthenticator, SimpleLocalProcessSpawner.

    with HubProcess.start(tmp_path, groups={"vision": ["ann"], "nlp": ["bob"]}) as hub:
        hub.api("users/ann/server", "POST")                  # as the tests' admin service
        token = hub.token_for("ann")
        hub.get("user/ann/hetero/api/v1/version", token)     # through the proxy, as ann

The hub runs in its own process group on 127.0.0.1 with every port free a moment before; its proxy
is the project's own `configurable-http-proxy` (labextension's devDependencies). Users' servers are
`jupyterhub-singleuser` processes with the extension loaded, as a hub's users would have them.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_hetero.hub.config import SERVICE_SCOPES

from ..accounts import account_python, ensure_account
from ..conftest import REPO
from ..harness import free_port

__all__ = ["CHP", "HubProcess", "account_servers", "hetero_service"]

CHP = REPO / "labextension" / "node_modules" / ".bin" / "configurable-http-proxy"
PASSWORD = "hetero-test"


@dataclass
class HubProcess:
    process: subprocess.Popen
    url: str
    admin_token: str
    root: Path
    tokens: dict[str, str] = field(default_factory=dict)  # users' hub tokens, by name (see with_service)

    @classmethod
    def start(cls, root: Path, *, groups: dict[str, list[str]], users: tuple[str, ...] = (),
              server_args: tuple[str, ...] = (), extra_config: str = "", timeout: float = 60.0) -> HubProcess:
        """``users``: users in no group; ``extra_config``: more lines of jupyterhub_config.py (services)."""
        root.mkdir(parents=True, exist_ok=True)
        port, hub_port, api_port = free_port(), free_port(), free_port()
        admin_token = secrets.token_hex(16)
        config = root / "jupyterhub_config.py"
        text = _config(root, port, hub_port, api_port, admin_token, groups, users, server_args) + extra_config
        config.write_text(text, encoding="utf-8")
        log = (root / "hub.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=root, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "CONFIGPROXY_AUTH_TOKEN": secrets.token_hex(16)},
        )
        hub = cls(process, f"http://127.0.0.1:{port}/", admin_token, root)
        try:
            hub._wait(lambda: hub._status("hub/health") == 200, "the hub to answer", timeout)
        except BaseException:
            hub.stop()
            raise
        return hub

    def __enter__(self) -> HubProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        """The hub, its proxy and every user's server (each in the hub's process group or its own)."""
        for name in self._users():
            self._request(f"hub/api/users/{name}/server", "DELETE", token=self.admin_token, check=False)
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # The hub starts its managed services in sessions of their own: one the hub did not stop (it was killed,
        # or it gave up on it) would run on, a scheduler and an engine process with it, after the test.
        _kill_left_under(self.root)

    def log(self) -> str:
        return (self.root / "hub.log").read_text(encoding="utf-8", errors="replace")[-6000:]

    # -- the hub's REST API, as the tests' admin service ------------------------------------------

    def api(self, path: str, method: str = "GET", body: Any = None) -> Any:
        return self._request(f"hub/api/{path}", method, body, token=self.admin_token)

    def with_service(self, users: tuple[str, ...], timeout: float = 90.0) -> HubProcess:
        """Tokens of ``users`` (in ``tokens``), once the hub's hetero service answers the first of them."""
        self.tokens = {name: self.token_for(name) for name in users}
        self._wait(lambda: self.get("services/hetero/hetero/api/v1/version", self.tokens[users[0]])[0] == 200,
                   "the hetero service to answer", timeout)
        return self

    def token_for(self, user: str) -> str:
        """A new API token of ``user`` (what their server and kernels would hold)."""
        return self.api(f"users/{user}/tokens", "POST", {"note": "tests", "expires_in": 3600})["token"]

    def spawn(self, *users: str, timeout: float = 90.0) -> None:
        """Start ``users``' servers, all at once, and wait until the hub says each is ready."""
        for user in users:
            self._request(f"hub/api/users/{user}/server", "POST", token=self.admin_token, check=False)
        for user in users:
            self._wait(lambda: (self.api(f"users/{user}").get("servers", {}).get("", {}) or {}).get("ready"),
                       f"{user}'s server to be ready", timeout)

    # -- through the proxy, as a user --------------------------------------------------------------

    def get(self, path: str, token: str, timeout: float = 30) -> tuple[int, Any]:
        """GET through the proxy with ``token``: (status, decoded JSON or text)."""
        return self._request(path, token=token, check=False, with_status=True, timeout=timeout)

    def _users(self) -> list[str]:
        try:
            return [user["name"] for user in self.api("users")]
        except (OSError, urllib.error.URLError, ValueError):
            return []

    def _status(self, path: str) -> int | None:
        try:
            return self._request(path, check=False, with_status=True)[0]
        except (OSError, urllib.error.URLError):
            return None

    def _request(self, path: str, method: str = "GET", body: Any = None, *, token: str | None = None,
                 check: bool = True, with_status: bool = False, timeout: float = 30) -> Any:
        data = json.dumps(body).encode() if body is not None else (b"" if method in ("POST", "PUT") else None)
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if token:
            request.add_header("Authorization", f"token {token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            if check:
                raise AssertionError(f"{method} {path}: {error.code} {error.read()[:500]!r}") from None
            status, raw = error.code, error.read()
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode(errors="replace")
        return (status, decoded) if with_status else decoded

    def _wait(self, predicate, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"the hub exited ({self.process.returncode}) waiting for {what}:\n{self.log()}")
            try:
                if predicate():
                    return
            except (OSError, urllib.error.URLError, AssertionError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}:\n{self.log()}")
            time.sleep(0.2)


def hetero_service(root: Path, catalog: str, nodes: Path, extra_args: tuple[str, ...] = (),
                   api_token: str | None = None) -> tuple[str, str]:
    """The hub configuration that runs `jupyter hetero service` (with ``catalog`` and emulated ``nodes``),
    lets users and their servers' tokens reach it, and tells the servers where it is; and its URL.
    ``api_token``: the service's own hub token, when a test must hold it (the hub makes one otherwise)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/services/hetero/"
    command = [sys.executable, "-m", "jupyter_hetero.cli", "service", "--allow-root",
               f"--HeteroApp.catalog_file={catalog}", f"--HeteroApp.db_url=sqlite:///{root / 'hetero.sqlite'}",
               f"--HeteroApp.work_dir={root / 'work'}", f"--HeteroApp.emulated_nodes_file={nodes}",
               "--HeteroApp.local_node_name=local", "--HeteroApp.schedule_interval=0.2",
               f"--HeteroApp.user_root_template={root / 'homes'}/{{username}}",  # each user's server's root
               *extra_args]
    token = f', "api_token": {api_token!r}' if api_token else ""
    return f"""
c.JupyterHub.services.append({{"name": "hetero", "url": "http://127.0.0.1:{port}", "command": {command!r}{token}}})
c.JupyterHub.load_roles.append({{"name": "hetero-service", "scopes": {SERVICE_SCOPES!r}, "services": ["hetero"]}})
c.JupyterHub.load_roles.append({{"name": "user", "scopes": ["self", "access:services!service=hetero",
                                                          "read:services!service=hetero"]}})
c.JupyterHub.load_roles.append({{"name": "server", "scopes": ["users:activity!user", "access:servers!server",
                                                            "access:services!service=hetero",
                                                            "read:services!service=hetero"]}})
# Told where the service is, but for carol: her server asks the hub's API for it.
c.Spawner.environment = {{"JUPYTER_HETERO_SERVICE_URL": lambda spawner: "" if spawner.user.name == "carol" else "{url}"}}
""", url


def account_servers(*users: str) -> str:
    """The hub configuration for servers run as their users' Unix accounts (``users``, created if missing), as
    LocalProcessSpawner (and HeteroLocalSpawner) runs them from a root hub: by an interpreter they may execute."""
    for user in users:
        ensure_account(user)
    return f"""
c.Spawner.cmd = [{account_python()!r}, "-m", "jupyterhub.singleuser"]
"""


def _config(root: Path, port: int, hub_port: int, api_port: int, admin_token: str,
            groups: dict[str, list[str]], loners: tuple[str, ...], server_args: tuple[str, ...]) -> str:
    users = sorted({user for members in groups.values() for user in members} | set(loners))
    return f"""
import sys
c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.JupyterHub.db_url = "sqlite:///{root / 'hub.sqlite'}"
c.JupyterHub.cookie_secret_file = "{root / 'cookie_secret'}"
c.ConfigurableHTTPProxy.command = ["{CHP}"]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.pid_file = "{root / 'proxy.pid'}"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "{PASSWORD}"
c.Authenticator.allowed_users = {set(users)!r}
c.JupyterHub.load_groups = {{name: {{"users": members}} for name, members in {groups!r}.items()}}
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{root / 'homes'}/{{username}}"
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--allow-root", *{list(server_args)!r}]  # the tests may run as root
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90
c.JupyterHub.services = [{{"name": "tests", "api_token": "{admin_token}"}}]
c.JupyterHub.load_roles = [{{"name": "tests", "services": ["tests"],
                            "scopes": ["admin:users", "admin:servers", "tokens", "read:users", "read:groups"]}}]
"""


def run_in_kernel(hub: HubProcess, user: str, kernel_id: str, code: str, token: str, timeout: float = 60) -> str:
    """What ``code`` prints in one of ``user``'s kernels, run through their server's kernel websocket (as a
    notebook does, behind the hub's proxy)."""
    import asyncio
    import uuid

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    async def run() -> str:
        url = hub.url.replace("http", "ws", 1) + f"user/{user}/api/kernels/{kernel_id}/channels"
        socket = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {token}"},
                                                     connect_timeout=timeout))
        msg_id = uuid.uuid4().hex
        socket.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": user, "session": uuid.uuid4().hex,
                       "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        printed = []
        try:
            while True:
                message = json.loads(await asyncio.wait_for(socket.read_message(), timeout))
                if message.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                if message["msg_type"] == "stream":
                    printed.append(message["content"]["text"])
                elif message["msg_type"] == "error":
                    raise AssertionError(f"the kernel raised: {message['content']}")
                elif message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                    return "".join(printed)
        finally:
            socket.close()

    return asyncio.run(run())


def _kill_left_under(root: Path) -> int:
    """Kill every process still running whose command line names a path under ``root``; how many."""
    import psutil

    killed = 0
    for process in psutil.process_iter(["cmdline"]):
        if process.pid != os.getpid() and any(str(root) in part for part in process.info["cmdline"] or ()):
            try:
                process.kill()
                killed += 1
            except psutil.Error:
                pass
    return killed
