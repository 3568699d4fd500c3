"""``%%hetero_schedule``: a cell's code as a recurring job; ``%hetero_schedules``: the schedules, as a table, and
what may be done to one.

    %%hetero_schedule --cron "0 2 * * *" --tz Asia/Shanghai --name nightly-report
    import report
    report.build("yesterday")

    %hetero_schedules                   # yours (a tenant admin's: the tenant's)
    %hetero_schedules show 3            # one schedule, its job and its latest runs
    %hetero_schedules pause 3 | resume 3 | run 3 | delete 3

The cell is sent as it is (payload ``code``, as ``%%hetero_submit`` sends a cell) and runs at each due time under
its owner's identity and quotas, with this kernel's interpreter, whether the notebook is open or not.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from ..i18n import N_, session_language
from . import display as tables
from .client import HeteroClient
from .magic_support import call, parse, say, usage

__all__ = ["ScheduleMagics", "default_name"]

# What %hetero_schedules does to one schedule, and what it says once done.
_ACTIONS = ("show", "pause", "resume", "run", "delete")
_DONE = {
    "pause": N_("schedule {schedule} ({name}) is paused: nothing runs until it is resumed"),
    "resume": N_("schedule {schedule} ({name}) is active again; the runs due while it was paused are not made up"),
    "delete": N_("schedule {schedule} ({name}) is deleted; the workloads it submitted stay"),
}


def default_name(cell: str) -> str:
    """A schedule's name when ``--name`` is not given: the cell's first line when it is a comment, else
    ``cell-`` and a digest of the cell (the same cell, the same name).

        default_name("# nightly report\\nbuild()")   # "nightly report"
    """
    first = cell.strip().splitlines()[0] if cell.strip() else ""
    title = re.sub(r"^[#\s]+", "", first).strip()
    if first.startswith("#") and title:
        return title[:100]
    return "cell-" + hashlib.sha1(cell.encode()).hexdigest()[:8]


@magics_class
class ScheduleMagics(Magics):
    """``%%hetero_schedule`` and ``%hetero_schedules``, over the client the other magics use (``%hetero_connect``
    changes it for both)."""

    def __init__(self, shell, client: Callable[[], HeteroClient]):
        super().__init__(shell)
        self._client = client

    @magic_arguments()
    @argument("--cron", required=True,
              help='When it runs: five fields, minute hour day-of-month month day-of-week ("0 2 * * *", '
                   '"30 6 * * MON-FRI"), or @hourly, @daily, @weekly, @monthly.')
    @argument("--tz", default=None, help="The IANA time zone the cron is read in, e.g. Asia/Shanghai; UTC by default.")
    @argument("--name", help="The schedule's name; by default the cell's first line if it is a comment.")
    @argument("--template", help="A template that runs jobs; by default the first one your tenant may use.")
    @argument("--queue", help="Queue each run waits in; the template's by default.")
    @argument("--missed", choices=("run-once", "skip"), default="run-once",
              help="After the server was down: run-once submits the runs missed meanwhile once, late; skip does not.")
    @argument("--paused", action="store_true", help="Create it paused: nothing runs until it is resumed.")
    @cell_magic
    def hetero_schedule(self, line: str, cell: str):
        """Run the cell as a job at each due time of a cron expression; print the schedule's id, its cadence in
        words and its next run."""
        args = parse(self.hetero_schedule, line)
        if not cell.strip():
            raise usage("hetero_schedule", say(N_("the cell is empty: write the code each run runs below the magic")))
        client = self._client()
        language = session_language()
        template = args.template or self._first_job_template(client)
        job = {"kind": "job", "template": template, "code": cell, "python": sys.executable}
        if args.queue:
            job["queue"] = args.queue
        body = {"name": args.name or default_name(cell), "cron": args.cron, "missed": args.missed,
                "paused": args.paused, "job": job}
        if args.tz:
            body["timezone"] = args.tz
        schedule = call(client.request, "POST", "schedules", body, lang=language)
        print(say(N_("schedule {schedule} ({name}): {description}"), schedule=schedule["id"], name=schedule["name"],
                  description=schedule["description"]))
        if schedule["next_run_at"] is None:
            print(say(N_("paused: nothing runs until it is resumed")))
        else:
            zone = schedule["timezone"]
            print(say(N_("next run: {when} ({zone})"), when=tables.wall_time(schedule["next_run_at"], zone), zone=zone))

    @magic_arguments()
    @argument("action", nargs="?", choices=_ACTIONS,
              help="What to do to schedule ID: show it with its runs, pause it, resume it, run its job now, or delete "
                   "it. Without one: your schedules, as a table.")
    @argument("id", nargs="?", type=int, help="The schedule's id (the first column of the table).")
    @line_magic
    def hetero_schedules(self, line: str):
        """Your schedules (a tenant admin: the tenant's): cadence, next and last run, and why a run failed; or, with
        an action and an id, that schedule shown, paused, resumed, run now or deleted."""
        args = parse(self.hetero_schedules, line)
        if args.action is not None and args.id is None:
            raise usage("hetero_schedules", say(N_("{action} needs a schedule's id, e.g. %hetero_schedules {action} 3"),
                                                action=args.action))
        language = session_language()
        client = self._client()
        if args.action is None:
            schedules = call(client.request, "GET", "schedules", lang=language)
            display(tables.schedules_table(schedules, language))
        elif args.action == "show":
            self._show(call(client.request, "GET", f"schedules/{args.id}", lang=language), language)
        elif args.action == "run":
            workload = call(client.request, "POST", f"schedules/{args.id}/run", lang=language)
            print(say(N_("schedule {schedule} submitted workload {workload} now, to queue {queue}: {state}"),
                      schedule=args.id, workload=workload["id"], queue=workload["queue"], state=workload["state"]))
        else:
            method, path = ("DELETE", f"schedules/{args.id}") if args.action == "delete" else (
                "POST", f"schedules/{args.id}/{args.action}")
            schedule = call(client.request, method, path, lang=language)
            print(say(_DONE[args.action], schedule=schedule["id"], name=schedule["name"]))
            if args.action == "resume":
                self._next(schedule)

    def _show(self, schedule: dict, language: str) -> None:
        """One schedule: its cadence in words, its state, its job, why its last due run failed, its latest runs."""
        print(say(N_("schedule {schedule} ({name}): {description}"), schedule=schedule["id"], name=schedule["name"],
                  description=schedule["description"]))
        print(say(N_("{state}, of {user} in tenant {tenant}; missed runs: {missed}"),
                  state=tables.schedule_state(schedule["state"], language), user=schedule["user"],
                  tenant=schedule["tenant"], missed=schedule["missed"]))
        if schedule["state"] == "active":
            self._next(schedule)
        job = schedule["job"]
        print(say(N_("job: {what}, template {template}, queue {queue}"), what=tables.schedule_job_words(job),
                  template=job["template"],
                  queue=job["queue"] or say(N_("the template's"))))
        if job.get("array"):
            print(say(N_("each run submits the array {array}"), array=job["array"]))
        if schedule.get("last_error"):
            print(say(N_("its last due run was not submitted: {error}"), error=schedule["last_error"]))
        display(tables.schedule_runs_table(schedule, language))

    @staticmethod
    def _next(schedule: dict) -> None:
        zone = schedule["timezone"]
        print(say(N_("next run: {when} ({zone})"), when=tables.wall_time(schedule["next_run_at"], zone), zone=zone))

    def _first_job_template(self, client: HeteroClient) -> str:
        """The first template the caller's tenant may use that runs jobs (``GET /templates?mine=true``)."""
        for template in call(client.templates, mine=True):
            if "job" in template["kinds"]:
                return template["name"]
        raise usage("hetero_schedule", say(N_("no template your tenant may use runs jobs; give --template")))
