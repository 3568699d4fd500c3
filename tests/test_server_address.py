"""Where workloads and the CLI find the server (issue 33, item 7), with a real `jupyter server` whose configured port
is taken, and a newer non-hetero server beside it in the runtime directory; the CLI runs as a subprocess."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from .conftest import DEMO_NODES
from .harness import TOKEN, ServerLayout, _signal_group, free_port, kill_runners_under, until


def _get(url: str, token: str = TOKEN):
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())
    except OSError:
        return None


@pytest.fixture(scope="module")
def moved_server(tmp_path_factory):
    """A hetero server asked for a port that another process holds: it binds the next free one. Yields (layout,
    the port asked for, the server's runtime info)."""
    tmp_path = tmp_path_factory.mktemp("moved-server")
    layout = ServerLayout.create(tmp_path)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    asked = taken.getsockname()[1]
    state = layout.state
    command = [sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root", "--ip=127.0.0.1",
               f"--port={asked}", "--ServerApp.port_retries=50", f"--IdentityProvider.token={TOKEN}",
               f"--ServerApp.root_dir={layout.notebooks}", f"--HeteroApp.db_url=sqlite:///{state / 'hetero.sqlite'}",
               f"--HeteroApp.work_dir={state / 'work'}", f"--HeteroApp.emulated_nodes_file={DEMO_NODES}",
               "--HeteroApp.local_node_name=local", "--HeteroApp.schedule_interval=0.2"]
    with (tmp_path / "server.log").open("wb") as log:
        server = subprocess.Popen(command, cwd=layout.notebooks, env=layout.environ(), stdin=subprocess.DEVNULL,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        runtime = layout.jupyter_runtime / f"jpserver-{server.pid}.json"
        info = until(lambda: runtime.exists() and json.loads(runtime.read_text() or "null"), "the runtime file",
                     timeout=90)
        until(lambda: _get(f"{info['url']}hetero/api/v1/version"), f"{info['url']} to answer", timeout=90)
        yield layout, asked, info
    finally:
        _signal_group(server.pid, 15)
        server.wait(15)
        taken.close()
        kill_runners_under(tmp_path)


@pytest.fixture(scope="module")
def newer_plain_server(moved_server):
    """A newer running server in the same runtime directory that is no hetero server (a plain HTTP one)."""
    layout, _asked, _info = moved_server
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                               cwd=layout.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    until(lambda: _answers(url), "the plain server", timeout=90)
    path = layout.jupyter_runtime / f"jpserver-{process.pid}.json"
    path.write_text(json.dumps({"pid": process.pid, "url": url, "token": "not-hetero", "port": port}))
    os.utime(path, (time.time() + 60, time.time() + 60))
    yield url
    process.kill()
    process.wait()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def _cli(layout: ServerLayout, *args: str) -> subprocess.CompletedProcess:
    env = {name: value for name, value in layout.environ().items()
           if name not in ("JUPYTER_HETERO_URL", "JUPYTER_HETERO_TOKEN", "HETERO_WORKLOAD_ID")}
    return subprocess.run([sys.executable, "-m", "jupyter", "hetero", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=layout.notebooks)  # a job runs where it is submitted from


def test_jobs_get_the_bound_address_and_the_cli_finds_the_hetero_server_by_itself(moved_server, newer_plain_server):
    layout, asked, info = moved_server
    assert info["port"] != asked
    submitted = _cli(layout, "submit", "--template", "data-preprocessing", "--", sys.executable, "-c",
                     "import os; print('URL', os.environ['JUPYTER_HETERO_URL'])")
    assert submitted.returncode == 0, submitted.stderr
    workload_id = submitted.stdout.split()[-1]
    api = f"{info['url']}hetero/api/v1/workloads/{workload_id}"
    done = until(lambda: (w := _get(api)) and w["state"] in ("succeeded", "failed") and w, "the job to end", timeout=90)
    logs = _cli(layout, "logs", workload_id)
    assert done["state"] == "succeeded", logs.stdout + logs.stderr
    assert f"URL http://127.0.0.1:{info['port']}/" in logs.stdout


def test_a_refusal_names_the_server_that_refused(moved_server, newer_plain_server):
    layout, _asked, info = moved_server
    refused = _cli(layout, "ls", "--token", "not-this-servers-token")
    assert refused.returncode == 1
    assert f"(server {info['url']})" in refused.stderr, refused.stderr
