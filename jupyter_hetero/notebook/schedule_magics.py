"""``%%hetero_schedule``: a cell's code as a recurring job; ``%hetero_schedules``: the schedules, as a table.

    %%hetero_schedule --cron "0 2 * * *" --tz Asia/Shanghai --name nightly-report
    import report
    report.build("yesterday")

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

    @line_magic
    def hetero_schedules(self, line: str):
        """Your schedules (a tenant admin: the tenant's): cadence, next and last run, and why a run failed."""
        if line.strip():
            raise usage("hetero_schedules", say(N_("takes no arguments")))
        language = session_language()
        client = self._client()
        schedules = call(client.request, "GET", "schedules", lang=language)
        display(tables.schedules_table(schedules, language))

    def _first_job_template(self, client: HeteroClient) -> str:
        """The first template the caller's tenant may use that runs jobs (``GET /templates?mine=true``)."""
        for template in call(client.templates, mine=True):
            if "job" in template["kinds"]:
                return template["name"]
        raise usage("hetero_schedule", say(N_("no template your tenant may use runs jobs; give --template")))
