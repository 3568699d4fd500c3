"""The schedules' runner over a real store and the real submission path, its clock moved by the test: a process
killed between a run's submission and its record submits that run once, not twice, when it starts again; the
missed-runs rule per schedule; a due run refused is the schedule's last error, never the runner's failure."""

from __future__ import annotations

import pytest

from jupyter_hetero.api.schedules import CreateSchedule
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.platform.access import Access
from jupyter_hetero.platform.identity import resolve_identity
from jupyter_hetero.platform.workloads.schedules import LATE_AFTER_S, Schedules
from jupyter_hetero.platform.workloads.service import Workloads
from jupyter_hetero.store import Repository

from ...fakes import DiesBeforeScheduleRecord, FixedClock, KilledHere

HOUR = 3600.0
START = 1_800_000_000.0  # a whole hour


class Server:
    """What a server runs schedules with, on the store at ``url``: started again by building another."""

    def __init__(self, url: str, root, clock: FixedClock, repository_class=Repository):
        self.catalog = load_catalog(DEFAULT_CATALOG_PATH)
        self.repository = repository_class(url, clock=clock.wall)
        access = Access(self.repository)
        self.workloads = Workloads(self.catalog, self.repository, access, root, pending_info=lambda _id: None,
                                   wake=lambda: None)
        self.schedules = Schedules(catalog=self.catalog, repository=self.repository, workloads=self.workloads,
                                   access=access, clock=clock, person=self.person)
        self.clock = clock

    def person(self, user: str, groups: frozenset[str]):
        return resolve_identity(self.catalog, user, groups, owner=True)

    def create(self, cron: str = "0 * * * *", missed: str = "run-once") -> dict:
        body = CreateSchedule(name="s", cron=cron, missed=missed,
                              job={"template": "data-preprocessing", "queue": "experiment", "command": ["true"]})
        return self.schedules.create(self.person("owner", frozenset()), body)

    def runs_of(self, schedule_id: int) -> list[int]:
        return [row.id for row in self.repository.workloads() if (row.spec or {}).get("schedule") == schedule_id]


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'hetero.sqlite'}"


def test_a_kill_between_a_runs_submission_and_its_record_submits_it_once(tmp_path, url):
    clock = FixedClock(START)
    DiesBeforeScheduleRecord.died = False
    first = Server(url, tmp_path, clock, DiesBeforeScheduleRecord)
    created = first.create()
    clock.advance(HOUR + 5)
    with pytest.raises(KilledHere):
        first.schedules.due(clock.wall())
    stored = first.runs_of(created["id"])
    assert len(stored) == 1  # the workload was stored; the schedule still says it is due
    assert first.repository.schedule(created["id"]).next_run_at == START + HOUR
    first.repository.close()

    clock.advance(30)  # started again half a minute later
    second = Server(url, tmp_path, clock)
    assert second.schedules.due(clock.wall()) == 1
    assert second.runs_of(created["id"]) == stored  # the same workload, found by its key: not a second one
    row = second.repository.schedule(created["id"])
    assert [run["workload"] for run in row.runs] == stored and row.runs[0]["due_at"] == START + HOUR
    assert row.runs[0]["late"] is False  # submitted 5 s after its due time, before the kill
    assert row.next_run_at == START + 2 * HOUR
    assert second.schedules.due(clock.wall()) == 0
    second.repository.close()


@pytest.mark.parametrize(("behind", "missed", "runs", "late"), [
    pytest.param(LATE_AFTER_S, "run-once", 1, False, id="a minute behind is on time"),
    pytest.param(LATE_AFTER_S, "skip", 1, False, id="a minute behind is on time, even when skipping"),
    pytest.param(LATE_AFTER_S + 1, "run-once", 1, True, id="later than that: one late run"),
    pytest.param(LATE_AFTER_S + 1, "skip", 0, None, id="later than that: skipped"),
    pytest.param(5 * HOUR, "run-once", 1, True, id="six due times missed: one late run for them all"),
    pytest.param(5 * HOUR, "skip", 0, None, id="six due times missed: none"),
])
def test_the_missed_runs_rule(tmp_path, url, behind, missed, runs, late):
    clock = FixedClock(START)
    server = Server(url, tmp_path, clock)
    created = server.create(missed=missed)
    due = created["next_run_at"]
    clock.advance(due - START + behind)
    assert server.schedules.due(clock.wall()) == runs
    row = server.repository.schedule(created["id"])
    assert [run["late"] for run in row.runs] == ([late] if runs else [])
    assert row.next_run_at > clock.wall() and row.next_run_at - clock.wall() <= HOUR  # the next to come
    assert len(server.runs_of(created["id"])) == runs
    assert server.schedules.due(clock.wall()) == 0
    server.repository.close()


def test_a_refused_run_is_the_schedules_last_error_and_the_next_one_clears_it(tmp_path, url):
    clock = FixedClock(START)
    server = Server(url, tmp_path, clock)
    created = server.create()
    other = server.create()
    server.repository.update_schedule(created["id"], job={"template": "no-such", "command": ["true"]})
    clock.advance(HOUR)
    assert server.schedules.due(clock.wall()) == 1  # the other one ran
    refused = server.repository.schedule(created["id"])
    assert refused.last_error == "template 'no-such' does not exist"
    assert (refused.runs, refused.next_run_at, refused.state) == ([], START + 2 * HOUR, "active")
    assert sorted(event.type for event in server.repository.events()) == ["schedule-refused", "submitted"]
    assert len(server.repository.schedule(other["id"]).runs) == 1
    server.repository.update_schedule(created["id"], job={"template": "data-preprocessing", "queue": "experiment",
                                                          "command": ["true"]})
    clock.advance(HOUR)
    assert server.schedules.due(clock.wall()) == 2
    assert server.repository.schedule(created["id"]).last_error is None
    server.repository.close()
