"""Recurring schedules in the REST API: what ``POST /schedules`` and ``PATCH /schedules/{id}`` take, and what every
schedule route answers, as pydantic models (see ``responses.py``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..models import Argument, NotebookSpec, ScriptSpec, SubmitWorkload
from .responses import Answer

__all__ = ["CreateSchedule", "JobChanges", "Schedule", "ScheduleJob", "ScheduleRun", "UpdateSchedule"]

Missed = Literal["run-once", "skip"]
_CRON = ("Five fields, minute hour day-of-month month day-of-week, as Vixie cron reads them: values, lists (1,15), "
         "ranges (MON-FRI), steps (*/15), month and day names; or @hourly, @daily, @weekly, @monthly, @yearly. When "
         "both day fields are restricted, a day matches when either does.")
_TIMEZONE = ("The IANA zone the cron's times are read in (Asia/Shanghai). A time a spring-forward gap skips runs at "
             "the gap's end; one an autumn night repeats runs once.")
_ARRAY = ("Slurm's --array: each run submits one job per index ('0-9', '0-99:2', '1,3,7-9', '%N' last: at most N at "
          "once); null: one job.")
_MISSED = ("run-once: due times missed while the server was down (or could not submit) make one late run; skip: "
           "none; either way the next due time is the next one to come.")


class CreateSchedule(BaseModel):
    """``POST /schedules``: a job submitted as its owner at each due time of a cron expression."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100)
    cron: str = Field(min_length=1, max_length=200, description=_CRON, examples=["0 2 * * *"])
    timezone: str = Field(default="UTC", min_length=1, max_length=64, description=_TIMEZONE)
    missed: Missed = Field(default="run-once", description=_MISSED)
    paused: bool = Field(default=False, description="Created paused: nothing runs until it is resumed.")
    job: SubmitWorkload = Field(description="What each run submits: the body of POST /workloads, checked now as a "
                                            "submission is (each problem named job.<field>) and again at each run.")


class JobChanges(BaseModel):
    """What an edit changes of a schedule's job: each field given replaces the stored one (a payload replaces the
    payload, null resets a field); what is left out stays, env values included."""

    model_config = ConfigDict(extra="forbid")

    template: str | None = Field(default=None, min_length=1)
    queue: str | None = None
    name: str | None = Field(default=None, max_length=253)
    command: list[Argument] | None = Field(default=None, min_length=1)
    script: ScriptSpec | None = None
    code: str | None = Field(default=None, min_length=1)
    notebook: NotebookSpec | None = None
    parameters: dict[str, Any] | None = None
    env: dict[str, str] | None = None
    runtime: str | int | None = None
    cwd: str | None = Field(default=None, max_length=4096)
    python: str | None = Field(default=None, min_length=1, max_length=4096)
    array: str | None = Field(default=None, min_length=1, max_length=1024, description=_ARRAY)


class UpdateSchedule(BaseModel):
    """``PATCH /schedules/{id}``: what changes; the next due time is worked out again from now."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=100)
    cron: str | None = Field(default=None, min_length=1, max_length=200, description=_CRON)
    timezone: str | None = Field(default=None, min_length=1, max_length=64, description=_TIMEZONE)
    missed: Missed | None = Field(default=None, description=_MISSED)
    job: JobChanges | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> UpdateSchedule:
        if not self.model_dump(exclude_none=True):
            raise ValueError("give what changes: name, cron, timezone, missed or job")
        return self


class ScheduleJob(Answer):
    """A schedule's job as its runs submit it (its env is not shown: its values may be secrets)."""

    template: str
    queue: str | None = Field(description="Null: the template's queue at each run.")
    payload: Literal["notebook", "script", "code", "command"]
    parameters: dict[str, Any]
    name: str | None
    notebook: NotebookSpec | None = None
    script: ScriptSpec | None = None
    code: str | None = None
    command: list[str] | None = None
    cwd: str | None = Field(description="As given: read inside the owner's root at each run.")
    python: str | None
    array: str | None = Field(default=None, description=_ARRAY)


class ScheduleRun(Answer):
    """A workload a schedule submitted."""

    workload: int = Field(description="Its workload; an array's first task (whose id is the array's).")
    array: int | None = Field(default=None, description="The array it submitted (its id), when its job has one.")
    due_at: float = Field(description="The due time it was submitted for (Unix time); the moment it was asked for, "
                                      "for a run out of cadence.")
    submitted_at: float
    state: str = Field(description="Its workload's state now.")
    late: bool = Field(description="Submitted after the server missed its due time (one run for all those missed).")


class Schedule(Answer):
    """A recurring job: when it runs, what it submits as its owner, and its latest runs."""

    id: int
    name: str
    user: str = Field(description="Its owner: each run is submitted as them, under their tenant's quotas.")
    tenant: str
    cron: str
    timezone: str
    missed: Missed
    state: Literal["active", "paused", "deleted"]
    next_run_at: float | None = Field(description="When it is next due (Unix time); null unless active.")
    last_run_at: float | None = Field(description="When its latest run was submitted.")
    created_at: float
    updated_at: float
    job: ScheduleJob
    description: str = Field(description="The cron in words, in the request's language.")
    runs: list[ScheduleRun] = Field(description="The latest 20, newest first.")
    last_error: str | None = Field(description="Why its last due run could not be submitted; it tries again at the "
                                               "next due time.")
