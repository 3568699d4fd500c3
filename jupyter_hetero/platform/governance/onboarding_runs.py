"""How onboarding runs a check on a node: as a replica of no workload, through the backend that runs all work there.

    launch = probe_launch(view, run=7, folder=folder, code=SAMPLE, image=image, python=None, runs_here=True)
    code, log_text = run_probe(backend, launch, timeout_s=300)   # blocking: call it in a worker thread

``probe_launch`` is pure: the Kubernetes backend's ``PodFactory`` turns its launch into the pod (the image, ``python
-c`` the probe, bound to the node), which a test checks by value.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ...backends.base import Backend, Launch, Placed
from ..workloads.environment import device_environment

__all__ = ["probe_launch", "run_probe"]


def probe_launch(view, *, run: int, folder: Path, code: str, image: str, python: str | None,
                 runs_here: bool) -> Launch:
    """What a check runs on a node, as a replica of no workload: one device of the node, a small share of CPU and
    memory; where pods run it, ``image`` and its "python"; where this machine does, ``python`` or the server's."""
    capability = view.capability
    devices = ((0, 1000, 0),) if capability.accelerator else ()
    env = {"PYTHONUNBUFFERED": "1", "HETERO_NODE": view.name, "HETERO_EMULATED": "1" if capability.emulated else "0",
           **(device_environment(capability.family.value if capability.family else "cpu", devices)
              if runs_here else {})}
    placed = Placed(kind="job", tenant="platform", user="onboarding", queue="onboarding", template="onboarding",
                    flavor=view.flavor or "", replicas=1, image=image, cpu_milli=500, memory_mib=512,
                    devices=((1000, 0),) if capability.accelerator else (), accelerator=capability.accelerator)
    interpreter = (python or sys.executable) if runs_here else "python"
    # Run numbers well apart from workloads' attempts, so a pod's name is never one a workload had.
    return Launch(workload_id=0, attempt=run, replica=0, node=view.name,
                  argv=["command", "--", interpreter, "-c", code], env=env, cwd=folder, log_path=folder / "log.txt",
                  exit_path=folder / "exit.json", devices=tuple(d[0] for d in devices), placed=placed)


def run_probe(backend: Backend, launch: Launch, *, timeout_s: float) -> tuple[int | None, str]:
    """Launch it, wait for its end (killed past ``timeout_s``), and return its exit code and log."""
    handle = backend.launch(launch)
    deadline = time.monotonic() + timeout_s
    while backend.running(handle):
        if time.monotonic() > deadline:
            backend.kill(handle)
            return None, f"still running after {timeout_s:g} s: killed"
        time.sleep(0.1)
    ended = backend.exit(handle)
    text = launch.log_path.read_text(encoding="utf-8", errors="replace") if launch.log_path.exists() else ""
    return ended.code, text
