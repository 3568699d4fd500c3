"""Recurring schedules: create, list, describe, edit, pause, resume, run now and delete; the runs are workloads."""

from __future__ import annotations

from functools import partial

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..api.schedules import CreateSchedule, UpdateSchedule
from ..errors import NotFound
from ..i18n import N_, Message
from ..models import MAX_STORED_INT, ExplainQuery
from .base import API_PREFIX, HeteroHandler


def _schedule_id(text: str) -> int:
    """A schedule id from a path: ASCII digits the store can hold, else it names no schedule (a 404)."""
    number = int(text) if text.isascii() and text.isdigit() else None
    if number is None or number > MAX_STORED_INT:
        raise NotFound(Message(N_("schedule {schedule!r} does not exist"), schedule=text), field="schedule_id")
    return number


class _Schedules(HeteroHandler):
    @property
    def language(self) -> str:
        return self.query(ExplainQuery).lang


class SchedulesHandler(_Schedules):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply(self.platform.schedules.list(self.identity, self.language))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        # Refused before the body is read: a schedule outlives any workload whose credential would create it.
        self.platform.access.require_person(self.identity, "schedule.create", "schedules")
        body, identity, language = self.body(CreateSchedule), self.identity, self.language
        # Its job is checked as a submission is (a notebook read and parsed): in a worker thread.
        created = await self.off_loop(partial(self.platform.schedules.create, identity, body, language))
        self.platform.loop.wake()  # here, on the event loop: the runner looks at its due time after the next tick
        self.reply(created, status=201)


class ScheduleHandler(_Schedules):
    @web.authenticated
    @authorized
    def get(self, schedule_id: str) -> None:
        self.reply(self.platform.schedules.get(self.identity, _schedule_id(schedule_id), self.language))

    @web.authenticated
    @authorized
    async def patch(self, schedule_id: str) -> None:
        wanted, body, identity, language = _schedule_id(schedule_id), self.body(UpdateSchedule), self.identity, \
            self.language
        updated = await self.off_loop(partial(self.platform.schedules.update, identity, wanted, body, language))
        self.platform.loop.wake()
        self.reply(updated)

    @web.authenticated
    @authorized
    def delete(self, schedule_id: str) -> None:
        self.reply(self.platform.schedules.delete(self.identity, _schedule_id(schedule_id), self.language))


class PauseScheduleHandler(_Schedules):
    @web.authenticated
    @authorized
    def post(self, schedule_id: str) -> None:
        self.reply(self.platform.schedules.pause(self.identity, _schedule_id(schedule_id), self.language))


class ResumeScheduleHandler(_Schedules):
    @web.authenticated
    @authorized
    def post(self, schedule_id: str) -> None:
        resumed = self.platform.schedules.resume(self.identity, _schedule_id(schedule_id), self.language)
        self.platform.loop.wake()
        self.reply(resumed)


class RunScheduleHandler(_Schedules):
    @web.authenticated
    @authorized
    async def post(self, schedule_id: str) -> None:
        wanted, identity = _schedule_id(schedule_id), self.identity
        self.admit_submission(identity.user)
        run = await self.off_loop(partial(self.platform.schedules.run_now, identity, wanted))
        self.platform.loop.wake()  # from here, on the event loop: the run's workload is scheduled at once
        self.reply(run, status=201)


_ONE = rf"/{API_PREFIX}/schedules/(?P<schedule_id>[^/]+)"
default_handlers = [
    (rf"/{API_PREFIX}/schedules", SchedulesHandler),
    (_ONE, ScheduleHandler),
    (rf"{_ONE}/pause", PauseScheduleHandler),
    (rf"{_ONE}/resume", ResumeScheduleHandler),
    (rf"{_ONE}/run", RunScheduleHandler),
]
