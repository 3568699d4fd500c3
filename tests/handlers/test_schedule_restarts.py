"""Schedules across real restarts of a real server on one SQLite file, its wall clock moved by the test between
them (tests.fakes.FileClock): due times missed while the server was down make one late run (run-once) or none
(skip), then the next due time is the next to come; the runs a schedule listed survive a kill of the server."""

from __future__ import annotations

import os
import signal
import time

import pytest

from jupyter_hetero.notebook.client import HeteroClient

from ..conftest import DEMO_NODES
from ..harness import ServerLayout, start_hetero_server, until

JOB = {"template": "data-preprocessing", "queue": "experiment", "code": "print('scheduled run')"}
HOUR = 3600.0

pytestmark = pytest.mark.slow


class Server:
    """A real server over ``layout``'s store, reading the wall clock ``offset`` moves."""

    def __init__(self, tmp_path):
        self.layout = ServerLayout.create(tmp_path)
        self.offset = tmp_path / "wall-offset"
        self.offset.write_text("0", encoding="utf-8")

    def start(self, name: str):
        return start_hetero_server(self.layout, name, DEMO_NODES, "--HeteroApp.clock_class=tests.fakes.FileClock",
                                   env={"HETERO_TEST_WALL_OFFSET": str(self.offset)})

    def move_to(self, wall: float) -> None:
        """The servers' wall clock reads ``wall`` now (and runs on from it)."""
        self.offset.write_text(repr(wall - time.time()), encoding="utf-8")


def _schedule(client: HeteroClient, name: str, missed: str, cron: str = "0 * * * *") -> dict:
    return client.request("POST", "schedules", {"name": name, "cron": cron, "missed": missed, "job": JOB})


@pytest.mark.parametrize(("missed", "runs"), [pytest.param("run-once", 1, id="run-once: one late run"),
                                              pytest.param("skip", 0, id="skip: none")])
def test_due_times_missed_while_the_server_was_down(tmp_path, missed, runs):
    server = Server(tmp_path)
    with server.start("before") as running:
        client = HeteroClient(running.base_url, running.token)
        created = _schedule(client, "hourly", missed)
        # Its witness runs once, late, after the restart: the runner's first round then has passed.
        witness = _schedule(client, "witness", "run-once")
    due = created["next_run_at"]
    assert witness["next_run_at"] == due and due % HOUR == 0
    server.move_to(due + 3 * HOUR + 600)  # down across four due times: due, +1 h, +2 h, +3 h
    with server.start("after") as running:
        client = HeteroClient(running.base_url, running.token)
        seen = until(lambda: (found := client.request("GET", f"schedules/{witness['id']}"))["runs"] and found,
                     "the witness's late run", timeout=60)
        assert seen["runs"][0]["late"] is True
        after = client.request("GET", f"schedules/{created['id']}")
        assert after["next_run_at"] == due + 4 * HOUR  # the next to come, whatever the rule
        assert len(after["runs"]) == runs
        ran = [w for w in client.request("GET", "workloads") if w["schedule"] == created["id"]]
        assert len(ran) == runs
        if runs:
            run = after["runs"][0]
            assert run["late"] is True and run["due_at"] == due  # one run, for the first due time it missed
            done = until(lambda: (w := client.workload(run["workload"]))["state"] in ("succeeded", "failed") and w,
                         "the late run to end", timeout=60)
            assert done["state"] == "succeeded"


def test_a_schedules_runs_survive_a_kill_of_the_server_and_none_is_submitted_twice(tmp_path):
    server = Server(tmp_path)
    with server.start("first") as running:
        client = HeteroClient(running.base_url, running.token)
        created = _schedule(client, "minutely", "run-once", cron="* * * * *")
        due = created["next_run_at"]
        server.move_to(due + 1)
        ran = until(lambda: (found := client.request("GET", f"schedules/{created['id']}"))["runs"] and found,
                    "the due run", timeout=60)
        until(lambda: client.workload(ran["runs"][0]["workload"])["state"] == "succeeded", "the run to end",
              timeout=60)
        os.killpg(running.process.pid, signal.SIGKILL)  # no clean stop
        running.process.wait(30)
    with server.start("second") as running:
        client = HeteroClient(running.base_url, running.token)
        after = client.request("GET", f"schedules/{created['id']}")
        assert after["runs"] == [{**ran["runs"][0], "state": "succeeded"}]
        assert (after["next_run_at"], after["last_run_at"]) == (due + 60, ran["last_run_at"])
        server.move_to(due + 61)  # the next due time comes: its own run, the first is not made again
        until(lambda: len(client.request("GET", f"schedules/{created['id']}")["runs"]) == 2, "the next run",
              timeout=60)
        submitted = [w["id"] for w in client.request("GET", "workloads") if w["schedule"] == created["id"]]
        assert len(submitted) == 2
