"""The audit log through a real server: what goes into it (admin actions, denials, the scheduler's preemptions,
service changes), who may read it (platform admins; a member's attempt is refused and recorded), its filters and
pages, and its verification after someone edits or deletes an entry in the database behind the server's back; and
``jupyter hetero audit verify`` on that database, as a separate process."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from jupyter_hetero.api.openapi import build_document

from .test_api_schema import check

pytestmark = pytest.mark.usefixtures("team")

GATE = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\n"


def verify(db_url: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jupyter_hetero.cli", "audit", "verify", "--db-url", db_url],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.team(vision_a100=2)
async def test_the_audit_log_records_reads_verifies_and_catches_an_edit_and_a_deletion(
        api, api_error, wait_for, hetero_config, jp_root_dir):
    (jp_root_dir / "gate.py").write_text(GATE, encoding="utf-8")
    gated = {"kind": "job", "template": "training", "script": {"path": "gate.py", "args": [str(jp_root_dir / "open")]}}
    # The scheduler preempts a batch job for an urgent one (one A100 of two is reserved for inference).
    victim = await api("workloads", "POST", {**gated, "queue": "batch"}, as_user="alice")
    await wait_for(victim["id"], lambda w: w["state"] == "running", as_user="alice")
    urgent = await api("workloads", "POST", {**gated, "queue": "urgent"}, as_user="bob")
    await wait_for(urgent["id"], lambda w: w["state"] == "running", as_user="bob", timeout=60)
    # A member is refused (and that is recorded); an admin's action is recorded.
    status, error = await api_error("audit", as_user="alice")
    assert (status, error["reason"]) == (403, "audit.read needs the platform-admin role; you are member"), error
    await api(f"workloads/{urgent['id']}/preempt", "POST", as_user="root")

    page = await api("audit", as_user="root")
    check(build_document(), "/audit", "get", 200, page)
    entries = {(e["actor"], e["action"], e["target"], e["outcome"]) for e in page["entries"]}
    assert ("scheduler", "workload.preempt", f"workload/{victim['id']}", "done") in entries
    assert ("alice", "audit.read", "audit", "denied") in entries
    assert ("root", "workload.preempt", f"workload/{urgent['id']}", "allowed") in entries
    preempted = next(e for e in page["entries"] if e["actor"] == "scheduler")
    assert preempted["detail"]["preemptor"] == urgent["id"] and "preempted by urgent workload" in \
        preempted["detail"]["why"]
    # Filters: a prefix of actions, an outcome; pages follow one another.
    denied = await api("audit", as_user="root", outcome="denied")
    assert {e["actor"] for e in denied["entries"]} == {"alice"}
    preemptions = await api("audit", as_user="root", action="workload.")
    assert [e["target"] for e in preemptions["entries"]] == [f"workload/{victim['id']}", f"workload/{urgent['id']}"]
    first = await api("audit", as_user="root", limit=1)
    second = await api("audit", as_user="root", limit=1, after=first["next_after"])
    assert second["entries"][0]["id"] > first["entries"][0]["id"] and second["entries"][0]["prev_hash"] == \
        first["entries"][0]["hash"]
    status, error = await api_error("audit", as_user="root", limit=0)
    assert (status, error["field"]) == (400, "limit"), error

    verdict = await api("audit/verify", as_user="root")
    check(build_document(), "/audit/verify", "get", 200, verdict)
    assert verdict["intact"] and verdict["first_bad"] is None and verdict["entries"] >= 6, verdict
    db_url = hetero_config["db_url"]
    intact = verify(db_url)
    assert intact.returncode == 0 and intact.stdout.startswith("audit log intact: "), intact.stdout + intact.stderr

    # Someone with the database file turns a denial into an allowed action: the chain shows it.
    database = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    denial = next(e["id"] for e in page["entries"] if e["outcome"] == "denied")
    with database:
        database.execute("UPDATE audit SET outcome = 'allowed' WHERE id = ?", (denial,))
    edited = await api("audit/verify", as_user="root")
    assert (edited["intact"], edited["first_bad"]) == (False, denial), edited
    assert "was changed after it was written" in edited["problem"]
    caught = verify(db_url)
    assert caught.returncode == 1 and f"audit log broken at entry {denial}:" in caught.stderr, caught.stderr
    # ... and, put back, deletes the scheduler's preemption instead.
    with database:
        database.execute("UPDATE audit SET outcome = 'denied' WHERE id = ?", (denial,))
        database.execute("DELETE FROM audit WHERE id = ?", (preempted["id"],))
    database.close()
    deleted = await api("audit/verify", as_user="root")
    assert deleted["intact"] is False and deleted["first_bad"] > preempted["id"], deleted
    assert "an entry between them was deleted or rewritten" in deleted["problem"]
    assert verify(db_url).returncode == 1

    (jp_root_dir / "open").touch()
    for workload in (victim, urgent):
        await wait_for(workload["id"], lambda w: w["state"] in ("succeeded", "cancelled"), as_user="root",
                       timeout=60)
