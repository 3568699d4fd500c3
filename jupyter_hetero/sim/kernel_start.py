"""Start-to-ready time of a hetero-provisioned kernel against a plain ipykernel, on a real server.

    result = run_kernel_start(runs=20)
    result["median_s"]["python3"], result["median_s"]["hetero-cpu"], result["overhead_pct"]

A private ``jupyter server`` is started with the demo's emulated nodes. Each run starts a kernel
through ``POST /api/kernels``, connects a client with the kernel's connection file and waits for
its ``kernel_info`` reply ("ready"), then shuts it down. The two kernelspecs alternate so drift
on a busy machine hits both alike. A kernel that is not ready within ``START_TIMEOUT_S`` fails the
run, with the end of the server's log (kept in the run's folder) in the error.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from jupyter_client import BlockingKernelClient

__all__ = ["START_TIMEOUT_S", "run_kernel_start"]

_TOKEN = "kernel-start-bench"
# Seconds a kernel may take from its start to its kernel_info reply: generous, as a loaded 2-core machine (the
# test suite on two workers) can hold a starting kernel off the CPU for seconds.
START_TIMEOUT_S = 120.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Server:
    def __init__(self, root: Path, emulated_nodes: Path | None):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.runtime = root / "runtime"
        self.log_path = root / "server.log"
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(self.runtime), "JUPYTER_CONFIG_DIR": str(root / "config"),
               "JUPYTER_DATA_DIR": str(root / "data")}
        args = [sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root", "--ip=127.0.0.1",
                f"--port={self.port}", f"--IdentityProvider.token={_TOKEN}", f"--ServerApp.root_dir={root}",
                f"--HeteroApp.db_url=sqlite:///{root / 'hetero.sqlite'}", f"--HeteroApp.work_dir={root / 'work'}",
                "--HeteroApp.schedule_interval=1"]
        if emulated_nodes:
            args.append(f"--HeteroApp.emulated_nodes_file={emulated_nodes}")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + 120
        while True:
            try:
                self.call("GET", "api/status")
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"the benchmark's jupyter server did not start; its log ends:\n"
                                       f"{self.log_tail()}") from None
                time.sleep(0.2)

    def call(self, method: str, path: str, body: dict | None = None):
        request = urllib.request.Request(self.url + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Authorization": f"token {_TOKEN}"})
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310 - our own local server
            raw = response.read()
        return json.loads(raw) if raw else None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError as exc:
            return f"(unreadable: {exc})"

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.process.pid, signal.SIGKILL)


def _start_to_ready(server: _Server, kernelspec: str) -> float:
    started = time.perf_counter()
    kernel_id = server.call("POST", "api/kernels", {"name": kernelspec})["id"]
    client = BlockingKernelClient()
    client.load_connection_file(str(server.runtime / f"kernel-{kernel_id}.json"))
    # No heartbeat: a client that no kernel manager made calls its kernel dead when the heartbeat goes unanswered
    # for a second (HBChannel.time_to_dead), and a kernel still starting on a loaded machine leaves it unanswered
    # that long ("Kernel died before replying to kernel_info" while it was alive). Ready is its kernel_info reply,
    # within START_TIMEOUT_S; of a kernel that died meanwhile (restarted by the server, or not) the server's log says.
    client.start_channels(hb=False)
    try:
        client.wait_for_ready(timeout=START_TIMEOUT_S)
        elapsed = time.perf_counter() - started
    except RuntimeError as exc:
        raise RuntimeError(f"kernel {kernel_id} ({kernelspec}): {exc}; the server's log ends:\n"
                           f"{server.log_tail()}") from exc
    finally:
        client.stop_channels()
        server.call("DELETE", f"api/kernels/{kernel_id}")
    return elapsed


def run_kernel_start(runs: int = 20, kernelspec: str = "hetero-cpu", emulated_nodes: str | None = None) -> dict:
    """Median start-to-ready seconds of ``python3`` and ``kernelspec`` over ``runs`` starts each."""
    timings: dict[str, list[float]] = {"python3": [], kernelspec: []}
    with tempfile.TemporaryDirectory(prefix="hetero-kernel-bench-") as tmp:
        server = _Server(Path(tmp), Path(emulated_nodes) if emulated_nodes else None)
        try:
            _start_to_ready(server, kernelspec)  # warm caches (imports, the first cycle) before measuring
            _start_to_ready(server, "python3")
            for _ in range(runs):
                for name in timings:
                    timings[name].append(_start_to_ready(server, name))
        finally:
            server.stop()
    medians = {name: round(statistics.median(values), 3) for name, values in timings.items()}
    return {
        "runs": runs,
        "median_s": medians,
        "overhead_pct": round(100 * (medians[kernelspec] - medians["python3"]) / medians["python3"], 1),
        "samples_s": {name: [round(v, 3) for v in values] for name, values in timings.items()},
    }
