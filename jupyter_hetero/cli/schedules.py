"""``jupyter hetero schedules create|ls|show|edit|pause|resume|delete|run``: recurring jobs on a running server.

    jupyter hetero schedules create nightly --cron "0 2 * * *" --tz Asia/Shanghai --template training \\
        --notebook train.ipynb                    # prints the schedule's id last
    jupyter hetero schedules ls [--format json]
    jupyter hetero schedules show 3 [--format json] [--lang zh]
    jupyter hetero schedules edit 3 --cron "30 1 * * MON-FRI" [--missed skip] [--param devices=2] [--array 0-9%2]
    jupyter hetero schedules pause 3 | resume 3 | delete 3
    jupyter hetero schedules run 3                # submits its job now; prints the workload's id last

The job's options are ``submit``'s (jobs.py); a command goes last, after ``--``. Each run is submitted as the
schedule's owner, under their tenant's permissions and quotas as they are at that moment.
"""

from __future__ import annotations

import argparse
import json

from ..notebook.display import schedule_job_words, wall_time
from .client import connect, guarded, server_options
from .jobs import add_job_options, job_body

__all__ = ["add_schedules_command"]


def _create(args: argparse.Namespace) -> int:
    body = {"name": args.name, "cron": args.cron, "timezone": args.tz or "UTC", "missed": args.missed or "run-once",
            "paused": args.paused, "job": job_body(args)}
    created = connect(args).request("POST", "schedules", body, lang=args.lang)
    print(f"schedule {created['id']} ({created['name']}): {created['description']}; "
          f"{_next(created)}")
    print(created["id"])
    return 0


def _ls(args: argparse.Namespace) -> int:
    schedules = connect(args).request("GET", "schedules", lang=args.lang)
    if args.format == "json":
        print(json.dumps(schedules, indent=2, ensure_ascii=False))
        return 0
    print("\n".join(ls_lines(schedules)))
    return 0


def ls_lines(schedules: list[dict]) -> list[str]:
    """``GET /schedules`` as ``ls`` prints it: next and last runs in each schedule's own time zone, the last run's
    state (``refused`` when its last due run could not be submitted).

        ls_lines([...])   # ["    ID  NAME  STATE  CRON  TZ  NEXT  LAST  LAST-STATE", ...]

    Not the notebook's ``schedules_table`` (notebook/display.py), on purpose: this one is for a terminal and its
    scripts, English and one word per column (the cron as written, ``refused`` for a failed due run), while the
    notebook's says the cadence and the error in the session's language, with HTML. Times are read alike
    (``wall_time``, in each schedule's zone).
    """
    lines = [f"{'ID':>6}  {'NAME':<16} {'STATE':<7} {'CRON':<16} {'TZ':<16} {'NEXT':<16} {'LAST':<16} LAST-STATE"]
    for schedule in schedules:
        runs = schedule["runs"]
        last_state = "refused" if schedule.get("last_error") else runs[0]["state"] if runs else "-"
        zone = schedule["timezone"]
        lines.append(f"{schedule['id']:>6}  {schedule['name'][:16]:<16} {schedule['state']:<7} "
                     f"{schedule['cron'][:16]:<16} {zone[:16]:<16} {wall_time(schedule['next_run_at'], zone):<16} "
                     f"{wall_time(schedule['last_run_at'], zone):<16} {last_state}")
    return lines


def _next(schedule: dict) -> str:
    if schedule["next_run_at"] is None:
        return f"{schedule['state']}: no next run"
    return f"next run {wall_time(schedule['next_run_at'], schedule['timezone'])} {schedule['timezone']}"


def _show(args: argparse.Namespace) -> int:
    schedule = connect(args).request("GET", f"schedules/{args.id}", lang=args.lang)
    if args.format == "json":
        print(json.dumps(schedule, indent=2, ensure_ascii=False))
        return 0
    print("\n".join(show_lines(schedule)))
    return 0


def show_lines(schedule: dict) -> list[str]:
    """One schedule as ``show`` prints it: its definition, its job, then its latest runs, newest first."""
    job, zone = schedule["job"], schedule["timezone"]
    lines = [f"schedule {schedule['id']} ({schedule['name']}): {schedule['state']}, of {schedule['user']} in tenant "
             f"{schedule['tenant']}",
             f"  {schedule['cron']} in {zone}: {schedule['description']}",
             f"  missed runs: {schedule['missed']}; {_next(schedule)}",
             f"  job: {schedule_job_words(job)}, template {job['template']}, queue {job['queue'] or 'the template’s'}"
             + "".join(f", {name}={value}" for name, value in job["parameters"].items())
             + (f", array {job['array']}" if job.get("array") else "")]
    if job.get("cwd") or job.get("python"):
        lines.append(f"  in {job.get('cwd') or 'the root'}, python {job.get('python') or 'as the server finds it'}")
    if schedule.get("last_error"):
        lines.append(f"  its last due run was refused: {schedule['last_error']}")
    if not schedule["runs"]:
        lines.append("  no runs yet")
        return lines
    lines.append(f"  {'WORKLOAD':>8}  {'DUE':<16} {'SUBMITTED':<16} {'STATE':<12} LATE")
    for run in schedule["runs"]:
        due, submitted = wall_time(run["due_at"], zone), wall_time(run["submitted_at"], zone)
        lines.append(f"  {run['workload']:>8}  {due:<16} {submitted:<16} {run['state']:<12} "
                     f"{'late' if run['late'] else ''}".rstrip())
    return lines


def _edit(args: argparse.Namespace) -> int:
    job = job_body(args, changes=True)
    if args.no_array:  # null resets it: one job per run again
        job["array"] = None
    body = {"name": args.rename, "cron": args.cron, "timezone": args.tz, "missed": args.missed, "job": job or None}
    changes = {key: value for key, value in body.items() if value is not None}
    if not changes:
        args.parser.error("give what changes: --rename, --cron, --tz, --missed or the job's options")
    edited = connect(args).request("PATCH", f"schedules/{args.id}", changes, lang=args.lang)
    print(f"schedule {edited['id']} ({edited['name']}): {edited['description']}; {_next(edited)}")
    return 0


def _acted(verb: str, said: str):
    def act(args: argparse.Namespace) -> int:
        path = f"schedules/{args.id}" + ("" if verb == "delete" else f"/{verb}")
        schedule = connect(args).request("DELETE" if verb == "delete" else "POST", path, lang=args.lang)
        print(f"schedule {schedule['id']} ({schedule['name']}): {said}; {_next(schedule)}"
              if verb != "delete" else f"schedule {schedule['id']} ({schedule['name']}): {said}")
        return 0
    return act


def _run(args: argparse.Namespace) -> int:
    workload = connect(args).request("POST", f"schedules/{args.id}/run")
    print(f"schedule {args.id} submitted {workload['kind']} {workload['id']} to queue {workload['queue']} "
          f"({workload['template']}): state {workload['state']}")
    print(workload["id"])
    return 0


def _after_the_name(args: argparse.Namespace) -> None:
    """Read the options written after the schedule's name or id (argparse leaves them with the command): ``create
    nightly --cron ... -- python x.py`` as ``create --cron ... nightly -- python x.py``; then what is required."""
    if args.command and args.command[0] != "--":
        options = argparse.ArgumentParser(prog=args.parser.prog, add_help=False)
        args.add_options(options)
        options.parse_args(args.command, namespace=args)
    if args.verb == "create":
        missing = [option for option, value in (("--cron", args.cron), ("--template", args.template)) if not value]
        if missing:
            args.parser.error(f"the following arguments are required: {', '.join(missing)}")


def _read_on(run):
    def call(args: argparse.Namespace) -> int:
        _after_the_name(args)
        return run(args)
    return call


def _create_options(parser: argparse.ArgumentParser) -> None:
    _timing(parser)
    parser.add_argument("--cron", help='five fields, e.g. "0 2 * * *" (02:00 every day), or @daily (required)')
    parser.add_argument("--paused", action="store_true", help="created paused: nothing runs until it is resumed")
    add_job_options(parser, template_required=False)


def _edit_options(parser: argparse.ArgumentParser) -> None:
    _timing(parser)
    parser.add_argument("--rename", metavar="NAME", help="its new name")
    parser.add_argument("--cron")
    add_job_options(parser, template_required=False)
    parser.add_argument("--no-array", action="store_true", help="one job per run again, where the job was an array")


def _timing(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tz", "--timezone", dest="tz", metavar="ZONE",
                        help="the IANA time zone the cron's times are in, e.g. Asia/Shanghai (default UTC)")
    parser.add_argument("--missed", choices=("run-once", "skip"),
                        help="due times missed while the server was down: one late run (run-once, the default) "
                             "or none (skip)")


def add_schedules_command(commands: argparse._SubParsersAction) -> None:
    server = server_options()
    schedules = commands.add_parser("schedules", help="recurring jobs: create, ls, show, edit, pause, resume, "
                                                      "delete, run now")
    verbs = schedules.add_subparsers(dest="verb", required=True)
    common = argparse.ArgumentParser(add_help=False, parents=[server])
    common.add_argument("--lang", default="en", choices=("en", "zh"), help="the language of the cron in words")
    listed = argparse.ArgumentParser(add_help=False, parents=[common])
    listed.add_argument("--format", choices=("table", "json"), default="table")

    create = verbs.add_parser("create", parents=[common], help="a job submitted at each due time of a cron "
                                                               "expression; prints its id last")
    create.add_argument("name")
    _create_options(create)
    create.set_defaults(run=guarded(_read_on(_create)), parser=create, add_options=_create_options)

    verbs.add_parser("ls", parents=[listed], help="your schedules (a tenant-admin's: the tenant's)").set_defaults(
        run=guarded(_ls))
    show = verbs.add_parser("show", parents=[listed], help="one schedule and its latest runs")
    show.add_argument("id", type=int)
    show.set_defaults(run=guarded(_show))

    edit = verbs.add_parser("edit", parents=[common], help="change a schedule: the options given")
    edit.add_argument("id", type=int)
    _edit_options(edit)
    edit.set_defaults(run=guarded(_read_on(_edit)), parser=edit, add_options=_edit_options)

    for verb, said, text in (("pause", "paused", "nothing runs until it is resumed"),
                             ("resume", "active", "runs again from its next due time; none missed is made up"),
                             ("delete", "deleted; the workloads it submitted stay", "end it")):
        acted = verbs.add_parser(verb, parents=[common], help=text)
        acted.add_argument("id", type=int)
        acted.set_defaults(run=guarded(_acted(verb, said)))
    run = verbs.add_parser("run", parents=[server], help="submit its job now, out of cadence; prints the workload's "
                                                         "id last")
    run.add_argument("id", type=int)
    run.set_defaults(run=guarded(_run))
