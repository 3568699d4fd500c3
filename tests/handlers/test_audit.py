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
    # Requeued, the urgent job runs again on the free A100, beside the batch job back on inference's reserved one:
    # it evicts nobody for it (the reservation is held by the batch job, which inference can still take back).
    await wait_for(urgent["id"], lambda w: w["state"] == "running" and w["attempt_count"] == 2, as_user="bob",
                   timeout=60)

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


async def test_a_rehashed_rewrite_and_a_truncation_are_caught_by_the_sealed_chain(
        api, api_error, jp_fetch, hetero_config, jp_runtime_dir):
    from ..store.test_audit_seal import rehash_without_key
    from .test_metrics import scrape

    for _ in range(4):  # four denials, as in the attack on issue 33
        status, _error = await api_error("audit", as_user="alice")
        assert status == 403
    entries = (await api("audit", as_user="root"))["entries"]
    denials = [e["id"] for e in entries if e["outcome"] == "denied"]
    assert len(denials) == 4 and (await api("audit/verify", as_user="root"))["intact"]
    assert verify(hetero_config["db_url"]).returncode == 0
    # The head is anchored outside the database: the metrics endpoint and the anchor file beside the key.
    [sample] = (await scrape(jp_fetch))["hetero_audit_head"].samples  # the scrape's own entry is the head
    head = (await api("audit", as_user="root", limit=5000))["entries"][-2]
    assert (sample.value, sample.labels["mac"]) == (head["id"], head["hash"]) and head["action"] == "metrics.read"
    assert (jp_runtime_dir / "jupyter_hetero_audit.key").stat().st_mode & 0o077 == 0
    assert f"{head['id']} {head['hash']}" in (jp_runtime_dir / "jupyter_hetero_audit_anchor.log").read_text()

    # Someone with the database but not the key deletes the newest four entries.
    path = hetero_config["db_url"].removeprefix("sqlite:///")
    database = sqlite3.connect(path)
    kept = database.execute("SELECT max(id) FROM audit").fetchone()[0] - 4
    saved = database.execute("SELECT * FROM audit WHERE id > ?", (kept,)).fetchall()
    with database:
        database.execute("DELETE FROM audit WHERE id > ?", (kept,))
    truncated = verify(hetero_config["db_url"])
    assert truncated.returncode == 1 and "the log was truncated" in truncated.stderr, truncated.stderr
    verdict = await api("audit/verify", as_user="root")
    assert not verdict["intact"] and "the log was truncated" in verdict["problem"], verdict
    with database:  # put back (the verify just now took one of their ids: it goes)
        database.execute("DELETE FROM audit WHERE id > ?", (kept,))
        database.executemany(f"INSERT INTO audit VALUES ({', '.join('?' * len(saved[0]))})", saved)
    database.close()
    assert verify(hetero_config["db_url"]).returncode == 0

    # ... then deletes three denials, turns the fourth into "allowed" and rehashes the chain from there.
    rehash_without_key(hetero_config["db_url"], f"DELETE FROM audit WHERE id IN {tuple(denials[:3])}",
                       f"UPDATE audit SET outcome = 'allowed' WHERE id = {denials[3]}", start=denials[0])
    caught = verify(hetero_config["db_url"])
    assert caught.returncode == 1 and f"audit log broken at entry {denials[3]}: entry {denials[3]} was rewritten " \
        "without the server's key" in caught.stderr, caught.stderr
    verdict = await api("audit/verify", as_user="root")
    assert (verdict["intact"], verdict["first_bad"]) == (False, denials[3]), verdict
