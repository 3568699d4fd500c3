"""The store under faults, on a real `jupyter server`: its disk full (the server's file-size limit lowered to what
is written, as a full disk makes writes fail) and its SQLite file locked by another process past the busy timeout.
Submissions meanwhile are a 503 that says so and store nothing; reads keep answering; once the fault is gone the
server takes work again, what it acknowledged runs, and every invariant holds."""

from __future__ import annotations

import resource
import sqlite3
import sys
import time
from collections.abc import Iterator

import pytest

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.notebook.client import ApiError, HeteroClient
from jupyter_hetero.store import Repository

from ..conftest import DEMO_NODES
from ..harness import LabServer, ServerLayout, start_hetero_server, until
from .invariants import violations

pytestmark = pytest.mark.slow

GATE = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\n"


@pytest.fixture
def server(tmp_path) -> Iterator[LabServer]:
    layout = ServerLayout.create(tmp_path)
    (layout.notebooks / "gate.py").write_text(GATE, encoding="utf-8")
    with start_hetero_server(layout, "server", DEMO_NODES) as server:
        yield server


def submit(client: HeteroClient, name: str, **body) -> tuple[int, dict]:
    try:
        return 201, client.submit(name=name, template="data-preprocessing", **body)
    except ApiError as error:
        return error.status, error.body


def test_a_full_disk_and_a_locked_store_refuse_writes_with_a_503_and_lose_nothing(server, tmp_path):
    client = HeteroClient(server.base_url, server.token)
    db = tmp_path / "state" / "hetero.sqlite"
    store = Repository(f"sqlite:///{db}", clock=time.time)
    gate = tmp_path / "notebooks" / "open"  # in the server's root: a sandboxed job sees it
    acknowledged, refused = {}, []
    held = client.submit(name="held", template="data-preprocessing", script={"path": "gate.py", "args": [str(gate)]})
    acknowledged["held"] = held["id"]
    until(lambda: client.workload(held["id"])["state"] == "running", "the held job to run")

    # The disk fills: no file of the server's may grow (its rlimit, inherited by nothing already running).
    limits = resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE)
    resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE, (0, limits[1]))
    try:
        answers = [submit(client, f"full-{i}", command=[sys.executable, "-c", "pass"]) for i in range(3)]
        assert client.queues()  # reads answer
    finally:
        resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE, limits)
    for i, (status, body) in enumerate(answers):
        assert status in (201, 503), (status, body)  # never a 500
        if status == 503:
            assert body["reason"] == "store-unavailable" and "nothing of this request was stored" in body["message"]
            assert body["message_zh"], body
            refused.append(f"full-{i}")
        else:
            acknowledged[f"full-{i}"] = body["id"]
    assert refused, answers  # the full disk was met

    # Another process holds the SQLite write lock past the server's busy timeout (10 s).
    locker = sqlite3.connect(db, timeout=1)
    locker.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        status, body = submit(client, "locked", command=[sys.executable, "-c", "pass"])
        assert (status, body.get("reason")) == (503, "store-unavailable"), (status, body)
        assert time.monotonic() - started >= 9  # it waited the busy timeout out first
        refused.append("locked")
        assert client.workload(held["id"])["state"] == "running"  # reads answer
    finally:
        locker.rollback()
        locker.close()

    # Both gone: work is taken and runs again, and the held job ends as it should.
    status, body = submit(client, "after", command=[sys.executable, "-c", "print('after')"])
    assert status == 201, body
    acknowledged["after"] = body["id"]
    gate.write_text("open")
    for workload_id in acknowledged.values():
        done = until(lambda w=workload_id: (s := client.workload(w))["state"] in ("succeeded", "failed") and s,
                     "the acknowledged work to end", timeout=60)
        assert done["state"] == "succeeded", done
    names = {w["name"] for w in client.workloads(limit=100)}
    assert not names & set(refused), names  # refused means not stored, not half stored
    assert not violations(store, load_catalog(DEFAULT_CATALOG_PATH), acknowledged=acknowledged,
                          work_dir=tmp_path / "state" / "work")
    print(f"store faults: {len(refused)} submissions refused (503) while the disk was full or the store locked, "
          f"{len(acknowledged)} acknowledged and run, none lost")
