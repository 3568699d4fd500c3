"""Work no node of the inventory could ever hold, through the REST API of real servers: it is
`inadmissible` on the first cycle with the reason, counts as pending, can be cancelled, fails a kernel's
start at once, and is queued again and runs once a restart brings a node that can hold it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from jupyter_hetero.i18n import N_, Message
from jupyter_hetero.notebook.client import HeteroClient

from ..builders import demo_nodes_file
from ..conftest import DEMO_NODES
from ..harness import LabServer, ServerLayout, start_hetero_server, until
from .test_kernels import kernelspecs  # noqa: F401 - the fixture

# No NVIDIA node of the demo has eight devices (the A100 node has two, and the T4 is no training flavor).
EIGHT_NVIDIA = {"template": "training", "parameters": {"devices": 8, "variant": "nvidia"}}
A100_TOO_SMALL = "capacity: a replica needs 8 devices on one node, nodes of flavor a100-80g have 2"


def inadmissible(w) -> bool:
    return w["state"] == "inadmissible"


async def test_a_job_no_node_can_hold_is_inadmissible_at_once_with_the_reason(api, wait_for):
    job = await api("workloads", "POST", {**EIGHT_NVIDIA, "kind": "job", "command": ["python", "-c", "pass"]})
    waiting = await wait_for(job["id"], inadmissible)
    assert waiting["reason"].startswith("no node in the inventory can ever hold it: ")
    assert A100_TOO_SMALL in waiting["reason"]
    kinds = {b["kind"]: b for b in waiting["blockers"]}
    assert kinds["device-count"]["message"] == A100_TOO_SMALL and set(kinds) == {"device-count", "no-nodes"}
    zh = await api(f"workloads/{job['id']}", lang="zh")
    assert "容量：每个副本需要单节点 8 张卡，规格 a100-80g 的节点只有 2 张" in [b["message"] for b in zh["blockers"]]
    assert waiting["position"] == 1
    types = [e["type"] for e in await api(f"workloads/{job['id']}/events")]
    assert types == ["submitted", "inadmissible"]
    queues = {q["name"]: q for q in await api("queues")}
    assert queues["training"]["pending"] == 1
    assert [w["id"] for w in await api("workloads", state="inadmissible")] == [job["id"]]
    explained = await api(f"workloads/{job['id']}/explain")
    assert explained["summary"] == "inadmissible" and any(A100_TOO_SMALL in line for line in explained["lines"])
    cancelled = await api(f"workloads/{job['id']}", "DELETE")
    assert cancelled["state"] == "cancelled"
    # The queues view is as of the last cycle, which the cancel woke.
    deadline = time.monotonic() + 10
    while {q["name"]: q["pending"] for q in await api("queues")}["training"] != 0:
        assert time.monotonic() < deadline, "the cancelled job stayed counted as pending"
        await asyncio.sleep(0.05)


async def test_a_kernel_no_node_can_hold_fails_its_start_at_once_with_the_reason(kernelspecs, api, api_error):  # noqa: F811
    started = time.monotonic()
    status, error = await api_error("kernels", "POST", {"template": "interactive", "wait_timeout": 60,
                                                         "parameters": {"devices": 2, "flavor": "t4"}})
    assert time.monotonic() - started < 20  # not the 60 s the start could wait for a placement
    assert status == 409
    assert error["message"] == ("no interactive kernel can be placed: no node in the inventory can ever hold it: "
                                "capacity: a replica needs 2 devices on one node, nodes of flavor t4 have 1")
    [kernel] = await api("workloads", kind="kernel")
    assert kernel["state"] == "failed" and kernel["reason"] == error["message"]
    # Said in Chinese too, around the reason the store keeps in English.
    assert error["message_zh"] == Message(N_("no {template} kernel can be placed: {reason}"), template="interactive",
                                          reason=kernel["reason"].removeprefix("no interactive kernel can be placed: "),
                                          ).text("zh")


def _cli(*args: str, server: LabServer) -> str:
    result = subprocess.run([sys.executable, "-m", "jupyter", "hetero", *args, "--url", server.base_url,
                             "--token", server.token], check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_when_a_restart_brings_a_node_that_can_hold_it_it_is_queued_again_and_runs(tmp_path):
    layout = ServerLayout.create(tmp_path)
    with start_hetero_server(layout, "before", DEMO_NODES) as server:
        client = HeteroClient(server.base_url, server.token)
        job = client.submit(**EIGHT_NVIDIA, command=["python", "-c", "print('eight devices')"])["id"]
        until(lambda: client.workload(job)["state"] == "inadmissible", "the job to be inadmissible")
        status = _cli("status", str(job), server=server)
        assert "  no node can ever hold it; it is queued again when the inventory changes (queue training):" in status
        assert f"  - {A100_TOO_SMALL}" in status
        listed = _cli("ls", server=server).splitlines()[1]
        assert listed.split()[1] == "inadmissible" and A100_TOO_SMALL in listed
    grown = demo_nodes_file(tmp_path / "grown.yaml", copies={"gpu-a100-8x": ("gpu-a100-0", 8)})
    with start_hetero_server(layout, "after", grown) as server:
        client = HeteroClient(server.base_url, server.token)
        done = until(lambda: (w := client.workload(job))["state"] in ("succeeded", "failed") and w, "the job to run")
        assert done["state"] == "succeeded" and done["attempts"][0]["node"] == "gpu-a100-8x"
        events = [(e["type"], e["reason"]) for e in client.events(job)]
        types = [kind for kind, _reason in events]
        assert types[:4] == ["submitted", "inadmissible", "requeued", "admitted"]
        assert events[2][1] == "the inventory now has a node that can hold it"
