"""A workload's credential, used by the code of a real job: it acts on its own workload and the follow-up jobs it
submits, which end with it; it creates nothing that would outlive its job (issue 33, item 6)."""

from __future__ import annotations

import json

import pytest

from .test_lifecycle import gate  # noqa: F401 - the gate fixture

pytestmark = pytest.mark.usefixtures("team")

# What the job runs: every call with its own credential, then it ends. ``TARGETS`` is prepended by the test.
JOB = '''
import json, os, urllib.error, urllib.request
BASE = os.environ["JUPYTER_HETERO_URL"].rstrip("/") + "/hetero/api/v1/"
TOKEN = os.environ["JUPYTER_HETERO_TOKEN"]

def call(method, path, body=None):
    request = urllib.request.Request(BASE + path, data=None if body is None else json.dumps(body).encode(),
                                     method=method, headers={"Authorization": "token " + TOKEN})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return [response.status, json.loads(response.read() or b"null")]
    except urllib.error.HTTPError as error:
        return [error.code, json.loads(error.read() or b"null")]

follow_up = call("POST", "workloads", {"kind": "job", "template": "data-preprocessing",
                                       "code": "import time\\ntime.sleep(600)"})
report = {
    "placement": call("POST", "kernels/placements", {"kernel_id": "minted"}),
    "started": call("POST", "kernels/placements/%d/started" % TARGETS["placement"], {}),
    "activity": call("POST", "activity", {"kernels": [{"workload_id": TARGETS["placement"],
                                                       "execution_state": "busy"}]}),
    "server": call("POST", "servers", {"template": "interactive"}),
    "service": call("POST", "services", {"name": "minted", "command": ["true"]}),
    "sibling": call("GET", "workloads/%d" % TARGETS["sibling"])[0],
    "cancel_sibling": call("DELETE", "workloads/%d" % TARGETS["sibling"])[0],
    "follow_up": follow_up,
    "read_follow_up": call("GET", "workloads/%d" % follow_up[1]["id"])[0],
    "listed": sorted(w["id"] for w in call("GET", "workloads")[1]),
}
print("SCOPE " + json.dumps(report), flush=True)
'''


async def test_a_jobs_credential_creates_nothing_that_outlives_it_and_its_follow_ups_end_with_it(
        api, gate, wait_for):  # noqa: F811
    sibling = (await api("workloads", "POST", gate.job("sibling", template="data-preprocessing"), as_user="alice"))
    placement = await api("kernels/placements", "POST", {"kernel_id": "alices-own"}, as_user="alice")
    targets = {"sibling": sibling["id"], "placement": placement["id"]}
    job = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing",
                                          "code": f"TARGETS = {json.dumps(targets)}\n{JOB}"}, as_user="alice")
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), as_user="alice")
    log = await api.text(f"workloads/{job['id']}/logs", as_user="alice")
    assert done["state"] == "succeeded", log
    report = json.loads(next(line for line in log.splitlines() if line.startswith("SCOPE ")).removeprefix("SCOPE "))

    # A placement, its started mark, an activity report, a server, a service: each would outlive the job.
    for call in ("placement", "started", "activity", "server", "service"):
        status, error = report[call]
        assert (status, error["reason"]) == (403, "credential-scope"), (call, report[call])
    assert f"workload {job['id']} creates must end with it" in report["placement"][1]["message"]
    # Alice's other work is not the job's, though alice submitted both.
    assert (report["sibling"], report["cancel_sibling"]) == (403, 403)
    # A follow-up job is the job's own: it reads it, and lists only itself and it.
    status, follow_up = report["follow_up"]
    assert (status, follow_up["user"], follow_up["spec"]["parent"]) == (201, "alice", job["id"])
    assert report["read_follow_up"] == 200
    assert report["listed"] == sorted([job["id"], follow_up["id"]])
    # ... and it ends with the job that submitted it.
    ended = await wait_for(follow_up["id"], lambda w: w["state"] == "cancelled", as_user="alice")
    assert f"its parent workload {job['id']} ended" in ended["reason"]
    assert (await api(f"workloads/{sibling['id']}", as_user="alice"))["stopping"] is None
    assert [w["id"] for w in await api("workloads", kind="kernel", as_user="alice")] == [placement["id"]]
    for workload in (sibling, placement):
        await api(f"workloads/{workload['id']}", "DELETE", as_user="alice")
