"""``jupyter hetero submit|ls|status|logs|cancel|explain``: work with a running server.

    jupyter hetero submit --template training --param devices=2 -- python train.py --lr 0.1
    jupyter hetero submit --template training --notebook train.ipynb
    jupyter hetero ls --mine
    jupyter hetero status 42 --json
    jupyter hetero logs 42 --follow
    jupyter hetero explain 42 --lang zh
    jupyter hetero cancel 42
    jupyter hetero submit --template data-preprocessing --array 0-99%10 -- python shard.py
    jupyter hetero ls --array 12
    jupyter hetero cancel 12 --array
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..notebook.display import (array_label, array_states, attempts_line, eta_text, explanation_lines,
                               inadmissible_words)
from ..notebook.client import parse_after
from .client import connect, guarded, server_options
from .jobs import add_job_options, job_body

__all__ = ["add_workload_commands"]

# The most workloads one GET /workloads answers (ListWorkloadsQuery.limit).
_MOST_LISTED = 5000


def _submit(args: argparse.Namespace) -> int:
    # What it runs, where, with which Python and as an array or not (jobs.py, as a schedule's job), then what it
    # waits for.
    body = {**job_body(args), "after": args.after or None}
    created = connect(args).submit(**{k: v for k, v in body.items() if v not in (None, {})})
    array = created.get("array")
    if array:  # the array's id last, as a job's: `cancel ID --array` and `ls --array ID` take it
        print(f"submitted array {array_label(array)} of {array['size']} tasks to queue {created['queue']} "
              f"({created['template']}): state {created['state']}")
        print(array["id"])
        return 0
    print(f"submitted {created['kind']} to queue {created['queue']} ({created['template']}): state {created['state']}")
    print(created["id"])
    return 0


def _after(text: str) -> dict:
    try:
        return parse_after(text)
    except ValueError as exc:  # argparse names the option and prints this
        raise argparse.ArgumentTypeError(str(exc)) from None


def _ls(args: argparse.Namespace) -> int:
    client = connect(args)
    rows = client.workloads(mine=args.mine or None, state=args.state, queue=args.queue, array=args.array,
                            limit=_MOST_LISTED if args.array else None)
    if args.json or args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    if not (args.tasks or args.array):
        # An array cut off by the list's limit is read whole (up to the most one list gives) for its line.
        for array in {row["array"]["id"]: row["array"] for row in rows if row.get("array")}.values():
            listed = [row for row in rows if (row.get("array") or {}).get("id") == array["id"]]
            if len(listed) < array["size"] and not (args.state or args.queue):
                known = {row["id"] for row in rows}
                rows += [row for row in client.workloads(array=array["id"], limit=min(array["size"], _MOST_LISTED))
                         if row["id"] not in known]
    print("\n".join(_ls_lines(rows, time.time(), tasks=bool(args.tasks or args.array))))
    return 0


def _ls_lines(rows: list[dict], now: float, *, tasks: bool = False) -> list[str]:
    """``GET /workloads`` as ``ls`` prints it, as sacct would: the node is kept after the end, waits and run times
    in ``[D-]HH:MM:SS``, a waiting workload's first blocker last; an array on one line (squeue's way), its tasks'
    states counted, unless ``tasks`` asks for a line per task (squeue -r). The state stays the second column, where
    scripts reading ``ls`` find it.

        _ls_lines([...], now=time.time())   # ["    ID  STATE  NAME  SUBMITTED  WAITED  ELAPSED  NODE  WAITING ON", ...]
    """
    lines = [f"{'ID':>6}  {'STATE':<12} {'NAME':<16} {'SUBMITTED':<19} {'WAITED':>11} {'ELAPSED':>11}  {'NODE':<16} "
             "WAITING ON"]
    arrays: dict[int, list[dict]] = {}
    for row in rows:
        if row.get("array") and not tasks:
            arrays.setdefault(row["array"]["id"], []).append(row)
    shown: set[int] = set()
    for row in rows:
        array = row.get("array")
        if array and not tasks:
            if array["id"] not in shown:
                shown.add(array["id"])
                lines.append(_array_line(arrays[array["id"]], now))
            continue
        started, finished = row.get("started_at"), row.get("finished_at")
        name = row.get("name") or (f"{array['id']}[{array['index']}]" if array else "-")
        lines.append(_line(row["id"], row["state"], name, row["created_at"], started, finished, now,
                           row.get("node") or row.get("last_node") or "-",
                           row["blockers"][0]["message"] if row.get("blockers") else ""))
    return lines


def _line(identifier: object, state: str, name: str, created: float, started: float | None,
          finished: float | None, now: float, node: str, waiting: str) -> str:
    waited = (started if started is not None else finished if finished is not None else now) - created
    elapsed = _clock((finished if finished is not None else now) - started) if started is not None else "-"
    submitted = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(created))
    return (f"{identifier!s:>6}  {state:<12} {name[:16]:<16} {submitted:<19} {_clock(waited):>11} {elapsed:>11}  "
            f"{node:<16} {waiting}").rstrip()


def _array_line(tasks: list[dict], now: float) -> str:
    """One array as one line: ``12[0-99%10]``, its tasks' states counted (``running 10, queued 80, succeeded 10``),
    waited from its submission to its first start, elapsed from then to its last end, and its nodes."""
    tasks = sorted(tasks, key=lambda row: row["array"]["index"])
    array = tasks[0]["array"]
    state = array_states(tasks)
    if len(tasks) < array["size"]:
        state += f" ({len(tasks)} of {array['size']} tasks listed)"
    starts = [row["started_at"] for row in tasks if row.get("started_at") is not None]
    ends = [row["finished_at"] for row in tasks if row.get("finished_at") is not None]
    ended = len(ends) == len(tasks) and len(tasks) == array["size"]
    nodes = sorted({node for row in tasks if (node := row.get("node") or row.get("last_node"))})
    name = (tasks[0].get("name") or "").rpartition("[")[0] or "-"
    waiting = next((row["blockers"][0]["message"] for row in tasks if row.get("blockers")), "")
    return _line(array_label(array), state, name, min(row["created_at"] for row in tasks), min(starts, default=None),
                 max(ends) if ended else None, now,
                 nodes[0] if len(nodes) == 1 else f"{len(nodes)} nodes" if nodes else "-", waiting)


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
    client = connect(args)
    workload = client.cancel(args.id, array=args.array)
    if args.array:
        array = workload["array"]
        tasks = client.workloads(array=array["id"], limit=min(array["size"], _MOST_LISTED))
        stopping = sum(1 for row in tasks if row.get("stopping") == "cancel")
        print(f"array {array_label(array)}: " + array_states(tasks)
              + (f" ({stopping} stopping)" if stopping else ""))
        return 0
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
    add_job_options(submit)
    submit.add_argument("--after", action="append", default=[], type=_after, metavar="ID[:ok|:any|:failed]",
                        help="wait until workload ID has succeeded (ok, the default), ended however (any) or failed; "
                             "an array's ID: every task of it (failed: all ended, one failed); repeatable, all must "
                             "hold; a condition that can no longer hold fails the job")
    submit.set_defaults(run=guarded(_submit))

    ls = commands.add_parser("ls", parents=[server], help="list workloads")
    ls.add_argument("--mine", action="store_true")
    ls.add_argument("--state")
    ls.add_argument("--queue")
    ls.add_argument("--tasks", "-r", action="store_true", help="a line per task of an array (squeue -r), not one "
                                                               "per array")
    ls.add_argument("--array", type=int, metavar="ID", help="only the tasks of array ID, a line each")
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
        if name == "cancel":
            sub.add_argument("--array", action="store_true", help="every unfinished task of the array ID is one of")
        if name == "logs":
            sub.add_argument("--attempt", type=int)
            sub.add_argument("--follow", "-f", action="store_true")
            sub.add_argument("--tail", type=int)
