"""Recurring schedules: a job submitted as its owner at each due time of a cron expression, durably.

    schedules.create(identity, CreateSchedule(name="nightly", cron="0 2 * * *", timezone="Asia/Shanghai",
                                              job=SubmitWorkload(template="training", notebook={"path": "t.ipynb"})))
    schedules.tick()              # after each scheduler tick, on the event loop: a round in a worker thread when due
    schedules.due(now)            # the round: every due schedule's run submitted, its next due time set

Each run goes through the one submission path (:meth:`Workloads.submit`) as its owner, whose identity is found as a
request of theirs would find it (their tenant, role and the template and queue permissions, quotas, as the catalog
says at that moment): a refusal leaves the schedule as it is, with ``last_error`` saying why and an event, and it
tries again at its next due time. A run's workload carries ``spec["schedule"]`` and an Idempotency-Key made of the
schedule and the due time, stored with it in one transaction: a server killed between the submission and the next
due time being written submits that run once, not twice, when it starts again.

Missed runs: a due time more than ``LATE_AFTER_S`` behind the clock was missed (the server was down, or could not
submit). ``missed="run-once"`` submits one run, marked late, for all of them; ``"skip"`` submits none. Either way
the next due time is the next one to come. A paused schedule has no due time: resuming it makes up nothing.

Who may do what: a schedule is its owner's; a tenant-admin reaches their tenant's, a platform admin every one
(each such change of another's schedule is audited); anyone else is refused (403, audited), and a workload's
credential reads its user's schedules but changes none (a schedule outlives the workload).
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import ValidationError

from ...api.schedules import CreateSchedule, UpdateSchedule
from ...catalog import Catalog
from ...errors import Conflict, Forbidden, HeteroError, InvalidRequest, NotFound
from ...i18n import N_, Message
from ...models import SubmitWorkload
from ...store import Repository
from ...store.tables import ScheduleRow
from ..access import Access
from ..clock import Clock
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from .cron import Cron, describe, next_after, parse_cron, zone_of
from .service import Workloads, workload_json

__all__ = ["LATE_AFTER_S", "Schedules", "schedule_json"]

log = logging.getLogger(__name__)

# A due time this far behind the clock was missed: its run is late (run-once) or not made (skip).
LATE_AFTER_S = 60.0
_PAYLOADS = ("command", "script", "code", "notebook")


class Schedules(ReadsLiveCatalog):
    """The schedules API and their runner."""

    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, workloads: Workloads,
                 access: Access, clock: Clock, person: Callable[[str, frozenset[str]], Identity]):
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self.workloads = workloads
        self.access = access
        self.clock = clock
        self.person = person  # a user's identity (their name and groups), as a request of theirs would find it
        self._round: asyncio.Future | None = None
        self._lock = threading.Lock()
        self._changes = 0  # the API's changes so far: a round's look at the earliest due time is kept only if none
        self._earliest: float | None = None  # when the next schedule comes due; None: not known, look

    # -- the API's side ----------------------------------------------------------------------------------------

    def create(self, identity: Identity, body: CreateSchedule, language: str = "en") -> dict[str, Any]:
        """Store the schedule; its job is checked as a submission of the caller's now, and nothing is submitted."""
        self.access.require_person(identity, "schedule.create", "schedules")
        cron, zone = parse_cron(body.cron), zone_of(body.timezone)
        self._check_job(identity, body.job)
        active = not body.paused
        row = self.repository.add_schedule(ScheduleRow(
            name=body.name, tenant=identity.tenant.name, user=identity.user, groups=sorted(identity.groups),
            cron=body.cron.strip(), timezone=body.timezone, missed=body.missed,
            state="active" if active else "paused", job=_stored(body.job),
            next_run_at=next_after(cron, self.clock.wall(), zone) if active else None, runs=[]))
        self.access.record(identity, "schedule.create", f"schedule/{row.id}", {"cron": row.cron,
                                                                              "timezone": row.timezone})
        self._changed()
        return self._json(row, language, identity)

    def list(self, identity: Identity, language: str = "en") -> list[dict[str, Any]]:
        """The caller's own schedules; a tenant-admin's tenant's; a platform admin's, every one."""
        if identity.is_platform_admin:
            rows = self.repository.schedules()
        elif identity.is_tenant_admin and not identity.own_work_only:
            rows = self.repository.schedules(tenant=identity.tenant.name)
        else:
            rows = self.repository.schedules(tenant=identity.tenant.name, user=identity.user)
        states = self.repository.run_states(run["workload"] for row in rows for run in row.runs or [])
        return [schedule_json(row, language, states) for row in rows]

    def get(self, identity: Identity, schedule_id: int, language: str = "en") -> dict[str, Any]:
        return self._json(self._visible(identity, schedule_id, "schedule.read"), language, identity)

    def update(self, identity: Identity, schedule_id: int, body: UpdateSchedule,
               language: str = "en") -> dict[str, Any]:
        """Change the definition; the next due time is worked out again from now (for an active schedule)."""
        row = self._changeable(identity, schedule_id, "schedule.update")
        changes: dict[str, Any] = {key: value for key, value in
                                   (("name", body.name), ("missed", body.missed)) if value is not None}
        cron_text, zone_name = body.cron or row.cron, body.timezone or row.timezone
        cron, zone = parse_cron(cron_text), zone_of(zone_name)
        changes.update(cron=cron_text.strip(), timezone=zone_name)
        if body.job is not None:  # checked as a submission of the owner's: each run is one
            owner = identity if identity.user == row.user else self._owner(row)
            job = _merged(row.job, body.job.model_dump(exclude_unset=True))
            self._check_job(owner, job)
            changes["job"] = _stored(job)
            if identity.user == row.user:  # the owner's groups as of now: each run finds its tenant by them
                changes["groups"] = sorted(identity.groups)
        if row.state == "active":
            changes["next_run_at"] = next_after(cron, self.clock.wall(), zone)
        self._audit_others(identity, row, "schedule.update", {"changed": sorted(body.model_dump(exclude_none=True))})
        return self._written(row.id, changes, language, identity)

    def delete(self, identity: Identity, schedule_id: int, language: str = "en") -> dict[str, Any]:
        """Stop it for good; the workloads it submitted stay. Its row stays too, for the audit."""
        row = self._changeable(identity, schedule_id, "schedule.delete")
        self.access.record(identity, "schedule.delete", f"schedule/{row.id}", {"owner": row.user})
        return self._written(row.id, {"state": "deleted", "next_run_at": None}, language, identity)

    def pause(self, identity: Identity, schedule_id: int, language: str = "en") -> dict[str, Any]:
        row = self._changeable(identity, schedule_id, "schedule.pause")
        self._audit_others(identity, row, "schedule.pause")
        return self._written(row.id, {"state": "paused", "next_run_at": None}, language, identity)

    def resume(self, identity: Identity, schedule_id: int, language: str = "en") -> dict[str, Any]:
        """Active again from now on: the due times it spent paused are not made up."""
        row = self._changeable(identity, schedule_id, "schedule.resume")
        if row.state == "active":
            return self._json(row, language, identity)
        self._audit_others(identity, row, "schedule.resume")
        next_run_at = next_after(parse_cron(row.cron), self.clock.wall(), zone_of(row.timezone))
        return self._written(row.id, {"state": "active", "next_run_at": next_run_at}, language, identity)

    def run_now(self, identity: Identity, schedule_id: int) -> dict[str, Any]:
        """Submit its job now, as its owner, out of cadence (its due times stay as they were); the workload, as the
        caller sees it. A refusal is the caller's answer (a 403 or 400), not the schedule's ``last_error``."""
        row = self._changeable(identity, schedule_id, "schedule.run")
        self._audit_others(identity, row, "schedule.run")
        submitted = self._submit(row, request_key=None)
        self.repository.record_schedule_run(row.id, run=_run(submitted, submitted["created_at"], late=False),
                                            error=row.last_error, due_at=None, next_run_at=None)
        found = self.repository.workload(submitted["id"])
        return workload_json(found, viewer=identity.user) if found is not None else submitted

    # -- the runner ------------------------------------------------------------------------------------------

    def tick(self) -> None:
        """On the event loop after each scheduler tick: a round in a worker thread when a schedule may be due and
        no round runs. Between changes it reads nothing until the earliest due time it found comes."""
        if self._round is not None and not self._round.done():
            return
        earliest = self._earliest
        if earliest is not None and self.clock.wall() < earliest:
            return
        self._round = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            await asyncio.to_thread(self.run_due, self.clock.wall())
        except Exception:
            log.exception("jupyter-hetero: submitting the schedules' due runs failed")

    def run_due(self, now: float) -> int:
        """One round: :meth:`due`, then when the next schedule comes due (blocking)."""
        changes = self._changes
        submitted = self.due(now)
        earliest = self.repository.earliest_due()
        with self._lock:
            if changes == self._changes:
                self._earliest = math.inf if earliest is None else earliest
        return submitted

    def due(self, now: float) -> int:
        """Submit the run of every schedule due at ``now`` (wall time) and set its next due time; how many runs
        were submitted. One schedule's failure is its own: the others run."""
        submitted = 0
        for row in self.repository.due_schedules(now):
            try:
                submitted += self._run_due(row, now)
            except Exception:  # the store failing, say: it stays due and the next round tries again
                log.exception("jupyter-hetero: schedule %s: its run due at %s failed", row.id, row.next_run_at)
        return submitted

    def _run_due(self, row: ScheduleRow, now: float) -> int:
        due_at = row.next_run_at
        next_run_at = next_after(_parsed(row.cron), now, zone_of(row.timezone))
        missed = now - due_at > LATE_AFTER_S
        if missed and row.missed == "skip":
            self.repository.record_schedule_run(row.id, run=None, error=row.last_error, due_at=due_at,
                                                next_run_at=next_run_at)
            self.repository.append_event(type="schedule-skipped", reason=(
                f"schedule {row.id} ({row.name}) missed its due time {due_at:.0f} and skips missed runs; next due at "
                f"{next_run_at:.0f}"), data={"schedule": row.id, "due_at": due_at, "next_run_at": next_run_at})
            return 0
        try:
            # The key names this due time: a run stored before a crash is found again, not submitted twice.
            submitted = self._submit(row, request_key=f"hetero-schedule-{row.id}-{due_at:.0f}")
        except HeteroError as refusal:
            log.warning("jupyter-hetero: schedule %s: its run due at %.0f was refused: %s", row.id, due_at,
                        refusal.message)
            self.repository.record_schedule_run(row.id, run=None, error=refusal.message, due_at=due_at,
                                                next_run_at=next_run_at)
            self.repository.append_event(type="schedule-refused", reason=(
                f"schedule {row.id} ({row.name}) of {row.user}: its run due at {due_at:.0f} was refused: "
                f"{refusal.message}"), data={"schedule": row.id, "due_at": due_at, "next_run_at": next_run_at,
                                             **refusal.detail})
            return 0
        created = submitted["created_at"]
        self.repository.record_schedule_run(row.id, run=_run(submitted, created, due_at=due_at,
                                                             late=created - due_at > LATE_AFTER_S),
                                            error=None, due_at=due_at, next_run_at=next_run_at)
        return 1

    # -- shared ----------------------------------------------------------------------------------------------

    def _submit(self, row: ScheduleRow, request_key: str | None) -> dict[str, Any]:
        """The schedule's job, submitted as its owner through the one submission path."""
        owner = self._owner(row)
        try:
            job = SubmitWorkload.model_validate(row.job)
        except ValidationError as exc:  # stored by an older version that took what this one refuses
            raise InvalidRequest(Message(N_("schedule {schedule}'s job is no longer a valid submission: {problem}"),
                                         schedule=row.id, problem=exc.errors()[0]["msg"]), field="job") from None
        return self.workloads.submit(owner, job, request_key, schedule=row.id)

    def _owner(self, row: ScheduleRow) -> Identity:
        """The schedule's owner as the catalog knows them now; a 403 when they left its tenant."""
        owner = self.person(row.user, frozenset(row.groups or ()))
        if owner.tenant.name != row.tenant:
            raise Forbidden(Message(N_("user {user} is no longer in tenant {tenant} (now {now}): schedule {schedule} "
                                       "submits nothing for them"), user=row.user, tenant=row.tenant,
                                    now=owner.tenant.name, schedule=row.id), reason="tenant-changed")
        return owner

    def _check_job(self, identity: Identity, job: SubmitWorkload) -> None:
        """Every check a submission of ``job`` by ``identity`` would meet, nothing stored; each field named as the
        schedule's (``job.template``)."""
        if job.after:
            raise InvalidRequest(Message(N_("job.after: a schedule's runs wait for no other workload (each due "
                                            "time would wait for the same ones)")), field="job.after")
        try:
            self.workloads.check(identity, job)
        except (InvalidRequest, NotFound) as problem:
            field = problem.detail.get("field")
            if field:
                problem.detail["field"] = f"job.{field}"
                if isinstance(problem, InvalidRequest):
                    problem.field = problem.detail["field"]
            raise

    def _visible(self, identity: Identity, schedule_id: int, action: str) -> ScheduleRow:
        """The schedule, if ``identity`` may see it: a 404 unknown, a 403 (audited) someone else's."""
        row = self.repository.schedule(schedule_id)
        if row is None:
            raise NotFound(Message(N_("schedule {schedule} does not exist"), schedule=schedule_id),
                           field="schedule_id")
        if identity.is_platform_admin:
            return row
        target = f"schedule/{row.id}"
        if row.tenant != identity.tenant.name:
            self.access.deny(identity, action, target,
                             Message(N_("schedule {schedule} belongs to tenant {tenant}, not to your tenant {yours}"),
                                     schedule=row.id, tenant=row.tenant, yours=identity.tenant.name))
        if row.user != identity.user and (identity.own_work_only or not identity.is_tenant_admin):
            self.access.deny(identity, action, target,
                             Message(N_("schedule {schedule} belongs to {owner}; only they or a tenant-admin of "
                                        "{tenant} may reach it"), schedule=row.id, owner=row.user, tenant=row.tenant))
        return row

    def _changeable(self, identity: Identity, schedule_id: int, action: str) -> ScheduleRow:
        """The schedule, if ``identity`` may change it: a person (a workload's credential changes none) who may
        see it, and not deleted (a 409)."""
        self.access.require_person(identity, action, f"schedule/{schedule_id}")
        row = self._visible(identity, schedule_id, action)
        if row.state == "deleted":
            raise Conflict(Message(N_("schedule {schedule} was deleted"), schedule=row.id), reason="deleted")
        return row

    def _audit_others(self, identity: Identity, row: ScheduleRow, action: str,
                      detail: dict[str, Any] | None = None) -> None:
        if identity.user != row.user:  # an admin acting on someone's schedule
            self.access.record(identity, action, f"schedule/{row.id}", {"owner": row.user, **(detail or {})})

    def _written(self, schedule_id: int, changes: dict[str, Any], language: str, identity: Identity) -> dict[str, Any]:
        row = self.repository.update_schedule(schedule_id, **changes)
        self._changed()
        return self._json(row, language, identity)

    def _changed(self) -> None:
        """A schedule was made or changed: the next round looks for the earliest due time again."""
        with self._lock:
            self._changes += 1
            self._earliest = None

    def _json(self, row: ScheduleRow, language: str, identity: Identity) -> dict[str, Any]:
        states = self.repository.run_states(run["workload"] for run in row.runs or [])
        return schedule_json(row, language, states)


@cache
def _parsed(text: str) -> Cron:
    """A stored expression, read once (stored ones were valid when written)."""
    return parse_cron(text)


def _stored(job: SubmitWorkload) -> dict[str, Any]:
    return job.model_dump(mode="json", exclude_none=True)


def _merged(stored: dict[str, Any], changes: dict[str, Any]) -> SubmitWorkload:
    """The stored job with ``changes`` over it: a payload given replaces the stored one; a 400 naming the field."""
    job = {key: value for key, value in stored.items()
           if not (key in _PAYLOADS and any(name in changes for name in _PAYLOADS))}
    job.update({key: value for key, value in changes.items() if value is not None})
    for key in [key for key, value in changes.items() if value is None]:
        job.pop(key, None)
    try:
        return SubmitWorkload.model_validate(job)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(["job", *map(str, first["loc"])])
        raise InvalidRequest(Message(N_("field {field!r}: {problem}"), field=field, problem=first["msg"]),
                             field=field) from None


def _run(workload: dict[str, Any], submitted_at: float, *, late: bool, due_at: float | None = None) -> dict[str, Any]:
    """A run as the schedule keeps it: its workload (an array's first task) and, for an array, the array's id."""
    array = workload.get("array")
    return {"workload": workload["id"], "array": array["id"] if array else None,
            "due_at": submitted_at if due_at is None else due_at, "submitted_at": submitted_at, "late": late}


def schedule_json(row: ScheduleRow, language: str, states: dict[int, str]) -> dict[str, Any]:
    """A schedule as the API shows it: its job without its env (values may be secrets), its cron in words in
    ``language``, its latest runs with their workloads' ``states``."""
    job = row.job
    payload = next(name for name in _PAYLOADS if job.get(name) is not None)
    return {
        "id": row.id, "name": row.name, "user": row.user, "tenant": row.tenant, "cron": row.cron,
        "timezone": row.timezone, "missed": row.missed, "state": row.state, "next_run_at": row.next_run_at,
        "last_run_at": row.last_run_at, "created_at": row.created_at, "updated_at": row.updated_at,
        "job": {"template": job["template"], "queue": job.get("queue"), "payload": payload,
                "parameters": job.get("parameters") or {}, "name": job.get("name"), payload: job[payload],
                "cwd": job.get("cwd"), "python": job.get("python"), "array": job.get("array")},
        "description": describe(_parsed(row.cron), row.timezone, language),
        "runs": [{"array": None, **run, "state": states.get(run["workload"], "unknown")} for run in row.runs or []],
        "last_error": row.last_error,
    }
