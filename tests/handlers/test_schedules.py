"""Recurring schedules through the REST API of a real server, with real jobs and the server's wall clock stepped
by the test (tests.fakes.SteppingClock): a one-minute cadence runs three times; pause, resume, run now and
delete; who may reach whose schedule (each refusal a 403 in the audit log); a template withdrawn by a catalog
reload refuses the due run and the schedule carries on; bad definitions are 400s naming their field.

Whether a round of the runner has happened is seen from a witness: another schedule due at the same time, whose
run shows that the round that would have run the one under test has passed."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest
import yaml

from .test_lifecycle import final

# The experiment queue retries nothing: each run is one attempt.
JOB = {"template": "data-preprocessing", "queue": "experiment", "code": "print('scheduled run')"}


def _schedule(name: str = "nightly", cron: str = "* * * * *", **fields) -> dict:
    return {"name": name, "cron": cron, "job": JOB, **fields}


@pytest.fixture
def clock(hetero_config):
    """The server reads a wall clock the test steps (``clock.to(wall)``); monotonic time never steps."""
    from ..fakes import SteppingClock

    SteppingClock.reset()
    hetero_config["clock_class"] = "tests.fakes.SteppingClock"

    class Stepped:
        @staticmethod
        def to(wall: float) -> None:
            """Step the server's wall clock to ``wall`` (it only ever moves forward here)."""
            SteppingClock.step(wall - (time.time() + SteppingClock.offset))

    yield Stepped
    SteppingClock.reset()


async def _until(read, predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        found = await read()
        if predicate(found):
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never happened: {found}")
        await asyncio.sleep(0.1)


async def _runs(api, schedule_id: int, count: int, as_user: str | None = None) -> dict:
    return await _until(lambda: api(f"schedules/{schedule_id}", as_user=as_user),
                        lambda s: len(s["runs"]) >= count, f"schedule {schedule_id}'s run {count}")


async def test_a_schedule_at_one_minute_cadence_runs_three_times(clock, api, wait_for):
    created = await api("schedules", "POST", _schedule())
    assert created["state"] == "active" and created["runs"] == [] and created["last_run_at"] is None
    assert created["description"] == "every minute (UTC)"
    due = created["next_run_at"]
    assert due % 60 == 0 and 0 < due - time.time() <= 60
    workloads = []
    for number in (1, 2, 3):
        clock.to(due + 1)
        schedule = await _runs(api, created["id"], number)
        run = schedule["runs"][0]
        assert (run["due_at"], run["late"]) == (due, False)
        assert schedule["next_run_at"] == due + 60 and schedule["last_run_at"] == run["submitted_at"]
        done = await wait_for(run["workload"], final)
        assert (done["state"], done["schedule"], done["spec"]["schedule"]) == ("succeeded", created["id"], created["id"])
        assert "scheduled run" in await api.text(f"workloads/{run['workload']}/logs")
        workloads.append(run["workload"])
        due += 60
    listed = (await api(f"schedules/{created['id']}"))["runs"]
    assert [run["workload"] for run in listed] == workloads[::-1]  # newest first
    assert {run["state"] for run in listed} == {"succeeded"}
    assert len(set(workloads)) == 3


async def test_pause_stops_runs_resume_makes_none_up_run_now_submits_one_and_delete_stops_it(clock, api, wait_for):
    hourly = await api("schedules", "POST", _schedule("hourly", "0 * * * *"))
    witness = await api("schedules", "POST", _schedule("witness", "0 * * * *"))
    assert hourly["next_run_at"] == witness["next_run_at"]
    paused = await api(f"schedules/{hourly['id']}/pause", "POST", {})
    assert (paused["state"], paused["next_run_at"]) == ("paused", None)
    assert (await api(f"schedules/{hourly['id']}/pause", "POST", {}))["state"] == "paused"  # again: as it is
    due = witness["next_run_at"]
    clock.to(due + 3 * 3600 + 1)  # three due times pass while it is paused
    await _runs(api, witness["id"], 1)  # the round that would have run it has passed
    assert (await api(f"schedules/{hourly['id']}"))["runs"] == []

    resumed = await api(f"schedules/{hourly['id']}/resume", "POST", {})
    assert resumed["state"] == "active" and resumed["runs"] == []
    assert resumed["next_run_at"] == due + 4 * 3600  # the next one from now: none of the paused ones made up

    submitted = await api(f"schedules/{hourly['id']}/run", "POST", {})
    assert submitted["schedule"] == hourly["id"] and submitted["kind"] == "job"
    assert (await wait_for(submitted["id"], final))["state"] == "succeeded"
    after_run = await api(f"schedules/{hourly['id']}")
    assert [run["workload"] for run in after_run["runs"]] == [submitted["id"]]
    assert after_run["runs"][0]["late"] is False and after_run["next_run_at"] == resumed["next_run_at"]

    deleted = await api(f"schedules/{hourly['id']}", "DELETE")
    assert (deleted["state"], deleted["next_run_at"]) == ("deleted", None)
    clock.to(due + 4 * 3600 + 1)
    await _runs(api, witness["id"], 2)
    gone = await api(f"schedules/{hourly['id']}")
    assert gone["state"] == "deleted" and [run["workload"] for run in gone["runs"]] == [submitted["id"]]
    assert [s["id"] for s in await api("schedules")] == [witness["id"]]
    assert (await api(f"workloads/{submitted['id']}"))["state"] == "succeeded"  # what it submitted stays


async def test_an_edit_recomputes_the_next_due_time_and_changes_what_runs(clock, api, api_error, wait_for, jp_root_dir):
    created = await api("schedules", "POST", _schedule("edited", "0 2 * * *", timezone="Asia/Shanghai",
                                                     job={**JOB, "env": {"SECRET": "s3"}}))
    assert created["description"] == "every day at 02:00 (Asia/Shanghai)"
    assert "env" not in created["job"] and created["job"]["payload"] == "code"
    (jp_root_dir / "edited.py").write_text("import os; print('edited', os.environ['SECRET'])\n", encoding="utf-8")
    edited = await api(f"schedules/{created['id']}", "PATCH",
                       {"cron": "30 * * * *", "timezone": "UTC", "missed": "skip", "name": "half past",
                        "job": {"script": {"path": "edited.py"}}})
    assert (edited["name"], edited["cron"], edited["timezone"], edited["missed"]) == ("half past", "30 * * * *",
                                                                                      "UTC", "skip")
    assert edited["job"]["payload"] == "script" and "code" not in edited["job"]
    assert edited["next_run_at"] % 3600 == 1800 and edited["next_run_at"] != created["next_run_at"]
    clock.to(edited["next_run_at"] + 1)
    run = (await _runs(api, created["id"], 1))["runs"][0]
    assert (await wait_for(run["workload"], final))["state"] == "succeeded"
    assert "edited s3" in await api.text(f"workloads/{run['workload']}/logs")  # the env it kept, the script it got
    status, refused = await api_error(f"schedules/{created['id']}", "PATCH", {"job": {"template": "no-such"}})
    assert (status, refused["field"]) == (404, "job.template")
    status, refused = await api_error(f"schedules/{created['id']}", "PATCH", {})
    assert status == 400


async def test_a_schedule_of_an_array_shows_it_edits_it_and_each_run_records_the_array(clock, api, api_error,
                                                                                          wait_for):
    job = {**JOB, "code": "import os; print('shard', os.environ['HETERO_ARRAY_INDEX'])", "array": "0-2%2"}
    created = await api("schedules", "POST", _schedule("shards", "* * * * *", job=job))
    assert created["job"]["array"] == "0-2%2"
    edited = await api(f"schedules/{created['id']}", "PATCH", {"job": {"array": "0-3"}})
    assert edited["job"]["array"] == "0-3" and edited["job"]["code"] == job["code"]
    status, refused = await api_error(f"schedules/{created['id']}", "PATCH", {"job": {"array": "9-0"}})
    assert (status, refused["field"]) == (400, "job.array")
    assert (await api(f"schedules/{created['id']}"))["job"]["array"] == "0-3"  # a refused edit changes nothing

    clock.to(edited["next_run_at"] + 1)
    run = (await _runs(api, created["id"], 1))["runs"][0]
    assert run["array"] == run["workload"]  # the array's id is its first task's
    tasks = await api("workloads", array=str(run["array"]))
    assert sorted(task["array"]["index"] for task in tasks) == [0, 1, 2, 3]
    for task in tasks:
        assert (await wait_for(task["id"], final))["state"] == "succeeded"
        assert f"shard {task['array']['index']}" in await api.text(f"workloads/{task['id']}/logs")

    single = await api(f"schedules/{created['id']}", "PATCH", {"job": {"array": None}})
    assert single["job"]["array"] is None
    submitted = await api(f"schedules/{created['id']}/run", "POST", {})
    assert submitted["array"] is None
    runs = (await api(f"schedules/{created['id']}"))["runs"]
    assert [(r["workload"], r["array"]) for r in runs] == [(submitted["id"], None), (run["workload"], run["array"])]


def _bad(name: str, body: dict, status: int, field: str):
    return pytest.param(body, status, field, id=name)


@pytest.mark.parametrize(("body", "status", "field"), [
    _bad("a cron with four fields", _schedule(cron="0 2 * *"), 400, "cron"),
    _bad("an hour out of range", _schedule(cron="0 25 * * *"), 400, "cron"),
    _bad("a day that never comes", _schedule(cron="0 0 31 2 *"), 400, "cron"),
    _bad("an unknown zone", _schedule(timezone="Mars/Olympus"), 400, "timezone"),
    _bad("a zone that is a path", _schedule(timezone="../../etc/passwd"), 400, "timezone"),
    _bad("no name", {"cron": "* * * * *", "job": JOB}, 400, "name"),
    _bad("an empty name", _schedule(name=""), 400, "name"),
    _bad("a name too long", _schedule(name="n" * 101), 400, "name"),
    _bad("an unknown missed-runs rule", _schedule(missed="twice"), 400, "missed"),
    _bad("an unknown template", _schedule(job={**JOB, "template": "no-such"}), 404, "job.template"),
    _bad("an unknown queue", _schedule(job={**JOB, "queue": "no-such"}), 404, "job.queue"),
    _bad("a parameter out of bounds", _schedule(job={**JOB, "parameters": {"cpu": 100000}}), 400, "job.parameters.cpu"),
    _bad("two payloads", _schedule(job={**JOB, "command": ["true"]}), 400, "job"),
    _bad("a script that is not there", _schedule(job={"template": "data-preprocessing", "script": {"path": "x.py"}}),
         400, "job.script.path"),
    _bad("a notebook outside the root", _schedule(job={"template": "data-preprocessing",
                                                       "notebook": {"path": "../../x.ipynb"}}), 400,
         "job.notebook.path"),
    _bad("a working directory outside the root", _schedule(job={**JOB, "cwd": "/"}), 400, "job.cwd"),
    _bad("code that does not parse", _schedule(job={**JOB, "code": "def ("}), 400, "job.code"),
    _bad("a variable the scheduler sets", _schedule(job={**JOB, "env": {"CUDA_VISIBLE_DEVICES": "0"}}), 400,
         "job.env.CUDA_VISIBLE_DEVICES"),
    _bad("a job that waits for another", _schedule(job={**JOB, "after": [{"workload": 1}]}), 400, "job.after"),
    _bad("a malformed array", _schedule(job={**JOB, "array": "9-0"}), 400, "job.array"),
    _bad("an unknown field", {**_schedule(), "every": "night"}, 400, "every"),
])
async def test_a_bad_definition_is_refused_naming_its_field_and_nothing_is_stored(api, api_error, body, status, field):
    answered, refused = await api_error("schedules", "POST", body)
    assert (answered, refused["field"]) == (status, field), refused
    assert refused["message"] and refused["message_zh"]
    assert await api("schedules") == []


@pytest.mark.parametrize("route", ["schedules/7", "schedules/x", "schedules/1_0", "schedules/99999999999999999999",
                                   "schedules/7/pause"])
async def test_an_unknown_schedule_is_a_404(api_error, route):
    status, refused = await api_error(route, "POST" if route.endswith("pause") else "GET",
                                      {} if route.endswith("pause") else None)
    assert (status, refused["field"]) == (404, "schedule_id")


# -- who may reach whose schedule ---------------------------------------------------------------------------


def _denials(tmp_path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(tmp_path / "hetero.sqlite") as db:
        return db.execute("SELECT actor, action, target FROM audit WHERE outcome = 'denied'").fetchall()


async def test_another_tenant_can_neither_read_nor_change_a_schedule_and_each_refusal_is_audited(
        team, api, api_error, tmp_path):
    mine = await api("schedules", "POST", _schedule("alices", "0 2 * * *"), as_user="alice")
    assert (mine["user"], mine["tenant"]) == ("alice", "vision")
    target = f"schedule/{mine['id']}"
    for method, route, action in (("GET", "", "schedule.read"), ("POST", "/pause", "schedule.pause"),
                                  ("POST", "/resume", "schedule.resume"), ("POST", "/run", "schedule.run"),
                                  ("PATCH", "", "schedule.update"), ("DELETE", "", "schedule.delete")):
        body = {"cron": "* * * * *"} if method == "PATCH" else {} if method == "POST" else None
        status, refused = await api_error(f"schedules/{mine['id']}{route}", method, body, as_user="bob")
        assert status == 403 and "belongs to tenant vision" in refused["message"], (method, route, refused)
        assert ("bob", action, target) in _denials(tmp_path)
    assert await api("schedules", as_user="bob") == []
    still = await api(f"schedules/{mine['id']}", as_user="alice")
    assert (still["state"], still["cron"], still["runs"]) == ("active", "0 2 * * *", [])
    # The tenant's admin sees and pauses it (audited as an admin action); a platform admin sees every tenant's.
    assert [s["id"] for s in await api("schedules", as_user="carol")] == [mine["id"]]
    assert (await api(f"schedules/{mine['id']}/pause", "POST", {}, as_user="carol"))["state"] == "paused"
    assert [s["id"] for s in await api("schedules", as_user="root")] == [mine["id"]]
    with sqlite3.connect(tmp_path / "hetero.sqlite") as db:
        assert db.execute("SELECT actor FROM audit WHERE action = 'schedule.pause' AND outcome = 'allowed'"
                          ).fetchall() == [("carol",)]


@pytest.mark.team(vision={"users": ["alice", "carol", "bob"]})
async def test_a_member_reaches_only_their_own_schedules_in_their_tenant(team, api, api_error, tmp_path):
    alices = await api("schedules", "POST", _schedule("alices", "0 2 * * *"), as_user="alice")
    bobs = await api("schedules", "POST", _schedule("bobs", "0 3 * * *"), as_user="bob")
    assert bobs["tenant"] == "vision"
    assert [s["id"] for s in await api("schedules", as_user="bob")] == [bobs["id"]]
    assert [s["id"] for s in await api("schedules", as_user="alice")] == [alices["id"]]
    status, refused = await api_error(f"schedules/{alices['id']}", as_user="bob")
    assert status == 403 and "belongs to alice" in refused["message"]
    status, _ = await api_error(f"schedules/{alices['id']}/run", "POST", {}, as_user="bob")
    assert status == 403
    assert ("bob", "schedule.run", f"schedule/{alices['id']}") in _denials(tmp_path)
    assert {s["id"] for s in await api("schedules", as_user="carol")} == {alices["id"], bobs["id"]}


async def test_a_platform_admin_in_no_tenant_cannot_schedule_work(team, api_error):
    status, refused = await api_error("schedules", "POST", _schedule(), as_user="root")
    assert status == 403, refused


# -- a refusal at a due time ----------------------------------------------------------------------------------


async def test_a_template_withdrawn_by_a_reload_refuses_the_due_run_and_the_schedule_carries_on(
        team, clock, api, hetero_config, tmp_path):
    created = await api("schedules", "POST", _schedule("withdrawn", "0 * * * *"), as_user="alice")
    catalog = hetero_config["catalog_file"]
    data = yaml.safe_load(open(catalog, encoding="utf-8"))
    vision = next(tenant for tenant in data["tenants"] if tenant["name"] == "vision")
    vision["templates"] = ["training"]  # data-preprocessing is no longer vision's to use
    with open(catalog, "w", encoding="utf-8") as file:
        yaml.safe_dump(data, file, allow_unicode=True)
    await api("catalog/reload", "POST", {}, as_user="root")
    due = created["next_run_at"]
    clock.to(due + 1)
    refused = await _until(lambda: api(f"schedules/{created['id']}", as_user="alice"),
                           lambda s: s["last_error"], "the refusal of the due run")
    assert refused["last_error"] == "tenant vision may not use template data-preprocessing"
    assert (refused["state"], refused["runs"], refused["next_run_at"]) == ("active", [], due + 3600)
    assert await api("workloads", as_user="alice") == []
    with sqlite3.connect(tmp_path / "hetero.sqlite") as db:
        said = db.execute("SELECT reason FROM events WHERE type = 'schedule-refused'").fetchall()
        audited = db.execute("SELECT actor, action FROM audit WHERE outcome = 'denied'").fetchall()
    assert said == [(f"schedule {created['id']} (withdrawn) of alice: its run due at {due:.0f} was refused: tenant "
                     "vision may not use template data-preprocessing",)]
    assert ("alice", "workload.submit") in audited  # refused as her own submission would be


async def test_every_schedule_answer_validates_against_the_document(api, api_error, wait_for):
    from .test_api_schema import check

    document = await api("openapi.json")
    one = "/schedules/{schedule_id}"
    created = await api("schedules", "POST", _schedule("checked", "0 2 * * *"))
    check(document, "/schedules", "post", 201, created)
    check(document, "/schedules", "get", 200, await api("schedules", lang="zh"))
    check(document, one, "patch", 200, await api(f"schedules/{created['id']}", "PATCH", {"missed": "skip"}))
    check(document, f"{one}/pause", "post", 200, await api(f"schedules/{created['id']}/pause", "POST", {}))
    check(document, f"{one}/resume", "post", 200, await api(f"schedules/{created['id']}/resume", "POST", {}))
    run = await api(f"schedules/{created['id']}/run", "POST", {})
    check(document, f"{one}/run", "post", 201, run)
    await wait_for(run["id"], final)
    check(document, one, "get", 200, await api(f"schedules/{created['id']}"))
    check(document, one, "delete", 200, await api(f"schedules/{created['id']}", "DELETE"))
    status, error = await api_error(f"schedules/{created['id']}/run", "POST", {})
    assert (status, error["reason"]) == (409, "deleted")
    check(document, f"{one}/run", "post", 409, error)
