"""Crash safety: a real `jupyter server` is SIGKILLed at random points while clients submit, cancel, start kernels
and edit the catalog at once, and started again on the same store, many times over. After each restart the
invariants hold, every acknowledged submission is there once, no workload runs two attempts, and what was running
is adopted (its processes outlived the server) or ended with a reason; at the end everything finishes.

``HETERO_RELIABILITY_LONG=1`` kills 100 times instead of 20; the seed is printed, and ``HETERO_CRASH_SEED`` replays
one run.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import yaml

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.notebook.client import ApiError, HeteroClient, ServerNotFound
from jupyter_hetero.store import Repository

from ..conftest import DEMO_NODES, REPO
from ..harness import LabApiError, LabServer, ServerLayout, start_hetero_server, until
from ..postgres import DATABASES, database
from .invariants import violations, workload_processes

pytestmark = pytest.mark.slow

LONG = bool(os.environ.get("HETERO_RELIABILITY_LONG"))
KILLS = int(os.environ.get("HETERO_CRASH_KILLS") or (100 if LONG else 20))
# PostgreSQL outlives the server (its own process), so what differs is the driver's and the lock's behaviour
# at a client's death: fewer kills show it.
KILLS_ON = {"sqlite": KILLS, "postgresql": max(1, KILLS // 6)}
GATE = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\n"
FINAL = {"succeeded", "failed", "cancelled"}


class Burst:
    """Four clients at once against one server until it dies: each submits (a quick job, a job held on a gate, a
    job no node fits), cancels one of its own, starts and stops a kernel, or edits the catalog and reloads it.
    What the server acknowledged is kept by the submission's unique name."""

    def __init__(self, layout: ServerLayout, catalog_file: Path, rng: random.Random):
        self.layout, self.catalog_file, self.rng = layout, catalog_file, rng
        self.acknowledged: dict[str, int] = {}
        self.unfit: set[str] = set()  # acknowledged, but no node fits them: they wait on
        self.counts = {"submit": 0, "cancel": 0, "kernel": 0, "catalog": 0}
        self._names = iter(range(10**9))
        self._lock = threading.Lock()

    def run(self, server: LabServer, seconds: float) -> None:
        """Clients work on ``server`` while, after ``seconds``, it is SIGKILLed; returns once they all stopped."""
        client = HeteroClient(server.base_url, server.token, timeout=30)
        killed, failures = threading.Event(), []
        threads = [threading.Thread(target=self._client, args=(server, client, random.Random(self.rng.random()),
                                                               killed, failures)) for _ in range(4)]
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        killed.set()
        os.kill(server.process.pid, signal.SIGKILL)
        for thread in threads:
            thread.join(60)
        server.process.wait(10)
        assert not failures, failures

    def _client(self, server: LabServer, client: HeteroClient, rng: random.Random, killed: threading.Event,
                failures: list) -> None:
        while not killed.is_set():
            try:
                self._act(server, client, rng)
            except (ApiError, LabApiError, ServerNotFound, OSError) as exc:
                # Before the kill, no call fails: a 4xx would be the test's mistake, a 5xx or a drop the server's.
                if not killed.is_set():
                    failures.append(repr(exc))
                    return

    def _act(self, server: LabServer, client: HeteroClient, rng: random.Random) -> None:
        action = rng.choices(("quick", "held", "unfit", "cancel", "kernel", "catalog"), (4, 3, 2, 2, 1, 1))[0]
        if action == "cancel":
            mine = list(self.acknowledged.values())
            if mine:
                client.cancel(rng.choice(mine))
                self.counts["cancel"] += 1
        elif action == "kernel":
            kernel = server.api("api/kernels", "POST", {"name": "hetero-cpu"}, timeout=60)
            self.counts["kernel"] += 1
            if rng.random() < 0.5:
                server.api(f"api/kernels/{kernel['id']}", "DELETE", timeout=30)
        elif action == "catalog":
            with self._lock:  # one editor at a time, and the file replaced whole, as an editor saves it
                catalog = yaml.safe_load(self.catalog_file.read_text())
                catalog["queues"][0]["max_wait_s"] = rng.randint(200, 400)
                edited = self.catalog_file.with_suffix(".edited")
                edited.write_text(yaml.safe_dump(catalog, sort_keys=False))
                os.replace(edited, self.catalog_file)
            client.request("POST", "catalog/reload")
            self.counts["catalog"] += 1
        else:
            with self._lock:
                name = f"crash-{next(self._names)}"
            if action == "quick":
                body = {"command": [sys.executable, "-c", "print('done')"]}
            elif action == "held":
                body = {"script": {"path": "gate.py", "args": [str(self.layout.notebooks / "open")]}}
            else:
                body = {"parameters": {"cpu": 64}, "command": [sys.executable, "-c", "pass"]}  # no node fits
            created = client.submit(name=name, template="data-preprocessing", **body)
            self.acknowledged[name] = created["id"]
            if action == "unfit":
                self.unfit.add(name)
            self.counts["submit"] += 1


@pytest.fixture
def layout(tmp_path) -> Iterator[ServerLayout]:
    layout = ServerLayout.create(tmp_path)
    (layout.notebooks / "gate.py").write_text(GATE, encoding="utf-8")
    yield layout


@pytest.mark.parametrize("kind", DATABASES)
def test_sigkill_at_random_points_loses_nothing_and_admits_nothing_twice(layout, kind, tmp_path):
    with database(kind, tmp_path) as url:
        crash_and_restart(layout, url, KILLS_ON[kind])


def crash_and_restart(layout: ServerLayout, db_url: str, kills: int) -> None:
    seed = int(os.environ.get("HETERO_CRASH_SEED") or random.randrange(10**6))
    print(f"\ncrash seed {seed} (HETERO_CRASH_SEED={seed} replays it)")
    rng = random.Random(seed)
    catalog_file = layout.root / "catalog.yaml"
    catalog_file.write_text(DEFAULT_CATALOG_PATH.read_text())
    catalog = load_catalog(catalog_file)  # the edits touch a queue's max_wait only: quotas stay as checked
    work_dir = layout.state / "work"
    store = Repository(db_url, clock=time.time)
    burst = Burst(layout, catalog_file, rng)
    adopted, began = 0, time.monotonic()

    def start(n: int) -> LabServer:
        return start_hetero_server(layout, f"run{n}", DEMO_NODES, f"--HeteroApp.catalog_file={catalog_file}",
                                   db_url=db_url)

    def reconciled(workload_id: int) -> int:
        return sum(e.type in ("adopted", "reconciling") for e in store.events(workload_id=workload_id))

    running: dict[int, int] = {}  # running when the server died: its reconciliations so far
    for n in range(kills + 1):
        server = start(n)
        found = violations(store, catalog, acknowledged=burst.acknowledged, work_dir=work_dir)
        assert not found, (seed, n, found)
        # What the kill left running is taken up once by the restart (as it starts its loop): adopted, or
        # reconciled as ended.
        until(lambda: all(reconciled(w) > before for w, before in running.items()), "reconciliation", timeout=60)
        twice = {w: [(e.type, e.reason) for e in store.events(workload_id=w)] for w, before in running.items()
                 if reconciled(w) != before + 1}
        assert not twice, (seed, n, twice)
        adopted += sum(store.events(workload_id=w)[-1].type == "adopted" for w in running)
        if n == kills:
            break
        burst.run(server, rng.uniform(0.2, 1.0))
        processes = workload_processes(layout.root)
        assert len({(w, a) for _pid, w, a in processes}) == len({w for _pid, w, _a in processes}), (seed, n, processes)
        running = {row.id: reconciled(row.id) for row in store.workloads(states=("running",), kind="job")}

    with server:
        (layout.notebooks / "open").write_text("open")
        client = HeteroClient(server.base_url, server.token)
        fitting = [i for name, i in burst.acknowledged.items() if name not in burst.unfit]

        def settled():
            states = {i: store.workload(i).state for i in fitting}
            return all(state in FINAL for state in states.values()) and states

        killing = time.monotonic() - began
        states = until(settled, "every workload that fits to end", timeout=120)
        settling = time.monotonic() - began - killing
        assert not violations(store, catalog, acknowledged=burst.acknowledged, work_dir=work_dir)
        left = workload_processes(layout.root)
        assert not left, ("a process outlived its workload", seed, [(pid, w, a, store.workload(w).state, _described(pid))
                                                                  for pid, w, a in left])
        failed = {i: client.events(i)[-1]["reason"] for i, state in states.items() if state == "failed"}
        # A job the server could not see end (it ended while the server was down) fails with that reason, never
        # silently; nothing else fails.
        assert all("restart" in reason or "lost" in reason for reason in failed.values()), failed
        for workload_id in fitting:
            numbers = [attempt.number for attempt in store.attempts(workload_id)]
            assert numbers == sorted(set(numbers)), (workload_id, numbers)  # each attempt started once, in turn

    print(f"{db_url.split(':')[0]}: kills {kills}, restarts checked {kills}, acknowledged {len(burst.acknowledged)}, "
          f"actions {burst.counts}, running jobs adopted across restarts {adopted}, failed {len(failed)}, "
          f"ended {len(states)}; {killing:.0f} s of kills and restarts, {settling:.0f} s to settle")


def test_a_gang_cut_off_mid_launch_is_stopped_whole_and_started_again(layout, monkeypatch):
    # Regression: the scheduler recorded a gang's replicas one by one as it launched them. A server killed in
    # between came back to adopt the recorded part alone (a gang of one, read as its whole attempt), and the
    # replica launched but not yet recorded ran on, unknown, past its workload's end.
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the first server imports its backend from tests.fakes
    store = Repository(f"sqlite:///{layout.state / 'hetero.sqlite'}", clock=time.time)
    catalog, work_dir = load_catalog(DEFAULT_CATALOG_PATH), layout.state / "work"
    server = start_hetero_server(layout, "cut", DEMO_NODES, "--HeteroApp.backend_class=tests.fakes.CutOffGang")
    try:
        job = HeteroClient(server.base_url, server.token).submit(
            name="gang", template="training", parameters={"devices": 1, "replicas": 3},
            script={"path": "gate.py", "args": [str(layout.notebooks / "open")]})
        cut = work_dir / "jobs" / str(job["id"]) / "attempts" / "1" / "cut-off"
        until(cut.exists, "the launch to stop inside its second replica's", timeout=60)
        os.kill(server.process.pid, signal.SIGKILL)  # replica 0 launched, 1 launched but not returned, 2 never
    finally:
        server.stop()

    def alive(attempt: int) -> list[tuple[int, int, int | None]]:
        return [p for p in workload_processes(layout.root) if p[1:] == (job["id"], attempt)]

    assert alive(1), "the kill left nothing of the gang running: the test proves nothing"

    with start_hetero_server(layout, "again", DEMO_NODES) as again:
        client = HeteroClient(again.base_url, again.token)
        until(lambda: [e for e in store.events(workload_id=job["id"]) if e.type in ("adopted", "requeued")],
              "the restart to take the workload up")
        first = store.attempts(job["id"])[0]
        assert first.outcome == "unlaunched", (first.outcome, first.processes)  # not adopted in part
        assert "the server restarted during its launch" in first.reason, first.reason
        assert not alive(1), "attempt 1 still runs"
        running = until(lambda: (w := client.workload(job["id"]))["state"] == "running" and w, "attempt 2", timeout=60)
        assert running["attempt_count"] == 2 and running["failures"] == 0, running
        assert len(store.attempts(job["id"])[1].processes) == 3  # the whole gang, at once
        assert not violations(store, catalog, acknowledged={"gang": job["id"]}, work_dir=work_dir)
        (layout.notebooks / "open").write_text("open")
        done = until(lambda: (w := client.workload(job["id"]))["state"] in FINAL and w, "the gang to end", timeout=60)
        assert done["state"] == "succeeded", done
        assert [a["outcome"] for a in done["attempts"]] == ["unlaunched", "succeeded"], done["attempts"]
        assert store.attempts(job["id"])[1].metrics["exit_codes"] == [0, 0, 0]
        assert not violations(store, catalog, acknowledged={"gang": job["id"]}, work_dir=work_dir)
        assert not workload_processes(layout.root), "a process outlived its workload"
    store.close()


def _described(pid: int) -> str:
    """A leftover process as a reader needs it: its parent and command line."""
    try:
        process = psutil.Process(pid)
        line = " ".join(process.cmdline())
        return f"ppid {process.ppid()} {os.readlink(f'/proc/{pid}/ns/pid')}: {line[:80]} ... {line[-100:]}"
    except psutil.Error:
        return "gone"
