"""Job dependencies (``after``) through the REST API of real servers with real jobs: a job waits, with a
blocker naming the workload it awaits, until that one ends as its condition asks; a condition that can no
longer hold fails it with the reason; the dependency survives a restart; another tenant's workload cannot be
awaited. Jobs wait on gate files the test creates, so nothing depends on timing."""

from __future__ import annotations

import os
import signal
import sqlite3

import pytest

from jupyter_hetero.notebook.client import HeteroClient

from ..conftest import DEMO_NODES
from ..harness import ServerLayout, start_hetero_server, until
from .test_lifecycle import GATE, final, gate, running  # noqa: F401 - the gate fixture

# The experiment queue retries nothing: a failing job fails at its first exit.
CPU = {"kind": "job", "template": "data-preprocessing", "queue": "experiment"}


def _job(after: list[dict] | None = None, code: str = "print('ran')") -> dict:
    return {**CPU, "code": code, **({"after": after} if after is not None else {})}


def _events(events: list[dict]) -> list[tuple[str, str | None]]:
    return [(e["type"], e["reason"]) for e in events]


async def test_a_job_after_another_ok_waits_with_the_blocker_then_runs_once_it_succeeded(api, wait_for, gate):  # noqa: F811
    first = await api("workloads", "POST", {**CPU, **gate.job("a")})
    second = await api("workloads", "POST", _job([{"workload": first["id"]}]))
    assert second["spec"]["after"] == [{"workload": first["id"], "condition": "ok"}]
    await wait_for(first["id"], running)
    waiting = await wait_for(second["id"], lambda w: any("(running)" in b["message"] for b in w.get("blockers") or ()))
    assert waiting["state"] == "queued"
    assert waiting["blockers"][0]["kind"] == "after-ok"
    assert waiting["blockers"][0]["message"] == f"dependency: waits for workload {first['id']} (running) to succeed"
    explained = await api(f"workloads/{second['id']}/explain")
    assert any(f"waits for workload {first['id']} (running) to succeed" in line for line in explained["lines"])
    assert "admitted" not in [e["type"] for e in await api(f"workloads/{second['id']}/events")]
    gate.open("a")
    done = await wait_for(second["id"], final, timeout=60)
    assert done["state"] == "succeeded"
    ended = await api(f"workloads/{first['id']}")
    assert ended["state"] == "succeeded" and done["admitted_at"] >= ended["finished_at"]


async def test_a_condition_that_can_no_longer_hold_fails_the_job_with_the_reason(api, wait_for, gate):  # noqa: F811
    failing = await api("workloads", "POST", {**CPU, **gate.job("f", exit_code=3)})
    after_ok = await api("workloads", "POST", _job([{"workload": failing["id"], "condition": "ok"}]))
    after_any = await api("workloads", "POST", _job([{"workload": failing["id"], "condition": "any"}]))
    after_failed = await api("workloads", "POST", _job([{"workload": failing["id"], "condition": "failed"}]))
    await wait_for(after_ok["id"], lambda w: w.get("blockers"))
    gate.open("f")
    assert (await wait_for(failing["id"], final, timeout=60))["state"] == "failed"
    failed = await wait_for(after_ok["id"], final, timeout=60)
    reason = f"dependency not met: workload {failing['id']} failed"
    assert failed["state"] == "failed" and failed["reason"] == reason
    assert ("failed", reason) in _events(await api(f"workloads/{after_ok['id']}/events"))
    assert failed["attempt_count"] == 0  # it never ran
    assert (await wait_for(after_any["id"], final, timeout=60))["state"] == "succeeded"
    succeeded = await wait_for(after_failed["id"], final, timeout=60)
    assert succeeded["state"] == "succeeded"
    # Awaiting a failure of a job that succeeded can never hold either.
    never = await api("workloads", "POST", _job([{"workload": succeeded["id"], "condition": "failed"}]))
    done = await wait_for(never["id"], final, timeout=60)
    assert done["state"] == "failed"
    assert done["reason"] == f"dependency not met: workload {succeeded['id']} succeeded"


@pytest.mark.team
async def test_a_resubmitted_job_waits_again_for_what_it_waited_for(team, api, api_error, wait_for, gate,  # noqa: F811
                                                                    tmp_path):
    first = await api("workloads", "POST", {**CPU, **gate.job("r")}, as_user="alice")
    second = await api("workloads", "POST", _job([{"workload": first["id"]}]), as_user="alice")
    await wait_for(second["id"], lambda w: w.get("blockers"), as_user="alice")
    await api(f"workloads/{second['id']}", "DELETE", as_user="alice")
    # Its submitter's re-submission waits for the same workload, as Slurm's requeue keeps a job's dependencies.
    again = await api(f"workloads/{second['id']}/resubmit", "POST", {}, as_user="alice")
    assert again["spec"]["after"] == [{"workload": first["id"], "condition": "ok"}]
    waiting = await wait_for(again["id"], lambda w: w.get("blockers"), as_user="alice")
    assert (waiting["state"], waiting["blockers"][0]["kind"]) == ("queued", "after-ok")
    # A teammate's re-submission is their own job: it awaits nothing of alice's.
    teammates = await api(f"workloads/{second['id']}/resubmit", "POST", {}, as_user="carol")
    assert "after" not in teammates["spec"]
    gate.open("r")
    assert (await wait_for(again["id"], final, timeout=60, as_user="alice"))["state"] == "succeeded"
    # A condition that can no longer hold is evaluated again: the re-submitted job fails with the reason.
    never = await api("workloads", "POST", _job([{"workload": first["id"], "condition": "failed"}]), as_user="alice")
    reason = f"dependency not met: workload {first['id']} succeeded"
    assert (await wait_for(never["id"], final, timeout=60, as_user="alice"))["reason"] == reason
    retried = await api(f"workloads/{never['id']}/resubmit", "POST", {}, as_user="alice")
    done = await wait_for(retried["id"], final, timeout=60, as_user="alice")
    assert (done["state"], done["reason"], done["attempt_count"]) == ("failed", reason, 0)
    # An awaited workload gone from the store since (a database restored from before it) is refused as a
    # submission naming it is, and nothing is submitted.
    database = sqlite3.connect(tmp_path / "hetero.sqlite")
    with database:
        database.execute("PRAGMA foreign_keys = OFF")
        for table, column in (("events", "workload_id"), ("attempts", "workload_id"), ("workloads", "id")):
            database.execute(f"DELETE FROM {table} WHERE {column} = ?", (first["id"],))
    database.close()
    count = len(await api("workloads", as_user="root"))
    status, error = await api_error(f"workloads/{second['id']}/resubmit", "POST", {}, as_user="alice")
    assert (status, error["field"]) == (404, "after.0.workload"), error
    assert len(await api("workloads", as_user="root")) == count


async def test_every_awaited_workload_must_hold(api, wait_for, gate):  # noqa: F811
    one = await api("workloads", "POST", {**CPU, **gate.job("one")})
    two = await api("workloads", "POST", {**CPU, **gate.job("two")})
    both = await api("workloads", "POST", _job([{"workload": one["id"]}, {"workload": two["id"], "condition": "any"}]))
    gate.open("one")
    await wait_for(one["id"], final, timeout=60)
    # Once the first succeeded, only the second holds it (as the latest tick found the second: running).
    only_two = [("after-any", {"workload": two["id"], "state": "running"})]
    waiting = await wait_for(both["id"],
                             lambda w: [(b["kind"], b["params"]) for b in w.get("blockers") or ()] == only_two)
    assert waiting["state"] == "queued"
    gate.open("two")
    assert (await wait_for(both["id"], final, timeout=60))["state"] == "succeeded"


@pytest.mark.parametrize(("after", "status", "field"), [
    pytest.param([{"workload": 99999}], 404, "after.0.workload", id="an unknown workload is a 404 naming it"),
    pytest.param([{"workload": "twelve"}], 400, "after.0.workload", id="a workload that is no id"),
    pytest.param([{"workload": 0}], 400, "after.0.workload", id="a workload id below 1"),
    pytest.param([{"workload": 1, "condition": "maybe"}], 400, "after.0.condition", id="an unknown condition"),
    pytest.param([{"workload": 1, "when": "ok"}], 400, "after.0.when", id="an unknown key"),
    pytest.param({"workload": 1}, 400, "after", id="not a list"),
])
async def test_a_bad_dependency_is_refused_naming_the_field(api, api_error, after, status, field):
    first = await api("workloads", "POST", _job())
    assert first["id"] == 1
    code, error = await api_error("workloads", "POST", _job(after))
    assert (code, error["field"]) == (status, field)
    assert [w["id"] for w in await api("workloads")] == [1]  # nothing stored


async def test_another_tenants_workload_cannot_be_awaited(team, api, api_error, gate, tmp_path):  # noqa: F811
    theirs = await api("workloads", "POST", gate.job("t", template="training"), as_user="alice")
    body = {"kind": "job", "template": "training", "command": ["python", "-c", "pass"],
            "after": [{"workload": theirs["id"]}]}
    status, error = await api_error("workloads", "POST", body, as_user="bob")
    assert status == 403
    assert error["reason"] == f"workload {theirs['id']} belongs to tenant vision, not to your tenant nlp"
    audit = sqlite3.connect(tmp_path / "hetero.sqlite").execute(
        "SELECT actor, outcome, target FROM audit WHERE outcome = 'denied'").fetchall()
    assert ("bob", "denied", f"workload/{theirs['id']}") in audit
    assert [w["id"] for w in await api("workloads", as_user="root")] == [theirs["id"]]
    # The same tenant's colleague may await it.
    mine = await api("workloads", "POST", {**body, "command": ["python", "-c", "pass"]}, as_user="carol")
    assert mine["spec"]["after"] == [{"workload": theirs["id"], "condition": "ok"}]
    gate.open("t")


@pytest.mark.slow
def test_a_dependency_survives_a_kill_and_restart_of_the_server(tmp_path):
    layout = ServerLayout.create(tmp_path)
    (layout.notebooks / "gate.py").write_text(GATE, encoding="utf-8")
    opened = layout.notebooks / "restart-gate"
    awaited = {**CPU, "script": {"path": "gate.py", "args": [str(opened)]}}
    with start_hetero_server(layout, "before", DEMO_NODES) as server:
        client = HeteroClient(server.base_url, server.token)
        first = client.submit(**awaited)["id"]
        second = client.submit(**_job([{"workload": first}]))["id"]
        until(lambda: client.workload(first)["state"] == "running", "the awaited job to run")
        until(lambda: client.workload(second).get("blockers"), "the dependent job's blocker")
        os.kill(server.process.pid, signal.SIGKILL)  # no clean stop: what is stored is all there is
        server.process.wait(10)
    with start_hetero_server(layout, "after", DEMO_NODES) as server:
        client = HeteroClient(server.base_url, server.token)
        held = until(lambda: (w := client.workload(second)).get("blockers") and w, "the blocker after the restart")
        assert held["state"] == "queued" and held["blockers"][0]["params"]["workload"] == first
        opened.write_text("open")
        done = until(lambda: (w := client.workload(second))["state"] in ("succeeded", "failed") and w,
                     "the dependent job to run", timeout=60)
        assert done["state"] == "succeeded"
        assert client.workload(first)["state"] == "succeeded"
