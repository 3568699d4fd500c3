"""The replica runner, as a real process: stops reach the work even when they race its start."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

# Runs the runner with Popen wrapped so that the scheduler's SIGTERM lands after the runner is
# up but before its child exists: the moment a cancel right after admission can hit.
_STOP_DURING_START = """
import os, signal, subprocess, sys
from jupyter_hetero.kernel import runner

real_popen = subprocess.Popen

def popen_after_a_stop(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    return real_popen(*args, **kwargs)

subprocess.Popen = popen_after_a_stop
sys.exit(runner.main(["--exit-file", sys.argv[1], "command", "--", sys.executable, "-c", "import time; time.sleep(60)"]))
"""


def test_a_stop_that_races_the_start_of_the_work_still_stops_it(tmp_path):
    exit_file = tmp_path / "exit.json"
    started = time.monotonic()

    subprocess.run([sys.executable, "-c", _STOP_DURING_START, str(exit_file)], timeout=30, check=False)

    assert time.monotonic() - started < 20, "the work ran on although its stop had arrived"
    assert json.loads(exit_file.read_text())["exit_code"] == -signal.SIGTERM


def _notebook_job(tmp_path, kernelspec: str | None, provisioner: dict | None = None) -> subprocess.CompletedProcess:
    """Run a one-cell notebook job that needs the env of kernelspec ``second`` (in a temp Jupyter path)."""
    import nbformat

    spec = tmp_path / "jupyter" / "kernels" / "second"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Second", "language": "python", "env": {"WHICH_KERNELSPEC": "second"},
        "metadata": {"kernel_provisioner": provisioner} if provisioner else {},
    }))
    notebook = nbformat.v4.new_notebook()
    if kernelspec:
        notebook.metadata["kernelspec"] = {"name": kernelspec, "display_name": kernelspec, "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell("import os; print('kernelspec', os.environ.get('WHICH_KERNELSPEC'))")]
    nbformat.write(notebook, tmp_path / "in.ipynb")
    env = {**os.environ, "JUPYTER_PATH": str(tmp_path / "jupyter")}
    return subprocess.run([sys.executable, "-m", "jupyter_hetero.kernel.runner", "--exit-file", str(tmp_path / "exit.json"),
                           "notebook", str(tmp_path / "in.ipynb"), "--output", str(tmp_path / "out.ipynb")],
                          env=env, timeout=120, capture_output=True, text=True, check=False)


def _printed(tmp_path) -> str:
    import nbformat

    executed = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    return "".join(output.get("text", "") for output in executed.cells[0].outputs)


@pytest.mark.parametrize(
    "provisioner",
    [
        pytest.param(None, id="a plain second kernelspec"),
        # Written on a hetero kernel: the job is placed already, so the spec starts as a local kernel.
        pytest.param({"provisioner_name": "hetero-provisioner", "config": {"template": "interactive"}},
                     id="a kernelspec with the hetero provisioner"),
    ],
)
def test_a_notebook_job_runs_on_the_notebooks_own_kernelspec(tmp_path, provisioner):
    result = _notebook_job(tmp_path, "second", provisioner)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "exit.json").read_text())["exit_code"] == 0
    assert _printed(tmp_path).strip() == "kernelspec second"


def test_a_notebook_without_a_kernelspec_runs_on_python3(tmp_path):
    result = _notebook_job(tmp_path, None)
    assert result.returncode == 0, result.stderr
    assert _printed(tmp_path).strip() == "kernelspec None"


def test_a_notebook_whose_kernelspec_is_missing_fails_with_the_reason(tmp_path):
    result = _notebook_job(tmp_path, "no-such-kernelspec")  # the temp Jupyter path holds only "second"
    assert result.returncode == 1
    assert json.loads((tmp_path / "exit.json").read_text())["exit_code"] == 1
    assert "the notebook's kernelspec 'no-such-kernelspec' is not installed where the job runs" in result.stderr
    assert "second" in result.stderr.rsplit("installed:", 1)[1]


# A job that checkpoints when asked to stop, as a training loop does: it says it is up, then waits for
# SIGTERM (or SIGINT), writes its checkpoint and exits 3; left alone it ends after 60 s without one.
_CHECKPOINTING_JOB = """
import signal, sys, time
from pathlib import Path

folder = Path(sys.argv[1])

def checkpoint(signum, _frame):
    (folder / "checkpoint").write_text(signal.Signals(signum).name)
    sys.exit(3)

signal.signal(signal.SIGTERM, checkpoint)
signal.signal(signal.SIGINT, checkpoint)
(folder / "up").touch()
time.sleep(60)
"""


def _wait_for(path, deadline_s: float, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + deadline_s
    while not path.exists():
        assert process.poll() is None, f"the runner ended before {path.name} appeared"
        assert time.monotonic() < deadline, f"{path.name} did not appear within {deadline_s:g} s"
        time.sleep(0.05)


def _pid_one_of(unshare: subprocess.Popen) -> int:
    """The runner's PID outside the namespace: the one child ``unshare --fork`` made, PID 1 inside."""
    children = f"/proc/{unshare.pid}/task/{unshare.pid}/children"
    deadline = time.monotonic() + 10
    while not (found := open(children).read().split()):
        assert time.monotonic() < deadline, "unshare started no child"
        time.sleep(0.05)
    return int(found[0])


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="a PID namespace needs root and util-linux")
@pytest.mark.parametrize("signum", [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGINT, id="SIGINT")])
def test_the_runner_as_pid_1_passes_a_stop_on_to_its_command_and_records_the_exit(tmp_path, signum):
    # As in a container: the runner is PID 1 of its own PID namespace and the stop is sent to it alone.
    job = tmp_path / "job.py"
    job.write_text(_CHECKPOINTING_JOB)
    exit_file = tmp_path / "exit.json"
    unshare = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-m",
                                "jupyter_hetero.kernel.runner", "--exit-file", str(exit_file),
                                "command", "--", sys.executable, str(job), str(tmp_path)])
    runner = _pid_one_of(unshare)
    try:
        _wait_for(tmp_path / "up", 30, unshare)

        os.kill(runner, signum)

        unshare.wait(timeout=20)
    finally:
        if unshare.poll() is None:
            os.kill(runner, signal.SIGKILL)  # PID 1's end takes its whole namespace with it
            unshare.wait()
    assert (tmp_path / "checkpoint").read_text() == signum.name, "the job's handler did not run"
    assert json.loads(exit_file.read_text())["exit_code"] == 3
