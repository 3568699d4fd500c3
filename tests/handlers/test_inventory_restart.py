"""A real `jupyter server` restarted with an emulated nodes file that lost a node and shrank another,
while jobs ran on both: their work is lost and requeued by policy, and everything else is scheduled."""

from __future__ import annotations

import re
import subprocess
import sys

import psutil
import pytest

from jupyter_hetero.notebook.client import HeteroClient

from ..builders import demo_nodes_file as nodes_file
from ..harness import ServerLayout, until
from ..harness import start_hetero_server as start

pytestmark = pytest.mark.slow

HOLD = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\n"


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_work_on_a_vanished_or_shrunk_node_is_lost_and_requeued_while_the_rest_is_scheduled(tmp_path):
    layout = ServerLayout.create(tmp_path)
    (layout.notebooks / "hold.py").write_text(HOLD, encoding="utf-8")
    release = layout.root / "release"
    hold = {"path": "hold.py", "args": [str(release)]}
    try:
        _lose_and_requeue(layout, hold, tmp_path)
    finally:
        # The jobs run in sessions of their own, so that they outlive a server: the requeued attempts
        # would run on after the test.
        release.touch()


def _lose_and_requeue(layout: ServerLayout, hold: dict, tmp_path) -> None:
    with start(layout, "before", nodes_file(tmp_path / "all.yaml")) as server:
        client = HeteroClient(server.base_url, server.token)
        on_t4 = client.submit(template="vision", script=hold)["id"]
        on_a100 = client.submit(template="training", parameters={"devices": 2}, script=hold)["id"]
        for workload_id in (on_t4, on_a100):
            until(lambda w=workload_id: client.workload(w)["state"] == "running", "the jobs to run")
        assert client.workload(on_t4)["node"] == "gpu-t4-0"
        assert [d["index"] for d in client.workload(on_a100)["placement"]["slots"][0]["devices"]] == [0, 1]
        pids = [pid for w in (on_t4, on_a100) for e in client.events(w) if e["type"] == "started"
                for pid in e["data"]["pids"]]
    # The server is gone, its jobs live on (each in its own session); it comes back with less.
    shrunk = nodes_file(tmp_path / "shrunk.yaml", without="gpu-t4-0", devices={"gpu-a100-0": 1})
    with start(layout, "after", shrunk) as server:
        client = HeteroClient(server.base_url, server.token)
        probe = client.submit(template="data-preprocessing", command=["python", "-c", "print('still scheduling')"])
        done = until(lambda: (w := client.workload(probe["id"]))["state"] in ("succeeded", "failed") and w,
                     "a new job to be scheduled after the restart")
        assert done["state"] == "succeeded"
        expected = {on_t4: "node gpu-t4-0 is no longer in the inventory",
                    on_a100: "node gpu-a100-0 now has 1 device(s); device 1 of this placement no longer exists"}
        for workload_id, reason in expected.items():
            lost = until(lambda w=workload_id: (x := client.workload(w))["node_losses"] == 1 and x, "the loss")
            assert lost["failures"] == 0 and lost["node"] not in ("gpu-t4-0", "gpu-a100-0")  # requeued, maybe re-placed
            reasons = {e["type"]: e["reason"] for e in client.events(workload_id)}
            assert reasons["node-lost"] == reason
            assert reasons["requeued"].startswith(f"lost ({reason}); requeued by queue")
        until(lambda: all(gone(pid) for pid in pids), "the lost jobs' processes to be stopped", timeout=10)
        status = subprocess.run([sys.executable, "-m", "jupyter", "hetero", "status", str(on_t4), "--url",
                                 server.base_url, "--token", server.token], capture_output=True, text=True, timeout=60)
        assert re.search(r"attempts \d: 0 failed, 0 preempted, 1 lost with their node", status.stdout), status.stderr
