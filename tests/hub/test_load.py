"""Load through the hub: 200 polling panels and 4 submitters, every request through the hub's proxy to its hetero
service with a hub user's token, as scripts and open panels make them.

One real JupyterHub, its configurable-http-proxy and the hetero service. Four hub users of two tenants (alice and
carol of vision by name; bob and dan of nlp by their hub group nlp-team) submit 10 workloads each first. Then 200
readers call GET /queues (as any of the four) or GET /workloads/{id} (one of those 40, as its owner) every 2 s,
jittered, while 4 submitters POST 2,000 workloads, the four users in turn. The driver is the single server's
(`jupyter_hetero.sim.api_load.drive`, behind tests/reliability/test_load.py and `jupyter hetero bench api`).

The workloads ask for 48 cores of the CPU flavor, which no node has (cpu-0 has 32; this machine's own inventory is
left out): they wait as inadmissible and nothing runs. Every request must be answered 200 or 201, and the
service's store must then hold every acknowledged submission once, each its submitter's. The figures are printed
as one JSON line and kept in docs/reliability.md; latency is measured, not asserted.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter

import pytest
from sqlalchemy import select

from jupyter_hetero.sim.api_load import drive, endpoint_figures
from jupyter_hetero.store import Repository
from jupyter_hetero.store.tables import WorkloadRow

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from ..harness import kill_runners_under
from .harness import CHP, HubProcess, hetero_service

pytestmark = pytest.mark.slow

API = "services/hetero/hetero/api/v1/"
USERS = ("alice", "carol", "bob", "dan")
SUBMISSIONS = 2_000
EARLIER = 10  # each user's workloads before the load, which the readers poll
# Fits no node, so it waits (inadmissible) and no process is started for it.
NEVER_RUNS = {"kind": "job", "template": "data-preprocessing", "parameters": {"cpu": 48},
              "command": ["python", "-c", "pass"]}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub-load")
    catalog = team_catalog(root)  # vision: alice and carol by name; nlp: the hub group nlp-team
    # The load is four users posting 500 workloads each as fast as they can: what the service bears, with the
    # per-user submission rate (which would make them wait, tests/handlers/test_request_limits.py) turned off.
    service, _url = hetero_service(root, catalog, DEMO_NODES, extra_args=("--HeteroApp.discover_local=False",
                                                                          "--HeteroApp.submissions_per_minute=0"))
    with HubProcess.start(root, groups={"nlp-team": ["bob", "dan"]}, users=("alice", "carol"),
                          extra_config=service) as running:
        yield running.with_service(USERS)
    kill_runners_under(root)  # nothing should run; should something have, it ends with the test


def test_two_hundred_polling_panels_through_the_hub_while_two_thousand_workloads_are_submitted(hub):
    owner = {}
    for user in USERS:
        for _ in range(EARLIER):
            status, workload = hub._request(API + "workloads", "POST", NEVER_RUNS, token=hub.tokens[user],
                                            check=False, with_status=True)
            assert status in (200, 201), workload
            owner[workload["id"]] = user
    turns = {endpoint: itertools.cycle(USERS) for endpoint in ("GET /queues", "POST /workloads")}

    def token(endpoint: str, workload_id: int | None) -> str:
        return hub.tokens[owner[workload_id] if workload_id is not None else next(turns[endpoint])]

    driven = asyncio.run(drive(hub.url, sorted(owner), 300, 4, pollers=200, poll_interval_s=2.0,
                               submissions=SUBMISSIONS, api=API, body=NEVER_RUNS, token=token))
    endpoints = endpoint_figures(driven)
    print("hub " + json.dumps({
        "clients": driven["clients"], "duration_s": round(driven["elapsed_s"], 1),
        "endpoints": {name: {key: figures[key] for key in ("ok", "errors", "p50_ms", "p99_ms", "max_ms")}
                      for name, figures in endpoints.items()},
        "submissions_per_s": round(len(driven["acknowledged"]) / driven["elapsed_s"], 1)}))

    assert {name: figures["errors"] for name, figures in endpoints.items()} == dict.fromkeys(endpoints, 0), \
        {name: figures["first_errors"] for name, figures in endpoints.items()}
    assert endpoints["GET /queues"]["ok"] > 0 and endpoints["GET /workloads/{id}"]["ok"] > 0
    acknowledged = driven["acknowledged"]
    assert len(acknowledged) == len(set(acknowledged)) == SUBMISSIONS
    store = Repository(f"sqlite:///{hub.root / 'hetero.sqlite'}", clock=lambda: 0.0)
    try:
        with store.session() as session:
            stored = session.execute(select(WorkloadRow.id, WorkloadRow.user, WorkloadRow.state)).all()
    finally:
        store.close()
    assert sorted(row.id for row in stored) == sorted([*owner, *acknowledged])  # each once, none lost, none extra
    # Each submission is the user whose token made it: the four in turn.
    assert Counter(row.user for row in stored) == dict.fromkeys(USERS, EARLIER + SUBMISSIONS // len(USERS))
    assert {row.state for row in stored} <= {"queued", "inadmissible"}
