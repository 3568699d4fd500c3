"""Where `jupyter hetero submit` runs a job, and with which Python (issue 37 item 1): from a project folder inside
the server's root, `submit -- python hello.py` runs hello.py in that folder with the submitting environment's python;
a folder outside the root is refused, naming cwd. A real server and the real CLI, each a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import DEMO_NODES
from .harness import LabServer, ServerLayout, kill_runners_under, start_hetero_server, until

pytestmark = pytest.mark.slow

HELLO = "import os, sys\nprint('cwd', os.getcwd())\nprint('python', sys.executable)\n"


def environment_like_this_one(where: Path) -> Path:
    """A second environment: a venv of this one's packages at ``where``; its ``bin/python`` is its own path
    (what ``sys.executable`` says in it), which no PATH of the server's names."""
    bin_dir = where / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(os.path.realpath(sys.executable))
    (where / "pyvenv.cfg").write_text((Path(sys.prefix) / "pyvenv.cfg").read_text(encoding="utf-8"), encoding="utf-8")
    packages = Path(next(p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix)))
    (where / packages.relative_to(sys.prefix)).parent.mkdir(parents=True)
    (where / packages.relative_to(sys.prefix)).symlink_to(packages)
    return bin_dir / "python"


def cli(python: Path, server: LabServer, command: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "jupyter_hetero.cli", command, "--url", server.base_url, "--token",
                           server.token, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_submit_runs_in_the_callers_folder_with_the_callers_python_and_refuses_a_folder_outside_the_root(tmp_path):
    layout = ServerLayout.create(tmp_path / "site")
    project = layout.notebooks / "project"
    project.mkdir()
    (project / "hello.py").write_text(HELLO, encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "hello.py").write_text(HELLO, encoding="utf-8")
    (layout.notebooks / "escape").symlink_to(outside)
    python = environment_like_this_one(layout.notebooks / "env")  # a project's venv: inside the root, as jobs see it
    try:
        with start_hetero_server(layout, "where", DEMO_NODES) as server:
            submitted = cli(python, server, "submit", "--template", "data-preprocessing", "--", "python", "hello.py",
                            cwd=project)
            assert submitted.returncode == 0, submitted.stderr
            workload_id = submitted.stdout.split()[-1]

            def status() -> dict:
                return json.loads(cli(python, server, "status", workload_id, "--json", cwd=project).stdout)

            done = until(lambda: (s := status())["state"] in ("succeeded", "failed") and s, "the job to end")
            log = cli(python, server, "logs", workload_id, cwd=project).stdout
            assert done["state"] == "succeeded", log
            assert f"cwd {project}\n" in log and f"python {python}\n" in log, log
            assert (done["spec"]["cwd"], done["spec"]["python"]) == (str(project), str(python))
            shown = cli(python, server, "status", workload_id, cwd=project).stdout
            assert f"  in {project}, python {python}\n" in shown, shown

            for where, given in ((outside, ()), (project, ("--cwd", "../..")),
                                 (project, ("--cwd", str(layout.notebooks / "escape")))):
                refused = cli(python, server, "submit", "--template", "data-preprocessing", *given, "--", "python",
                              "hello.py", cwd=where)
                assert refused.returncode == 1 and "cwd: " in refused.stderr and "outside" in refused.stderr, (
                    given, refused.stdout, refused.stderr)
            assert [w["id"] for w in json.loads(cli(python, server, "ls", "--json", cwd=project).stdout)] == [
                int(workload_id)]  # nothing refused was stored
    finally:
        kill_runners_under(tmp_path)
