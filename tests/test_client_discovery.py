"""How the notebook-side client finds its server: env first, then jupyter_server's list of running servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jupyter_hetero.notebook.client import HeteroClient, ServerNotFound


@pytest.fixture
def plain_notebook(monkeypatch, jp_environ):
    """A process outside any workload, with no hetero variables set."""
    for name in ("JUPYTER_HETERO_URL", "JUPYTER_HETERO_TOKEN", "HETERO_WORKLOAD_ID"):
        monkeypatch.delenv(name, raising=False)


def _server_file(runtime_dir, pid: int, port: int, mtime: float) -> None:
    path = runtime_dir / f"jpserver-{pid}.json"
    path.write_text(json.dumps({"pid": pid, "url": f"http://127.0.0.1:{port}/", "token": f"token-{port}"}))
    os.utime(path, (mtime, mtime))


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_the_newest_running_server_is_chosen_and_a_dead_ones_file_is_cleared(plain_notebook, jp_runtime_dir):
    _server_file(jp_runtime_dir, os.getppid(), 8001, mtime=1000)
    _server_file(jp_runtime_dir, os.getpid(), 8002, mtime=2000)
    dead = _dead_pid()
    _server_file(jp_runtime_dir, dead, 8003, mtime=3000)
    client = HeteroClient.discover()
    assert (client.url, client.token) == ("http://127.0.0.1:8002/", "token-8002")
    # As jupyter_server itself does: a stopped server's info file is removed when seen.
    assert not (jp_runtime_dir / f"jpserver-{dead}.json").exists()


def test_an_explicit_url_or_the_environment_comes_before_the_running_servers(plain_notebook, jp_runtime_dir,
                                                                             monkeypatch):
    _server_file(jp_runtime_dir, os.getpid(), 8002, mtime=2000)
    assert HeteroClient.discover("http://h:1/", "t").url == "http://h:1/"
    monkeypatch.setenv("JUPYTER_HETERO_URL", "http://h:2/")
    monkeypatch.setenv("JUPYTER_HETERO_TOKEN", "credential")
    assert (HeteroClient.discover().url, HeteroClient.discover().token) == ("http://h:2/", "credential")


def test_no_running_server_says_how_to_start_or_name_one(plain_notebook, jp_runtime_dir):
    with pytest.raises(ServerNotFound, match="no running Jupyter server found"):
        HeteroClient.discover()
