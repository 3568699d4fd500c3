"""The sandbox of local workloads: its command line by value, then real sandboxed replicas of the local backend
(stop, exit records, their own folders, the submitter's Unix account)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from jupyter_hetero.backends.base import Launch, Placed
from jupyter_hetero.backends.local.isolation import NoAccount, WorkloadIsolation, find_sandbox, interpreter_paths
from jupyter_hetero.backends.local.processes import LocalBackend
from jupyter_hetero.backends.local.sandbox import Account, SandboxSpec, SandboxTools, sandbox_argv

from ..accounts import ensure_account

P = Path
TOOLS = SandboxTools()


def _mounts(argv: list[str]) -> list[str]:
    """The part of a sandbox's command line after the fixed /dev and /proc set-up, up to its command."""
    start = argv.index("/proc") + 1
    return argv[start:argv.index("--")]


@pytest.mark.parametrize(("spec", "mounts"), [
    pytest.param(SandboxSpec(), ["--perms", "1777", "--tmpfs", "/tmp"], id="nothing asked: a private /tmp only"),
    pytest.param(SandboxSpec(hidden=(P("/srv/work"),), writable=(P("/srv/work/jobs/7/attempts/1"),)),
                 ["--perms", "1777", "--tmpfs", "/tmp", "--perms", "0755", "--tmpfs", "/srv/work",
                  "--perms", "0755", "--dir", "/srv/work/jobs", "--perms", "0755", "--dir", "/srv/work/jobs/7",
                  "--perms", "0755", "--dir", "/srv/work/jobs/7/attempts",
                  "--bind", "/srv/work/jobs/7/attempts/1", "/srv/work/jobs/7/attempts/1"],
                 id="its own folder under the hidden work dir: shown writable, its parents made passable"),
    pytest.param(SandboxSpec(hidden=(P("/home"), P("/home/bob")), writable=(P("/home/alice"),)),
                 ["--perms", "0755", "--tmpfs", "/home", "--perms", "1777", "--tmpfs", "/tmp",
                  "--bind", "/home/alice", "/home/alice"],
                 id="homes hidden, the submitter's shown; a hidden path under a hidden one adds nothing"),
    pytest.param(SandboxSpec(hidden=(P("/data"),), readable=(P("/data"),), writable=(P("/data"),)),
                 ["--bind", "/data", "/data", "--perms", "1777", "--tmpfs", "/tmp"],
                 id="one path named three times: writable wins"),
    pytest.param(SandboxSpec(readable=(P("/root/.pyenv"), P("/root/.pyenv/lib"))),
                 ["--perms", "1777", "--tmpfs", "/tmp", "--ro-bind", "/root/.pyenv", "/root/.pyenv"],
                 id="a readable path inside a readable one is shown once"),
    pytest.param(SandboxSpec(hidden=(P("/srv/state"),), writable=(P("/srv/team"),),
                             masked=(P("/srv/state/hetero.sqlite"), P("/srv/team/hetero.sqlite"))),
                 ["--perms", "1777", "--tmpfs", "/tmp", "--perms", "0755", "--tmpfs", "/srv/state",
                  "--bind", "/srv/team", "/srv/team", "--ro-bind", "/dev/null", "/srv/team/hetero.sqlite"],
                 id="a store file is masked where a shown folder holds it, not where it is hidden already"),
])
def test_the_sandbox_mounts_what_its_spec_says_deeper_rules_on_top(spec, mounts):
    assert _mounts(sandbox_argv(spec, ["true"], TOOLS)) == mounts


def test_the_sandbox_has_its_own_processes_and_leaves_group_signals_to_the_command():
    argv = sandbox_argv(SandboxSpec(cwd=P("/work")), ["python", "job.py"], TOOLS)
    assert argv[:4] == ["env", "--ignore-signal=INT,TERM", "bwrap", "--unshare-pid"]
    assert argv[argv.index("--proc") + 1] == "/proc" and argv[argv.index("--chdir") + 1] == "/work"
    assert argv[argv.index("--") + 1:] == ["env", "--default-signal=INT,TERM", "python", "job.py"]
    assert "--cap-add" not in argv  # as root it keeps no capability; as anyone else it has none


def test_a_submitters_account_is_taken_inside_the_sandbox_with_only_the_rights_to_become_it():
    argv = sandbox_argv(SandboxSpec(account=Account("ann", 1234, 1235)), ["id"], TOOLS)
    command = argv[argv.index("--") + 1:]
    assert command == ["setpriv", "--reuid=1234", "--regid=1235", "--init-groups", "--inh-caps=-all",
                       "env", "--default-signal=INT,TERM", "id"]
    caps = [argv[i + 1] for i, part in enumerate(argv[:argv.index("--")]) if part == "--cap-add"]
    assert caps == ["CAP_SETUID", "CAP_SETGID"]


def test_the_programs_on_the_path_stay_visible_inside_a_hidden_home(tmp_path):
    # pyenv's `python` is a shim in a home the sandbox hides: the shim, its libexec and its version file must show,
    # or a job's plain `python ...` exits 127 (it did, once the sandbox hid /root).
    shims, versions, elsewhere = tmp_path / "pyenv" / "shims", tmp_path / "pyenv" / "versions", tmp_path / "bin"
    for folder in (shims, versions, elsewhere):
        folder.mkdir(parents=True)
    shown = interpreter_paths({"PATH": f"{shims}:relative/bin:{tmp_path / 'gone'}:{elsewhere}",
                               "PYENV_ROOT": str(tmp_path / "pyenv")})
    assert {shims, tmp_path / "pyenv", elsewhere} <= set(shown)
    assert tmp_path / "gone" not in shown and not any(not p.is_absolute() for p in shown)
    # Without PYENV_ROOT (JupyterHub keeps PATH alone for the services it starts), the shims name their root.
    assert tmp_path / "pyenv" in interpreter_paths({"PATH": f"{shims}/"})
    assert tmp_path not in interpreter_paths({"PATH": str(elsewhere)})  # a plain bin shows no more than itself


# -- real sandboxed replicas ------------------------------------------------------------------------------------

TOOLS_HERE, WHY_NOT = find_sandbox()
needs_bwrap = pytest.mark.skipif(TOOLS_HERE is None, reason=f"no sandbox here: {WHY_NOT} (make sandbox)")


def _backend(tmp_path: Path, **settings) -> LocalBackend:
    backend = LocalBackend()
    backend.isolation = WorkloadIsolation(
        server_dirs=(tmp_path / "runtime", tmp_path / "work"), root_dir=tmp_path / "root", tools=TOOLS_HERE,
        interpreter=interpreter_paths(), **settings)
    for folder in ("runtime", "work", "root"):
        (tmp_path / folder).mkdir(exist_ok=True)
    return backend


def _launch(tmp_path: Path, code: str, user: str = "owner") -> Launch:
    attempt = tmp_path / "work" / "jobs" / "1" / "attempts" / "1"
    attempt.mkdir(parents=True, exist_ok=True)
    placed = Placed(kind="job", tenant="t", user=user, queue="q", template="x", flavor="cpu", replicas=1, image="",
                    cpu_milli=1000, memory_mib=512)
    return Launch(workload_id=1, attempt=1, replica=0, node="local", argv=["command", "--", sys.executable, "-c", code],
                  env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}, cwd=tmp_path / "root",
                  log_path=attempt / "log.txt", exit_path=attempt / "exit-0.json", placed=placed)


def _until_stopped(backend, handle, timeout=20.0):
    deadline = time.monotonic() + timeout
    while backend.running(handle):
        assert time.monotonic() < deadline, "the sandbox did not end"
        time.sleep(0.05)


def _until_logged(path: Path, text: str, timeout=20.0):
    deadline = time.monotonic() + timeout
    while text not in (path.read_text() if path.exists() else ""):
        assert time.monotonic() < deadline, f"{text!r} never logged: {path.read_text() if path.exists() else ''}"
        time.sleep(0.05)


@needs_bwrap
def test_a_sandboxed_replica_gets_its_stop_itself_and_its_runner_records_how_it_ended(tmp_path):
    backend = _backend(tmp_path)
    code = ("import os, signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *_: (open('stopped.txt', 'w').write('graceful'), sys.exit(5)))\n"
            "print('ready', len([p for p in os.listdir('/proc') if p.isdigit()]), flush=True)\ntime.sleep(60)")
    handle = backend.launch(_launch(tmp_path, code))
    log = tmp_path / "work" / "jobs" / "1" / "attempts" / "1" / "log.txt"
    _until_logged(log, "ready")
    assert log.read_text().split()[-1] == "3", log.read_text()  # bwrap's init, the runner, the command: no other
    backend.signal_stop(handle)
    _until_stopped(backend, handle)
    assert backend.exit(handle).code == 5  # the command's own handler ran: the sandbox did not cut the stop short
    assert (tmp_path / "root" / "stopped.txt").read_text() == "graceful"


@needs_bwrap
def test_a_runner_cut_off_in_a_sandbox_is_still_found_by_its_attempt_folder(tmp_path):
    backend = _backend(tmp_path)
    launch = _launch(tmp_path, "import time; print('ready', flush=True); time.sleep(60)")
    handle = backend.launch(launch)
    _until_logged(launch.log_path, "ready")
    assert LocalBackend().stop_cut_off(launch.exit_path.parent) >= 1
    _until_stopped(backend, handle)


@needs_bwrap
def test_with_unix_accounts_a_replica_runs_as_its_submitter_and_writes_its_own_folders(tmp_path):
    ann = ensure_account("hetero-t-ann")
    ensure_account("hetero-t-ben")
    backend = _backend(tmp_path, unix_accounts=True)
    code = ("import os\nfrom pathlib import Path\n"
            "ben = Path('/home/hetero-t-ben').exists()\n"
            "print('as', os.getuid(), 'home', Path.home().exists() and os.access(os.path.expanduser('~hetero-t-ann'),"
            " os.W_OK), 'ben', ben, flush=True)")
    launch = _launch(tmp_path, code, user="hetero-t-ann")
    handle = backend.launch(launch)
    _until_stopped(backend, handle)
    assert backend.exit(handle).code == 0, launch.log_path.read_text()  # its exit record, written as ann
    line = launch.log_path.read_text().split()
    assert line[line.index("as") + 1] == str(ann.pw_uid), line
    assert line[line.index("ben") + 1] == "False"  # another account's home is not there


@needs_bwrap
@pytest.mark.parametrize(("user", "reason"), [
    pytest.param("hetero-t-nobody-here", "has no Unix account", id="a user with no account"),
    pytest.param("daemon", "is a system account", id="a system account"),
])
def test_with_unix_accounts_a_user_who_is_no_user_account_is_refused_with_the_reason(tmp_path, user, reason):
    if os.geteuid() != 0:
        pytest.skip("workloads run as accounts only under a root server")
    backend = _backend(tmp_path, unix_accounts=True)
    with pytest.raises(NoAccount, match=reason):
        backend.launch(_launch(tmp_path, "print('never')", user=user))


def test_the_server_probe_tells_why_there_is_no_sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, setpriv or env here
    tools, why = find_sandbox()
    assert tools is None and "bwrap" in why and "bubblewrap" in why
