"""Load on a real server over an inventory of 300 emulated nodes with 136 jobs running, two ways:

- closed-loop: 201 clients at once (67 each on GET /queues and GET /workloads/{id}, 67 submitting), each calling
  again as soon as it is answered, for a bounded time;
- polling: 200 readers each calling GET /queues or GET /workloads/{id} every 2 s (jittered), as 200 open panels
  do, while 4 clients submit 2,000 workloads.

Every request answered without an error, and every acknowledged submission in the store once. The figures
(requests, p50 and p99 per endpoint) are printed and kept in docs/reliability.md; they are measured, not asserted.
Set HETERO_RELIABILITY_LONG=1 for the longer variant.

The run is `jupyter_hetero.sim.api_load`, the code behind `jupyter hetero bench api`: a private `jupyter server`
of this checkout, real processes, a real SQLite store."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from sqlalchemy import func, select

from jupyter_hetero.sim.api_load import run_api_load
from jupyter_hetero.store import Repository
from jupyter_hetero.store.tables import WorkloadRow

REPO = Path(__file__).resolve().parents[2]
LONG = os.environ.get("HETERO_RELIABILITY_LONG") == "1"


def test_two_hundred_closed_loop_clients_lose_nothing_and_see_no_error():
    seeded = 2000 if LONG else 400
    check(run_api_load(REPO, nodes=300, workloads=seeded, duration_s=60 if LONG else 10, clients=67, submit_s=0,
                       settle_s=1, keep=True), seeded, "load")


def test_two_hundred_polling_panels_while_two_thousand_workloads_are_submitted():
    seeded = 400
    result = run_api_load(REPO, nodes=300, workloads=seeded, duration_s=300, clients=4, submit_s=0, settle_s=1,
                          keep=True, pollers=200, poll_interval_s=2.0, submissions=10_000 if LONG else 2_000)
    assert result["endpoints"]["POST /workloads"]["ok"] == (10_000 if LONG else 2_000), result["endpoints"]
    check(result, seeded, "polling")


def check(result: dict, seeded: int, label: str) -> None:
    kept = Path(result["kept"])
    try:
        endpoints = result["endpoints"]
        print(f"{label} " + json.dumps({"clients": result["clients"], "poll_interval_s": result["poll_interval_s"],
                                        "duration_s": result["duration_s"], "endpoints": endpoints,
                                        "submissions_per_s": result["submissions_per_s"]}))
        assert {name: figures["errors"] for name, figures in endpoints.items()} == dict.fromkeys(endpoints, 0), \
            {name: figures["first_errors"] for name, figures in endpoints.items()}
        submitted = endpoints["POST /workloads"]["ok"]
        assert submitted > 0 and endpoints["GET /queues"]["ok"] > 0 and endpoints["GET /workloads/{id}"]["ok"] > 0
        store = Repository(f"sqlite:///{kept / 'hetero.sqlite'}", clock=lambda: 0.0)
        with store.session() as session:
            stored = session.scalar(select(func.count()).select_from(WorkloadRow))
        store.close()
        assert stored == seeded + submitted  # every acknowledged submission is there, none twice
    finally:
        shutil.rmtree(kept, ignore_errors=True)
