"""Check the product on a machine with a real accelerator: discovery, a real device job and a kernel.

    python scripts/device_check.py --out device-check.md

It needs the project installed (``make install``) on a machine with an NVIDIA, AMD, Ascend, Intel,
Cambricon or Hygon device. It starts a ``jupyter server`` with jupyter-hetero on this machine's real
node (no emulated nodes), then:

1. prints the node as discovery sees it: devices, versions, interconnect, locality, notes;
2. submits a job that multiplies matrices on its device (torch where importable, else cupy, else the
   vendor's tool) through the API users call, waits for it and keeps its log;
3. starts a kernel on a device through ``POST /kernels`` and runs a cell that reports the devices it sees;
4. reads the node and the workloads again to show the utilisation and memory the server measured.

Everything goes to ``--out`` as Markdown, to be kept in docs/. The test suite never runs this: CI has no
accelerator.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from jupyter_client import BlockingKernelClient

from jupyter_hetero.backends.local.discovery import discover_local_node
from jupyter_hetero.notebook.client import ApiError, HeteroClient

# The job's work: a minute of matrix multiplication on whichever framework this machine has.
JOB = r"""
import os, subprocess, time
print("visible:", {k: v for k, v in os.environ.items() if k.endswith("VISIBLE_DEVICES")})
try:
    import torch
    device = "npu" if hasattr(torch, "npu") and torch.npu.is_available() else "cuda"
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    start = time.time(); n = 0
    while time.time() - start < 60:
        a @ a; n += 1
    getattr(torch, device).synchronize()
    print(f"torch on {device}: {n} matmuls of 8192^2 in {time.time() - start:.1f} s")
except ImportError:
    try:
        import cupy
        a = cupy.random.rand(8192, 8192, dtype=cupy.float32)
        start = time.time(); n = 0
        while time.time() - start < 60:
            a @ a; n += 1
        cupy.cuda.Device().synchronize()
        print(f"cupy: {n} matmuls of 8192^2 in {time.time() - start:.1f} s")
    except ImportError:
        for tool in (["nvidia-smi"], ["rocm-smi"], ["npu-smi", "info"]):
            try:
                print(subprocess.run(tool, capture_output=True, text=True, timeout=30).stdout)
                break
            except OSError:
                continue
"""

CELL = """import os, subprocess
print({k: v for k, v in os.environ.items() if k.endswith("VISIBLE_DEVICES") or k.startswith("HETERO_")})
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(root: Path, port: int, token: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root", "--ip=127.0.0.1",
               f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               f"--HeteroApp.db_url=sqlite:///{root / 'hetero.sqlite'}", f"--HeteroApp.work_dir={root / 'work'}"]
    log = (root / "server.log").open("wb")
    environ = {**os.environ, "JUPYTER_RUNTIME_DIR": str(root / "runtime")}  # where the kernel's connection file lands
    return subprocess.Popen(command, cwd=root, env=environ, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def wait_ready(client: HeteroClient, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.version()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def section(lines: list[str], title: str, body: object) -> None:
    text = body if isinstance(body, str) else json.dumps(body, indent=2, default=str)
    lines += [f"## {title}", "", "```", text.rstrip(), "```", ""]


def run_kernel_cell(connection: dict, code: str) -> str:
    client = BlockingKernelClient()
    client.load_connection_info(connection)
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        out: list[str] = []
        client.execute_interactive(code, output_hook=lambda msg: out.append(msg["content"].get("text", "")),
                                   timeout=60)
        return "".join(out)
    finally:
        client.stop_channels()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("device-check.md"))
    parser.add_argument("--template", default="fine-tuning")
    args = parser.parse_args()

    lines = ["# Device check", "", f"Run {time.strftime('%Y-%m-%d %H:%M:%S %Z')} on {socket.gethostname()}.", ""]
    node = discover_local_node()
    section(lines, "Discovery", node.model_dump(mode="json"))

    root = Path(tempfile.mkdtemp(prefix="hetero-device-check-"))
    port, token = free_port(), secrets.token_hex(16)
    server = start_server(root, port, token)
    client = HeteroClient(f"http://127.0.0.1:{port}/", token)
    try:
        wait_ready(client)
        section(lines, "The node as the server lists it", client.nodes())
        job_file = root / "device_job.py"
        job_file.write_text(JOB)
        try:
            job = client.submit(template=args.template, command=[sys.executable, str(job_file)],
                                parameters={"devices": 1}, name="device-check")
        except ApiError as error:
            section(lines, "Job refused", str(error))
        else:
            deadline = time.monotonic() + 300
            while client.workload(job["id"])["state"] not in ("succeeded", "failed", "cancelled", "inadmissible"):
                if time.monotonic() > deadline:
                    break
                time.sleep(2)
            section(lines, "Job", client.workload(job["id"]))
            section(lines, "Job log", client.text(f"workloads/{job['id']}/logs"))
        try:
            kernel = client.request("POST", "kernels", {"template": "interactive", "parameters": {"devices": 1},
                                                        "wait_timeout": 120})
            section(lines, "Kernel", kernel)
            connection_file = root / "runtime" / f"kernel-{kernel['kernel_id']}.json"
            if connection_file.exists():
                section(lines, "Kernel cell output", run_kernel_cell(json.loads(connection_file.read_text()), CELL))
            time.sleep(6)  # a sampling interval, so the server has measured the devices
            section(lines, "Kernel workload (utilisation and memory as measured)",
                    client.workload(kernel["workload_id"]))
            shutdown = urllib.request.Request(f"{client.url}api/kernels/{kernel['kernel_id']}", method="DELETE",
                                              headers={"Authorization": f"token {token}"})
            urllib.request.urlopen(shutdown, timeout=30).close()  # noqa: S310 - the server started here
        except ApiError as error:
            section(lines, "Kernel refused", str(error))
        section(lines, "The node after", client.nodes())
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
        section(lines, "Server log (tail)", (root / "server.log").read_text(errors="replace")[-4000:])
    args.out.write_text("\n".join(lines))
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
