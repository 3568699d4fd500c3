"""Load: 201 clients at once on a real server (67 each polling GET /queues and GET /workloads/{id}, 67 submitting),
for a bounded time, over an inventory of 300 emulated nodes with 136 jobs running. Every request answered
without an error, and every acknowledged submission in the store. The figures (requests, p50 and p99 per
endpoint) are printed and kept in docs/reliability.md; set HETERO_RELIABILITY_LONG=1 for the longer variant.

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


def test_two_hundred_clients_polling_while_work_is_submitted_lose_nothing_and_see_no_error():
    seeded = 2000 if LONG else 400
    result = run_api_load(REPO, nodes=300, workloads=seeded, duration_s=60 if LONG else 10, clients=67, submit_s=0,
                          settle_s=1, keep=True)
    kept = Path(result["kept"])
    try:
        endpoints = result["endpoints"]
        print("load " + json.dumps({"clients": 3 * result["clients_per_endpoint"], "duration_s": result["duration_s"],
                                    "endpoints": endpoints, "submissions_per_s": result["submissions_per_s"]}))
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
