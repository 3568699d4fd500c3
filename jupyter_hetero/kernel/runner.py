"""The process that runs one replica of a job and reports how it ended.

    python -m jupyter_hetero.kernel.runner --exit-file EXIT command -- python train.py --lr 0.1
    python -m jupyter_hetero.kernel.runner --exit-file EXIT script train.py --lr 0.1
    python -m jupyter_hetero.kernel.runner --exit-file EXIT code cell.py
    python -m jupyter_hetero.kernel.runner --exit-file EXIT notebook in.ipynb --output out.ipynb --parameters '{"lr": 0.1}'

It starts the work as a child, waits, and writes ``{"exit_code", "peak_rss_mib", "ended_at", "cpu_seconds",
"io_read_bytes", "io_write_bytes"}`` to
the exit file atomically. The scheduler reads that file, so a job's outcome survives a restart of
the server: a process the server did not start can still be judged by what it left behind.
SIGTERM (from the scheduler, to the whole process group) reaches the child; the runner outlives
it to write the file. In a container the runner is PID 1 and a stop signals it alone: it passes
SIGTERM and SIGINT on to its command's process group, or the work would run on to its SIGKILL.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["main", "notebook_kernel_name", "notebook_parameters_cell"]

# The entry point name of jupyter_hetero.kernel.provisioner.HeteroProvisioner.
HETERO_PROVISIONER = "hetero-provisioner"


def _write_exit(path: Path, code: int) -> None:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the command and what it reaped, exactly, at its end
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({
        "exit_code": code, "peak_rss_mib": round(used.ru_maxrss / 1024, 1), "ended_at": time.time(),
        "cpu_seconds": round(used.ru_utime + used.ru_stime, 3),
        # Blocks of 512 bytes that went to or came from storage: the kernel's read_bytes and write_bytes.
        "io_read_bytes": used.ru_inblock * 512, "io_write_bytes": used.ru_oublock * 512,
    }))
    os.replace(tmp, path)


def notebook_parameters_cell(parameters: dict) -> str:
    """Source of the cell injected after a notebook's ``parameters`` cell to set its parameters (names the server
    checked are Python identifiers)."""
    lines = ["# Parameters injected by jupyter-hetero"]
    lines += [f"{name} = {value!r}" for name, value in parameters.items()]
    return "\n".join(lines)


def notebook_kernel_name(notebook: dict) -> str:
    """The kernelspec the notebook was written for (its ``metadata.kernelspec.name``), else ``python3``."""
    return ((notebook.get("metadata") or {}).get("kernelspec") or {}).get("name") or "python3"


def _placed_kernel_manager():
    """A kernel manager whose kernelspecs never ask the scheduler for a placement.

    A notebook written on a hetero kernel names a kernelspec with the hetero provisioner; the job
    running it is already placed (its devices are in this process's environment), and the
    provisioner only works inside the server, so such a spec starts here as a plain local kernel.
    """
    from jupyter_client.kernelspec import KernelSpecManager  # noqa: PLC0415
    from jupyter_client.manager import KernelManager  # noqa: PLC0415
    from traitlets import default  # noqa: PLC0415

    class PlacedKernelSpecManager(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str):
            spec = super().get_kernel_spec(kernel_name)
            provisioner = (spec.metadata or {}).get("kernel_provisioner") or {}
            if provisioner.get("provisioner_name") == HETERO_PROVISIONER:
                spec.metadata = {k: v for k, v in spec.metadata.items() if k != "kernel_provisioner"}
            return spec

    class PlacedKernelManager(KernelManager):
        @default("kernel_spec_manager")
        def _kernel_spec_manager_default(self):
            return PlacedKernelSpecManager(data_dir=self.data_dir)

    return PlacedKernelManager


def _run_notebook(source: str, output: str, parameters: dict, timeout: int | None) -> int:
    import nbformat  # noqa: PLC0415 - only notebook jobs need these
    from nbclient import NotebookClient  # noqa: PLC0415
    from jupyter_client.kernelspec import KernelSpecManager  # noqa: PLC0415
    from nbclient.exceptions import CellExecutionError  # noqa: PLC0415

    notebook = nbformat.read(source, as_version=4)
    if parameters:
        cell = nbformat.v4.new_code_cell(notebook_parameters_cell(parameters))
        cell.metadata["tags"] = ["injected-parameters"]
        # As papermill does: right after the cell tagged "parameters" (its defaults), else first.
        tagged = [i for i, c in enumerate(notebook.cells) if "parameters" in c.get("metadata", {}).get("tags", [])]
        notebook.cells.insert(tagged[0] + 1 if tagged else 0, cell)
    kernel_name = notebook_kernel_name(notebook)
    # Checked first: nbclient, asked for a kernelspec that does not exist, can hang instead of failing.
    installed = KernelSpecManager().find_kernel_specs()
    if kernel_name not in installed:
        print(f"jupyter-hetero: the notebook's kernelspec {kernel_name!r} is not installed where the job runs "
              f"(installed: {', '.join(sorted(installed))})", file=sys.stderr, flush=True)
        return 1
    client = NotebookClient(notebook, timeout=timeout, kernel_name=kernel_name,
                            kernel_manager_class=_placed_kernel_manager(),
                            resources={"metadata": {"path": str(Path(source).parent)}})
    code = 0
    try:
        client.execute()
    except CellExecutionError as exc:
        print(exc, file=sys.stderr)
        code = 1
    finally:
        nbformat.write(notebook, output)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jupyter_hetero.kernel.runner")
    parser.add_argument("--exit-file", required=True, type=Path)
    kinds = parser.add_subparsers(dest="kind", required=True)
    command = kinds.add_parser("command")
    command.add_argument("argv", nargs=argparse.REMAINDER)
    script = kinds.add_parser("script")
    script.add_argument("path")
    script.add_argument("args", nargs=argparse.REMAINDER)
    code = kinds.add_parser("code")
    code.add_argument("path")
    notebook = kinds.add_parser("notebook")
    notebook.add_argument("path")
    notebook.add_argument("--output", required=True)
    notebook.add_argument("--parameters", default="{}")
    notebook.add_argument("--cell-timeout", type=int, default=None)
    args = parser.parse_args(argv)

    if args.kind == "notebook":
        # nbclient runs the kernel as our child; a SIGTERM to the group stops it and us alike.
        signal.signal(signal.SIGTERM, lambda *_: (_write_exit(args.exit_file, -signal.SIGTERM), os._exit(143)))
        result = _run_notebook(args.path, args.output, json.loads(args.parameters), args.cell_timeout)
        _write_exit(args.exit_file, result)
        return result

    if args.kind == "command":
        target = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    elif args.kind == "script":
        target = [sys.executable, args.path, *args.args]
    else:
        target = [sys.executable, args.path]
    if not target:
        parser.error("nothing to run")
    return _run_command(target, args.exit_file)


def _reset_stop_signals() -> None:
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


# The signals a stop sends: SIGTERM from the scheduler or a container runtime, SIGINT from a terminal.
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _run_command(target: list[str], exit_file: Path) -> int:
    # The runner's own process (what a container runtime signals) is PID 1 of the pod's namespace; the
    # local backend starts it as a process group leader and signals the group. As PID 1 it is signalled
    # alone, and the kernel ignores there any signal PID 1 does not handle, so it must pass each one on.
    # Its command then gets a process group of its own, so that what the command started hears it too;
    # outside a namespace the command stays in the runner's group, which the local backend's SIGKILL
    # (and collect_orphans) takes down whole.
    alone = os.getpid() == 1
    missed: list[int] = []  # stops that came before the child existed
    child: subprocess.Popen | None = None

    def on_stop(signum, _frame):
        if child is None:
            missed.append(signum)
        elif alone:
            _signal_group(child.pid, signum)

    for signum in _STOP_SIGNALS:
        signal.signal(signum, on_stop)
    try:
        child = subprocess.Popen(target, preexec_fn=_reset_stop_signals, process_group=0 if alone else None)
    except OSError as exc:
        print(f"jupyter-hetero: cannot start {target[0]!r}: {exc.strerror}", file=sys.stderr, flush=True)
        _write_exit(exit_file, 127)
        return 127
    # A stop that came while the child was being started may have missed it (even a group's signal, between
    # the fork and the reset of its handlers): pass it on.
    if missed and alone:
        _signal_group(child.pid, missed[0])
    elif missed:
        child.send_signal(missed[0])
    result = child.wait()
    _write_exit(exit_file, result)
    return 0 if result == 0 else 1


def _signal_group(leader: int, signum: int) -> None:
    try:
        os.killpg(leader, signum)
    except ProcessLookupError:  # the command and all it started are gone already
        pass


if __name__ == "__main__":
    sys.exit(main())
