"""A job is untrusted: from inside a real job of bob's, on a real team server whose users each have their own
directory, every way the threat model names to reach another user or the server is tried, and must fail, while
the job's own work (its log, outputs, working directory) goes on as before.

Without the sandbox (``HeteroApp.sandbox=none``) every probe here succeeds: the attacks are real.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..builders import TOKENS, team_catalog
from ..conftest import DEMO_NODES, _token
from ..harness import TOKEN, LabServer, ServerLayout, free_port, kill_runners_under, start_hetero_server, until

# Run by bob's job: each probe reports what it reached ("" or False when it reached nothing).
PROBE = r'''
import json, os, sys
from pathlib import Path
runtime, store, alice_dir = sys.argv[1:4]
server_token = Path("token.txt").read_text()  # not an argument: its own command line would hold it
own_token = os.environ["JUPYTER_HETERO_TOKEN"]

def read(path):
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""

def writes(path):
    try:
        Path(path).write_text("planted by bob")
        return True
    except OSError:
        return False

pids = [p for p in os.listdir("/proc") if p.isdigit()]
environs = [read(f"/proc/{p}/environ") for p in pids]
tokens = {v.split(b"=", 1)[1].decode() for e in environs for v in e.split(b"\0") if v.startswith(b"JUPYTER_HETERO_TOKEN=")}
found = {
    "foreign_credentials": sorted(tokens - {own_token}),
    "server_cmdline": any(server_token.encode() in read(f"/proc/{p}/cmdline") for p in pids),
    "runtime_files": sorted(os.listdir(runtime)) if os.path.isdir(runtime) else [],
    "store": read(store)[:16].decode(errors="replace"),
    "alice_secret": read(os.path.join(alice_dir, "secret.txt")).decode(),
    "wrote_alice_dir": writes(os.path.join(alice_dir, "planted.txt")),
    "wrote_outside": writes(os.path.join(os.path.dirname(alice_dir), "planted.txt")),
    "wrote_etc": writes("/etc/hetero-planted"),
    "own_cwd": os.getcwd(),
    "wrote_cwd": writes("mine.txt"),
    "wrote_outputs": writes(os.path.join(os.environ["HETERO_OUTPUT_DIR"], "result.txt")),
}
print("PROBE " + json.dumps(found), flush=True)
'''
WAIT = "import time\ntime.sleep(300)\n"


@dataclass(frozen=True)
class Site:
    server: LabServer
    layout: ServerLayout
    users: Path

    def api(self, path: str, user: str, method: str = "GET", body=None):
        request = urllib.request.Request(f"{self.server.base_url}hetero/api/v1/{path}", method=method,
                                         data=None if body is None else json.dumps(body).encode())
        request.add_header("Authorization", f"token {_token(user)}")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def wait(self, workload_id: int, user: str, states: set[str], timeout: float = 60.0) -> dict:
        def reached():
            workload = self.api(f"workloads/{workload_id}", user)
            return workload if workload["state"] in states else None

        return until(reached, f"workload {workload_id} in {states}", timeout)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    """A team server whose members each have a directory (users/<name>); alice keeps a secret in hers."""
    root = tmp_path_factory.mktemp("isolation")
    layout = ServerLayout.create(root)
    users = layout.notebooks / "users"
    for name in ("alice", "bob"):
        (users / name).mkdir(parents=True)
    (users / "alice" / "secret.txt").write_text("alice's secret", encoding="utf-8")
    (users / "alice" / "wait.py").write_text(WAIT, encoding="utf-8")
    (users / "bob" / "probe.py").write_text(PROBE, encoding="utf-8")
    (users / "bob" / "token.txt").write_text(TOKEN, encoding="utf-8")
    config = {"ServerApp": {"identity_provider_class": "jupyter_hetero.auth.TeamIdentityProvider"},
              "TeamIdentityProvider": {"user_tokens": TOKENS},
              "HeteroApp": {"catalog_file": team_catalog(root), "owner_is_platform_admin": False,
                            "user_root_template": f"{users}/{{username}}"}}
    (layout.jupyter_config / "jupyter_server_config.json").write_text(json.dumps(config), encoding="utf-8")
    try:
        with start_hetero_server(layout, "isolation", DEMO_NODES) as running:
            yield Site(running, layout, users)
    finally:
        kill_runners_under(root)


def test_bobs_job_reaches_nothing_of_alice_or_the_server_and_still_does_its_own_work(site):
    alice = site.api("workloads", "alice", "POST",
                     {"kind": "job", "template": "data-preprocessing", "script": {"path": "wait.py"}})
    site.wait(alice["id"], "alice", {"running"})
    runtime = site.layout.jupyter_runtime
    assert list(runtime.glob("jpserver-*.json")), "the server wrote no runtime file to hide"
    store = site.layout.state / "hetero.sqlite"
    args = [str(runtime), str(store), str(site.users / "alice")]
    bob = site.api("workloads", "bob", "POST",
                   {"kind": "job", "template": "data-preprocessing", "script": {"path": "probe.py", "args": args}})
    ended = site.wait(bob["id"], "bob", {"succeeded", "failed", "cancelled"})
    log = (site.layout.state / "work" / "jobs" / str(bob["id"]) / "attempts" / "1" / "log.txt").read_text()
    found = json.loads(next(line for line in log.splitlines() if line.startswith("PROBE ")).removeprefix("PROBE "))
    try:
        assert found["foreign_credentials"] == [], "bob's job read alice's job's credential from /proc"
        assert found["server_cmdline"] is False, "bob's job read the server's token from its command line"
        assert found["runtime_files"] == [], "bob's job listed the server's runtime directory"
        assert not found["store"].startswith("SQLite"), "bob's job read the store"
        assert found["alice_secret"] == "", "bob's job read alice's directory"
        # What it writes elsewhere lands, at most, in its own empty stand-ins, never on the machine.
        assert not (site.users / "alice" / "planted.txt").exists(), "bob's job wrote into alice's directory"
        assert not (site.users / "planted.txt").exists(), "bob's job wrote outside its directories"
        assert found["wrote_etc"] is False
        # Its own work: working directory, outputs and log as without a sandbox.
        assert found["own_cwd"] == str(site.users / "bob")
        assert found["wrote_cwd"] and (site.users / "bob" / "mine.txt").read_text() == "planted by bob"
        assert found["wrote_outputs"]
        assert (site.layout.state / "work" / "jobs" / str(bob["id"]) / "outputs" / "result.txt").is_file()
        assert ended["state"] == "succeeded", ended
    finally:
        site.api(f"workloads/{alice['id']}", "alice", "DELETE")


def test_a_team_server_without_a_sandbox_refuses_to_start_unless_its_admin_opts_out(tmp_path):
    layout = ServerLayout.create(tmp_path)
    config = {"ServerApp": {"identity_provider_class": "jupyter_hetero.auth.TeamIdentityProvider"},
              "TeamIdentityProvider": {"user_tokens": TOKENS}, "HeteroApp": {"sandbox": "none"}}
    (layout.jupyter_config / "jupyter_server_config.json").write_text(json.dumps(config), encoding="utf-8")
    command = [sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root", "--ip=127.0.0.1",
               f"--port={free_port()}", f"--ServerApp.root_dir={layout.notebooks}",
               f"--HeteroApp.db_url=sqlite:///{layout.state / 'hetero.sqlite'}", f"--HeteroApp.work_dir={layout.state}"]
    refused = subprocess.run(command, env=layout.environ(), cwd=layout.notebooks, capture_output=True, text=True,
                             timeout=120, stdin=subprocess.DEVNULL)
    assert refused.returncode != 0
    assert "refusing to start: workloads cannot be sandboxed" in refused.stderr
    assert "HeteroApp.allow_unsandboxed_workloads = True" in refused.stderr
