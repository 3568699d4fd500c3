"""One workload's evidence chain through a real server with real processes: a training job preempted by an urgent
one, then run to success, followed from its request to its release through ``GET /workloads/{id}/evidence`` and
``jupyter hetero evidence`` (a separate process against the same server); an audit row edited behind the server's
back breaks the proof; another tenant's member is refused."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys

import pytest

from jupyter_hetero.api.openapi import build_document

from .test_api_schema import check
from .test_lifecycle import final, gate, log_shows, running  # noqa: F401 - gate is a fixture

HOSTILE = "<script>alert('x')</script> & co"


async def hetero_cli(*args: str, port: int, base_url: str, token: str) -> str:
    """``jupyter hetero ARGS`` as its own process; off the event loop, which serves its requests."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jupyter_hetero.cli", *args, "--url", f"http://127.0.0.1:{port}{base_url}",
        "--token", token, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()
    return out.decode()


@pytest.mark.team(vision_a100=2)
async def test_a_preempted_then_successful_job_has_its_whole_evidence_chain(
        team, api, api_error, wait_for, gate, hetero_config, jp_http_port, jp_base_url):  # noqa: F811
    batch = await api("workloads", "POST", {**gate.job("batch-gate", template="training", queue="batch",
                                                       parameters={"devices": 2}), "name": HOSTILE},
                      as_user="alice", headers={"Idempotency-Key": "evidence-1"})
    await wait_for(batch["id"], running, as_user="alice")
    await log_shows(api, batch["id"], "attempt 1", as_user="alice")
    urgent = await api("workloads", "POST", gate.job("urgent-gate", template="training", queue="urgent"),
                       as_user="alice")
    await wait_for(urgent["id"], running, as_user="alice")
    # While the urgent job runs, the preempted one waits: its blockers are recorded as a `waiting` event.
    await wait_for(batch["id"], lambda w: w["state"] == "queued" and w.get("blockers"), as_user="alice")
    deadline = asyncio.get_running_loop().time() + 30
    while "waiting" not in [e["type"] for e in await api(f"workloads/{batch['id']}/events", as_user="alice")]:
        assert asyncio.get_running_loop().time() < deadline, "no waiting event was recorded"
        await asyncio.sleep(0.1)
    gate.open("urgent-gate")
    await wait_for(urgent["id"], final, as_user="alice")
    await wait_for(batch["id"], lambda w: running(w) and w["attempt_count"] == 2, as_user="alice")
    gate.open("batch-gate")
    assert (await wait_for(batch["id"], final, as_user="alice"))["state"] == "succeeded"

    chain = await api(f"workloads/{batch['id']}/evidence", as_user="alice")
    check(build_document(), "/workloads/{workload_id}/evidence", "get", 200, chain)
    assert list(chain)[3:] == ["request", "attempts", "wait", "utilisation", "alerts", "preemptions", "release",
                               "events", "audit"]
    request = chain["request"]
    assert (request["kind"], request["template"], request["queue"], request["submitter"], request["tenant"]) == \
        ("job", "training", "batch", "alice", "vision")
    assert request["parameters"] == {"devices": 2} and request["idempotency_key"] == "evidence-1"
    assert request["resolved"]["flavors"] == request["flavors"] and "a100-80g" in request["flavors"]

    first, second = chain["attempts"]
    assert (first["number"], first["outcome"], second["number"], second["outcome"]) == \
        (1, "preempted", 2, "succeeded")
    for attempt in (first, second):
        [node] = attempt["nodes"]
        facts = attempt["node_labels"][node]
        assert facts["flavor"] == "a100-80g" and facts["chip"] and facts["labels"], facts
        assert attempt["log_tail"]["lines"][0] == f"attempt {attempt['number']} resume-from -"
    assert second["exit_code"] == 0

    waits = chain["wait"]
    assert [(w["attempt"], w["from_event"]) for w in waits] == [(1, "submitted"), (2, "requeued")]
    assert all(w["admitted_at"] is not None for w in waits)
    recorded = [step for step in waits[1]["blockers"] if step["event"] == "waiting"]
    assert recorded and recorded[0]["blockers"][0]["message"], waits
    assert "waiting" in [e["type"] for e in chain["events"]]

    [preemption] = chain["preemptions"]
    assert (preemption["by_workload"], preemption["why"], preemption["attempt"]) == (urgent["id"], "priority", 1)
    release = chain["release"]
    assert (release["final"], release["state"], release["attempts"], release["preemptions"]) == \
        (True, "succeeded", 2, 1)
    assert release["event"]["type"] == "succeeded"
    assert chain["utilisation"]["series_recorded"] is True  # the store's metric samples, whatever it measured
    assert all({"name", "unit", "source", "count", "points"} <= set(series) for series in chain["utilisation"]["series"])
    assert [u["attempt"] for u in chain["utilisation"]["attempts"]] == [1, 2]
    assert isinstance(chain["alerts"], list)
    [entry] = chain["audit"]["entries"]
    assert (entry["actor"], entry["action"], entry["target"]) == ("scheduler", "workload.preempt",
                                                                  f"workload/{batch['id']}")
    assert chain["audit"]["verification"]["intact"] is True and chain["audit"]["verification"]["first_break"] is None

    # The command line shows the same chain, as JSON and as text with a section per part.
    cli = {"port": jp_http_port, "base_url": jp_base_url, "token": "alice-token"}
    printed = json.loads(await hetero_cli("evidence", str(batch["id"]), "--format", "json", **cli))
    assert printed["attempts"] == chain["attempts"] and printed["preemptions"] == chain["preemptions"]
    assert printed["release"] == chain["release"] and printed["audit"]["verification"]["intact"] is True
    text = await hetero_cli("evidence", str(batch["id"]), **cli)
    for heading in ("Request", "Attempts", "Waits and blockers", "Utilisation", "Alerts", "Preemptions", "Release",
                    "Events", "Audit"):
        assert f"== {heading} ==" in text
    assert f"priority (By: workload {urgent['id']})" in text and "audit chain intact" in text

    # As one HTML page, the job's name escaped.
    page = await api.text(f"workloads/{batch['id']}/evidence", as_user="carol", format="html", lang="zh")
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; co" in page

    # Another tenant's member is refused; a teammate (not the submitter) does not see the key.
    status, _error = await api_error(f"workloads/{batch['id']}/evidence", as_user="bob")
    assert status in (403, 404)
    assert (await api(f"workloads/{batch['id']}/evidence", as_user="carol"))["request"]["idempotency_key"] == ""

    # Someone with the database file edits the preemption's audit entry: the proof says so.
    database = sqlite3.connect(hetero_config["db_url"].removeprefix("sqlite:///"))
    with database:
        database.execute("UPDATE audit SET actor = 'nobody' WHERE id = ?", (entry["id"],))
    database.close()
    broken = (await api(f"workloads/{batch['id']}/evidence", as_user="root"))["audit"]["verification"]
    assert (broken["intact"], broken["first_break"]) == (False, entry["id"]), broken
    assert "was changed after it was written" in broken["problem"]
