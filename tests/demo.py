"""The demo as ``make demo`` starts it, on a copy of a fresh clone, for tests that need the product as a newcomer
first sees it.

```python
layout = ServerLayout.create(tmp)
with start_demo(layout, log_path=tmp / "demo.log") as lab:   # make demo's own command, in layout.notebooks
    lab.api("hetero/api/v1/nodes")                              # this machine and binder/demo-nodes.yaml's nodes
```

The clone is ``layout.notebooks``: the repository's files as they are in this working tree (what the installed
package runs), with ``.venv`` a link to the environment running the tests, so commands written for a clone
(``.venv/bin/jupyter hetero ...``, ``binder/demo-nodes.yaml``) run there as written and write nothing into the
repository. The server runs Makefile's ``demo`` recipe itself (``make -n``), with only what isolates it added: a free
port, a fixed token, private Jupyter directories and HOME (``demo_environ``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .harness import LabServer, ServerLayout, free_port, isolated_server_args

__all__ = ["REPO", "demo_command", "demo_environ", "fresh_clone", "start_demo"]

REPO = Path(__file__).resolve().parent.parent


def fresh_clone(into: Path) -> Path:
    """Copy the repository's files into ``into`` and link ``.venv`` to this environment; return ``into``.

    The files are those a clone has, as this working tree has them (new ones not yet committed too): the code the
    installed package runs, which a kernel or a job started in the clone imports from it."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout
    for relative in filter(None, listed.decode().split("\0")):
        source = REPO / relative
        if not source.is_file():  # deleted in the working tree, not yet in the index
            continue
        target = into / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    venv = into / ".venv"
    if not venv.exists():
        venv.symlink_to(Path(sys.prefix), target_is_directory=True)
    return into


def demo_command(clone: Path, port: int) -> list[str]:
    """The command ``make demo PORT=port`` runs once everything is installed, as the clone's Makefile says it."""
    # -o install: take the install step as done (it is: this environment), so only the demo recipe is printed.
    printed = subprocess.run(["make", "--no-print-directory", "-s", "-n", "-o", "install", "demo", f"PORT={port}"],
                             cwd=clone, capture_output=True, text=True, check=True).stdout
    command = shlex.split(printed.replace("\\\n", " "))  # a recipe's continued lines are one command
    assert command and command[0].endswith("/jupyter") and "lab" in command, f"make demo runs {printed!r}"
    return command


def demo_environ(layout: ServerLayout) -> dict[str, str]:
    """A new terminal's environment on the demo's machine: the layout's private Jupyter directories (where the CLI
    and kernels find the server), a HOME of its own, and no virtual environment on PATH (the README names
    ``.venv/bin`` itself)."""
    venv_bin = str(Path(sys.prefix) / "bin")
    path = os.pathsep.join(part for part in os.environ.get("PATH", "").split(os.pathsep) if part != venv_bin)
    environ = layout.environ({"HOME": _home(layout), "PATH": path})
    for leaked in ("VIRTUAL_ENV", "JUPYTER_HETERO_URL", "JUPYTER_HETERO_TOKEN", "KUBECONFIG"):
        environ.pop(leaked, None)
    return environ


def start_demo(layout: ServerLayout, *, log_path: Path, extra_args: Sequence[str] = (),
               startup_timeout: float = 180.0) -> LabServer:
    """``make demo`` in a fresh clone at ``layout.notebooks``, isolated; ``extra_args`` go after its own."""
    clone = fresh_clone(layout.notebooks)
    port = free_port()
    command = [*demo_command(clone, port), *isolated_server_args(layout), *extra_args]
    return LabServer.launch(command, layout, port=port, log_path=log_path, startup_timeout=startup_timeout,
                            env={"HOME": _home(layout)})


def _home(layout: ServerLayout) -> str:
    home = layout.root / "home"
    home.mkdir(exist_ok=True)
    return str(home)
