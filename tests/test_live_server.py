"""A real `jupyter server` subprocess: the CLI against it, and a SIGKILL in the middle of a burst."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import psutil
import pytest

from jupyter_hetero.notebook.client import ApiError, HeteroClient
from jupyter_hetero.store import Repository

from .conftest import DEMO_NODES
from .harness import LabApiError, LabServer, ServerLayout, kill_runners_under, start_hetero_server, until

pytestmark = pytest.mark.slow

HOLD = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\nprint('released', flush=True)\n"


def start(layout: ServerLayout, name: str) -> LabServer:
    return start_hetero_server(layout, name, DEMO_NODES)


@pytest.fixture
def layout(tmp_path) -> Iterator[ServerLayout]:
    layout = ServerLayout.create(tmp_path)
    (layout.notebooks / "hold.py").write_text(HOLD, encoding="utf-8")
    yield layout
    kill_runners_under(layout.root)  # a service's replicas run until scaled down


def hetero(server: LabServer, *args: str, cwd: os.PathLike | None = None) -> subprocess.CompletedProcess:
    command, *rest = args
    return subprocess.run([sys.executable, "-m", "jupyter", "hetero", command, "--url", server.base_url,
                           "--token", server.token, *rest], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_the_cli_submits_watches_explains_and_cancels(layout):
    with start(layout, "cli") as server:
        submitted = hetero(server, "submit", "--template", "data-preprocessing", "--queue", "batch", "--name", "sum",
                           "--", "python", "-c", "print('seven', 3 + 4)", cwd=layout.notebooks)
        assert submitted.returncode == 0, submitted.stderr
        workload_id = int(submitted.stdout.strip().splitlines()[-1])

        def status():
            result = hetero(server, "status", str(workload_id), "--json")
            assert result.returncode == 0, result.stderr
            return json.loads(result.stdout)

        done = until(lambda: (s := status())["state"] in ("succeeded", "failed") and s, "the job to end")
        assert done["state"] == "succeeded"
        assert {"id", "state", "queue", "placement"} <= set(done)
        assert "seven 7" in hetero(server, "logs", str(workload_id)).stdout
        listed = json.loads(hetero(server, "ls", "--json").stdout)
        assert [w["id"] for w in listed] == [workload_id]
        assert json.loads(hetero(server, "ls", "--format", "json").stdout) == listed
        header, row = hetero(server, "ls").stdout.splitlines()
        assert header.split() == ["ID", "STATE", "NAME", "SUBMITTED", "WAITED", "ELAPSED", "NODE", "WAITING", "ON"]
        node = done["attempts"][-1]["node"]
        assert row.split()[:3] == [str(workload_id), "succeeded", "sum"] and row.split()[-1] == node, row
        assert listed[0]["node"] is None and listed[0]["last_node"] == node  # released, and the node still shown
        assert re.fullmatch(r"\d\d:\d\d:\d\d", row.split()[4]) and re.fullmatch(r"\d\d:\d\d:\d\d", row.split()[5])
        said = hetero(server, "explain", str(workload_id), "--lang", "zh").stdout
        assert f"workload {workload_id}: 已成功" in said, said  # in the language asked, once it has ended

        held = hetero(server, "submit", "--template", "data-preprocessing", "--param", "cpu=64", "--",
                      "python", "-c", "pass", cwd=layout.notebooks)
        held_id = int(held.stdout.strip().splitlines()[-1])
        explained = until(lambda: "capacity" in (out := hetero(server, "explain", str(held_id)).stdout) and out,
                          "a blocker")
        assert "1. capacity: 64 CPU must fit on one node; the largest node of flavor cpu-standard has 32 CPU" in explained
        chinese = hetero(server, "explain", str(held_id), "--lang", "zh").stdout
        assert "规格 cpu-standard 最大的节点只有 32 CPU" in chinese
        cancelled = hetero(server, "cancel", str(held_id))
        assert "cancelled" in cancelled.stdout
        bad = hetero(server, "submit", "--template", "nope", "--", "true", cwd=layout.notebooks)
        assert bad.returncode == 1 and "template 'nope' does not exist" in bad.stderr

        # Usage and the audit log, as the owner (a platform admin) reads them.
        usage = json.loads(hetero(server, "usage", "--since", "1h", "--by", "queue", "--json").stdout)
        assert usage["scope"] == "all" and usage["rows"][0]["key"] == "batch" and usage["rows"][0]["core_hours"] > 0
        table = hetero(server, "usage", "--since", "1h")
        assert table.returncode == 0 and table.stdout.splitlines()[-1].startswith("total "), table.stdout
        report = hetero(server, "report", "--since", "1h", "-o", str(layout.root / "report.html"))
        assert report.returncode == 0 and "<h2 id=\"checkpoints\">" in (layout.root / "report.html").read_text()
        checkpoints = json.loads(hetero(server, "report", "--since", "1h", "--format", "json").stdout)["checkpoints"]
        assert [c["task_type"] for c in checkpoints] == ["data-preprocessing", "training", "online-inference",
                                                         "batch-inference"]
        chinese = json.loads(hetero(server, "report", "--since", "1h", "--format", "json", "--lang", "zh").stdout)
        needs = [item["needs"] for c in chinese["checkpoints"] for item in c["items"] if item["needs"]]
        assert needs and all(re.search(r"[\u4e00-\u9fff]", said) for said in needs), needs  # in the language asked
        onboarded = subprocess.run([sys.executable, "-m", "jupyter", "hetero", "onboard", "node", "--url",
                                    server.base_url, "--token", server.token, "cpu-0"],
                                   capture_output=True, text=True, timeout=120)
        assert onboarded.returncode == 0 and onboarded.stdout.startswith("node cpu-0: accepted"), onboarded.stdout
        assert "ok   sample: exit code 0" in onboarded.stdout and "ok   fault: " in onboarded.stdout
        audit = subprocess.run([sys.executable, "-m", "jupyter", "hetero", "audit", "list", "--url", server.base_url,
                                "--token", server.token, "--action", "audit.", "--json"],
                               capture_output=True, text=True, timeout=120)
        assert audit.returncode == 0 and json.loads(audit.stdout)["entries"], audit.stdout + audit.stderr


def test_a_sigkill_during_a_burst_of_200_submissions_loses_nothing_acknowledged(layout):
    server = start(layout, "first")
    client = HeteroClient(server.base_url, server.token)
    running = [client.submit(template="data-preprocessing", script={"path": "hold.py", "args": [str(layout.notebooks / f"go{i}")]})
               for i in range(2)]
    until(lambda: all(client.workload(w["id"])["state"] == "running" for w in running), "the held jobs to run")

    acknowledged: list[int] = []
    lock = threading.Lock()

    def burst(offset: int) -> None:
        for i in range(50):
            try:
                # cpu=64 fits no node: these wait (inadmissible), so the burst is all writes.
                created = client.submit(template="data-preprocessing", parameters={"cpu": 64},
                                        command=["python", "-c", f"print({offset + i})"])
            except (ApiError, OSError, Exception):  # noqa: BLE001 - the server dies mid-burst: expected
                return
            with lock:
                acknowledged.append(created["id"])
            if offset == 0 and i == 30:
                os.kill(server.process.pid, signal.SIGKILL)

    threads = [threading.Thread(target=burst, args=(n * 50,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    server.stop()
    assert 30 <= len(acknowledged) < 200, len(acknowledged)

    with start(layout, "second") as again:
        client = HeteroClient(again.base_url, again.token)
        stored = {w["id"]: w for w in client.workloads(limit=5000)}
        assert set(acknowledged) <= set(stored)
        assert all(stored[i]["state"] in ("queued", "inadmissible") for i in acknowledged)
        for i, workload in enumerate(running):
            until(lambda w=workload: any(e["type"] == "adopted" for e in client.events(w["id"])), "adoption")
            (layout.notebooks / f"go{i}").write_text("go")
        for workload in running:
            done = until(lambda w=workload: (s := client.workload(w["id"]))["state"] in ("succeeded", "failed") and s,
                         "the adopted job to end")
            assert done["state"] == "succeeded"
            assert done["attempt_count"] == 1  # adopted, never started twice
            events = [e["type"] for e in client.events(workload["id"])]
            assert events.count("admitted") == 1 and events.count("started") == 1
        assert "released" in "".join(client.logs(running[0]["id"]))


def services(server: LabServer, verb: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jupyter", "hetero", "services", verb, "--url", server.base_url,
                           "--token", server.token, *args], capture_output=True, text=True, timeout=120)


def test_the_cli_creates_scales_rolls_out_and_back_and_deletes_a_service(layout):
    model = os.path.join(os.path.dirname(__file__), "serving", "model_server.py")
    with start(layout, "services") as server:
        created = services(server, "create", "--replicas", "1", "--max-replicas", "2", "--param", "devices=1",
                           "--json", "echo", "--", sys.executable, model)
        assert created.returncode == 0, created.stderr
        assert json.loads(created.stdout)["endpoint"] == "/hetero/endpoints/default/echo/"

        def shown() -> dict:
            result = services(server, "show", "echo", "--json")
            assert result.returncode == 0, result.stderr
            return json.loads(result.stdout)

        until(lambda: shown()["ready_replicas"] == 1, "the service's replica to be ready", timeout=60)
        assert services(server, "scale", "echo", "2").returncode == 0
        until(lambda: shown()["ready_replicas"] == 2, "two ready replicas", timeout=60)
        too_many = services(server, "scale", "echo", "3")
        assert too_many.returncode == 1 and "outside 1..2" in too_many.stderr, too_many.stderr

        misplaced = services(server, "rollout", "echo", "--env", "MODEL_VERSION=2")
        assert misplaced.returncode != 0 and "options go before the name" in misplaced.stderr, misplaced.stderr
        rolled = services(server, "rollout", "--env", "MODEL_VERSION=2", "echo")
        assert rolled.returncode == 0 and "canary r2 (20%)" in rolled.stdout, rolled.stdout + rolled.stderr
        back = json.loads(services(server, "rollback", "--json", "echo").stdout)
        assert (back["rollout"], back["revision"], back["revisions"][-1]["outcome"]) == (None, 1, "abandoned"), back
        listed = services(server, "list")
        assert listed.returncode == 0 and listed.stdout.splitlines()[1].startswith("echo "), listed.stdout
        assert [found["name"] for found in json.loads(services(server, "list", "--json").stdout)] == ["echo"]
        deleted = services(server, "delete", "echo")
        assert deleted.returncode == 0, deleted.stderr
        assert deleted.stdout.splitlines()[0] == "service echo deleted; its replicas are stopping", deleted.stdout
        assert not any(line.startswith("echo ") for line in deleted.stdout.splitlines()[1:]), deleted.stdout
        gone = services(server, "show", "echo")
        assert gone.returncode == 1 and "service echo was deleted at" in gone.stderr, gone.stdout + gone.stderr
        assert json.loads(services(server, "list", "--json").stdout) == []


def test_a_server_whose_kernel_failed_to_start_still_stops_on_sigterm(layout):
    # Regression: jupyter_client keeps a kernel whose start raised among its pending ones, and the server's
    # shutdown then failed on it ("Kernel does not exist") and never finished: it hung on SIGTERM.
    server = start(layout, "kernels")
    try:
        with pytest.raises(LabApiError) as refused:  # no placement: the template's bound refuses it at once
            server.api("hetero/api/v1/kernels", "POST", {"template": "interactive", "parameters": {"cpu": 64}})
        assert refused.value.status == 400
        server.api("hetero/api/v1/kernels", "POST", {"template": "interactive"}, timeout=60)  # and one that runs
        os.killpg(server.process.pid, signal.SIGTERM)
        assert server.process.wait(10) is not None, server.log_tail()
        assert "Kernel does not exist" not in server.log_path.read_text(errors="replace")
    finally:
        server.stop()


def test_a_launch_the_server_died_before_recording_is_stopped_and_started_again(layout):
    # Regression: a server killed between launching an attempt and recording its processes came back to an
    # attempt of no processes, judged it ended well ("succeeded", exit code 0) and left its job running, unknown.
    server = start(layout, "first")
    client = HeteroClient(server.base_url, server.token)
    job = client.submit(template="data-preprocessing", script={"path": "hold.py", "args": [str(layout.notebooks / "go")]})
    until(lambda: client.workload(job["id"])["state"] == "running", "the held job to run")
    os.kill(server.process.pid, signal.SIGKILL)
    server.stop()
    store = Repository(f"sqlite:///{layout.state / 'hetero.sqlite'}", clock=time.time)
    first = store.attempts(job["id"])[0]
    runner = first.processes[0]["pid"]
    store.update_attempt(first.id, processes=[])  # as the store was when the server died mid-launch
    store.update_workload(job["id"], event="starting", reason="attempt 1", state="starting")
    with start(layout, "second") as again:
        client = HeteroClient(again.base_url, again.token)
        until(lambda: client.workload(job["id"])["attempt_count"] == 2, "a second attempt")
        assert not psutil.pid_exists(runner) or psutil.Process(runner).status() == psutil.STATUS_ZOMBIE
        (layout.notebooks / "go").write_text("go")
        done = until(lambda: (w := client.workload(job["id"]))["state"] in ("succeeded", "failed") and w, "the end")
        assert done["state"] == "succeeded" and done["failures"] == 0, done
        assert [a["outcome"] for a in done["attempts"]] == ["unlaunched", "succeeded"], done["attempts"]
    store.close()


def test_a_kernel_a_killed_server_left_running_is_stopped_by_the_restart(layout):
    # A sandboxed kernel ends with its server (bubblewrap's --die-with-parent), except when the server dies in the
    # moment between starting the sandbox and the sandbox watching it: the crash test once found such a kernel
    # running, its workload long cancelled. What it looks like then is staged here: the server SIGKILLed with its
    # kernel's workload running, and a process naming the kernel's connection file left in a session of its own.
    server = start(layout, "first")
    client = HeteroClient(server.base_url, server.token)
    kernel_id = client.request("POST", "kernels", {"template": "interactive", "wait_timeout": 30})["kernel_id"]
    os.kill(server.process.pid, signal.SIGKILL)
    server.stop()
    left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "-f",
                             str(layout.jupyter_runtime / f"kernel-{kernel_id}.json")], start_new_session=True)
    try:
        with start(layout, "second") as again:
            client = HeteroClient(again.base_url, again.token)
            [kernel] = client.workloads(kind="kernel")
            until(lambda: client.workload(kernel["id"])["state"] == "cancelled", "the left kernel's workload to end")
            assert left.wait(timeout=30) == -signal.SIGKILL
    finally:
        left.kill()
