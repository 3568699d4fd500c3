"""``jupyter hetero submit|ls|status|logs|cancel|explain``: work with a running server.

    jupyter hetero submit --template training --param devices=2 -- python train.py --lr 0.1
    jupyter hetero ls --mine
    jupyter hetero status 42 --json
    jupyter hetero logs 42 --follow
    jupyter hetero explain 42 --lang zh
    jupyter hetero cancel 42
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..notebook.display import attempts_line, eta_text, explanation_lines, inadmissible_words
from ..notebook.client import parse_after
from .client import connect, guarded, parse_params, server_options

__all__ = ["add_workload_commands"]


def _submit(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("error: give the command to run after --", file=sys.stderr)
        return 2
    body = {"template": args.template, "command": command, "parameters": parse_params(args.param),
            "queue": args.queue, "name": args.name, "runtime": args.runtime,
            # Where and with what it runs: here (inside the root, or the server refuses naming cwd), with this Python.
            "cwd": os.path.abspath(args.cwd or os.getcwd()), "python": args.python or sys.executable, "after": args.after or None}
    created = connect(args).submit(**{k: v for k, v in body.items() if v not in (None, {})})
    print(f"submitted {created['kind']} to queue {created['queue']} ({created['template']}): state {created['state']}")
    print(created["id"])
    return 0


def _after(text: str) -> dict:
    try:
        return parse_after(text)
    except ValueError as exc:  # argparse names the option and prints this
        raise argparse.ArgumentTypeError(str(exc)) from None


def _ls(args: argparse.Namespace) -> int:
    rows = connect(args).workloads(mine=args.mine or None, state=args.state, queue=args.queue)
    if args.json or args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    print("\n".join(_ls_lines(rows, time.time())))
    return 0


def _ls_lines(rows: list[dict], now: float) -> list[str]:
    """``GET /workloads`` as ``ls`` prints it, as sacct would: the node is kept after the end, waits and run times
    in ``[D-]HH:MM:SS``, a waiting workload's first blocker last. The state stays the second column, where scripts
    reading ``ls`` find it.

        _ls_lines([...], now=time.time())   # ["    ID  STATE  NAME  SUBMITTED  WAITED  ELAPSED  NODE  WAITING ON", ...]
    """
    lines = [f"{'ID':>6}  {'STATE':<12} {'NAME':<16} {'SUBMITTED':<19} {'WAITED':>11} {'ELAPSED':>11}  {'NODE':<16} "
             "WAITING ON"]
    for row in rows:
        started, finished = row.get("started_at"), row.get("finished_at")
        waited = (started if started is not None else finished if finished is not None else now) - row["created_at"]
        elapsed = _clock((finished if finished is not None else now) - started) if started is not None else "-"
        submitted = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(row["created_at"]))
        node = row.get("node") or row.get("last_node") or "-"
        waiting = row["blockers"][0]["message"] if row.get("blockers") else ""
        lines.append(f"{row['id']:>6}  {row['state']:<12} {(row.get('name') or '-')[:16]:<16} {submitted:<19} "
                     f"{_clock(waited):>11} {elapsed:>11}  {node:<16} {waiting}".rstrip())
    return lines


def _clock(seconds: float) -> str:
    """Seconds as sacct writes a duration: ``00:01:05``, ``1-02:03:04``."""
    days, rest = divmod(max(0, int(seconds)), 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def _status(args: argparse.Namespace) -> int:
    client = connect(args)
    workload = client.workload(args.id, lang=args.lang)
    if args.json:
        print(json.dumps(workload, indent=2))
        return 0
    print(f"workload {workload['id']}: {workload['state']}" + (f" ({workload['reason']})" if workload["reason"] else ""))
    print(f"  queue {workload['queue']}, template {workload['template']}, tenant {workload['tenant']}, "
          f"user {workload['user']}")
    spec = workload.get("spec") or {}
    if spec.get("cwd") or spec.get("python"):
        print(f"  in {spec.get('cwd') or 'its attempt folder'}, python {spec.get('python') or 'as the server finds it'}")
    if workload.get("placement"):
        for slot in workload["placement"]["slots"]:
            devices = ",".join(str(d["index"]) for d in slot["devices"]) or "no devices"
            print(f"  on {slot['node']} ({workload['placement']['flavor']}): devices {devices}")
    if workload["state"] == "inadmissible":
        headline, lifted = inadmissible_words(workload, args.lang)  # from its blockers, as the panel says it
        print(f"  {headline}; {lifted} (queue {workload['queue']}):")
        for blocker in workload.get("blockers", []):
            print(f"  - {blocker['message']}")
    elif "position" in workload:
        print(f"  position {workload['position']} in {workload['queue']}, {eta_text(workload.get('eta'))}")
        for blocker in workload.get("blockers", []):
            print(f"  - {blocker['message']}")
    print(f"  {attempts_line(workload)}")
    for attempt in workload.get("attempts", []):
        print(f"  attempt {attempt['number']} on {attempt['node']}: {attempt['outcome'] or 'running'}"
              + (f", exit code {attempt['exit_code']}" if attempt["exit_code"] not in (None,) else ""))
    if workload.get("attempts"):  # what it ran is measured; a workload that never ran has no figures to show
        from .metrics import metric_lines  # noqa: PLC0415 - only a workload that ran needs it

        figures = client.request("GET", f"workloads/{args.id}/metrics", lang=args.lang)
        print("  metrics:")
        print("\n".join("    " + line for text in metric_lines(figures) for line in text.splitlines()))
    return 0


def _logs(args: argparse.Namespace) -> int:
    for chunk in connect(args).logs(args.id, attempt=args.attempt, follow=args.follow, tail=args.tail):
        sys.stdout.write(chunk)
        sys.stdout.flush()
    return 0


def _cancel(args: argparse.Namespace) -> int:
    workload = connect(args).cancel(args.id)
    print(f"workload {workload['id']}: {workload['state']}" + (" (stopping)" if workload.get("stopping") else ""))
    return 0


def _explain(args: argparse.Namespace) -> int:
    client = connect(args)
    explanation = client.explain(args.id, lang=args.lang)
    if args.json:
        print(json.dumps(explanation, indent=2, ensure_ascii=False))
        return 0
    preview = client.preview_preemption(args.id) if args.preempt else None
    print("\n".join(explanation_lines(explanation, preview)))
    return 0


def add_workload_commands(commands: argparse._SubParsersAction) -> None:
    """Register the commands that talk to a running server."""
    server = server_options()

    submit = commands.add_parser("submit", parents=[server], help="submit a command as a job; prints its id last")
    submit.add_argument("--template", required=True)
    submit.add_argument("--queue")
    submit.add_argument("--name")
    submit.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="an advanced parameter of the template, e.g. devices=2 (repeatable)")
    submit.add_argument("--runtime", help="expected run time, e.g. 2h, for ETAs")
    submit.add_argument("--cwd", metavar="DIR", help="where the job runs (default: this directory); it must be "
                                                    "inside your root on the server, or the server refuses it")
    submit.add_argument("--python", metavar="PATH", help="the interpreter `python` means in the job "
                                                         "(default: the one running this command)")
    submit.add_argument("--after", action="append", default=[], type=_after, metavar="ID[:ok|:any|:failed]",
                        help="wait until workload ID has succeeded (ok, the default), ended however (any) or failed; "
                             "repeatable, all must hold; a condition that can no longer hold fails the job")
    submit.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")
    submit.set_defaults(run=guarded(_submit))

    ls = commands.add_parser("ls", parents=[server], help="list workloads")
    ls.add_argument("--mine", action="store_true")
    ls.add_argument("--state")
    ls.add_argument("--queue")
    ls.add_argument("--json", action="store_true", help="the same as --format json")
    ls.add_argument("--format", choices=("table", "json"), default="table",
                    help="table: id, name, state, submitted, waited, elapsed, node; json: GET /workloads as it answers")
    ls.set_defaults(run=guarded(_ls))

    for name, run, text in (("status", _status, "one workload"), ("cancel", _cancel, "cancel a workload"),
                            ("logs", _logs, "print a workload's log"), ("explain", _explain, "why it waits")):
        sub = commands.add_parser(name, parents=[server], help=text)
        sub.add_argument("id", type=int)
        sub.set_defaults(run=guarded(run))
        if name in ("status", "explain"):
            sub.add_argument("--json", action="store_true")
            sub.add_argument("--lang", default="en", help="en or zh")
        if name == "explain":
            sub.add_argument("--preempt", action="store_true", help="also show what a preemption would evict (admins)")
        if name == "logs":
            sub.add_argument("--attempt", type=int)
            sub.add_argument("--follow", "-f", action="store_true")
            sub.add_argument("--tail", type=int)
