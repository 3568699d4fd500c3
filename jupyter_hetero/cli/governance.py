"""``jupyter hetero audit verify|list``, ``jupyter hetero usage`` and ``jupyter hetero report``: the audit log's hash
chain, checked on the database itself, and its entries; usage and cost over a period; the acceptance report.

    jupyter hetero audit verify                                  # the default server's database
    jupyter hetero audit verify --db-url postgresql://hetero@db/hetero
    jupyter hetero audit list --action workload. --outcome denied [--json]     (through a running server)
    jupyter hetero usage --since 30d --by cost_centre [--json]                (through a running server)
    jupyter hetero report --since 30d --format html -o report.html [--lang zh] (through a running server)
    jupyter hetero onboard node gpu-7 | tenant vision | chip A100-SXM4-80GB | framework training/nvidia | model NAME
    jupyter hetero onboard list

``verify`` reads the database directly, not through a server: it is the check of a store someone may have
edited. It exits 0 when the chain is intact, 1 naming the first entry that breaks it, 2 when there is no
database to read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..i18n import session_language
from .export import emit
from .client import connect, guarded, server_options

__all__ = ["add_audit_parser", "add_onboard_parser", "add_report_parser", "add_usage_parser", "reload_catalog"]


def add_audit_parser(commands) -> None:
    audit = commands.add_parser("audit", help="verify the audit log's hash chain, or list its entries")
    actions = audit.add_subparsers(dest="action", required=True)
    verify = actions.add_parser("verify", help="check every entry's hash and link; exit 1 at the first bad one")
    verify.add_argument("--db-url", help="the database (default: the one a server started here uses)")
    verify.add_argument("--key-file", help="the key the chain is sealed with (default: the one a server started here "
                        "made, in Jupyter's runtime dir)")
    verify.add_argument("--anchor-file", help="the file the server writes the chain's head to (default: the one in "
                        "Jupyter's runtime dir; 'none' to check without it)")
    verify.add_argument("--json", action="store_true")
    verify.set_defaults(run=_verify)
    listed = actions.add_parser("list", parents=[server_options()], help="entries oldest first (platform admins)")
    for name in ("actor", "action", "outcome", "target"):
        listed.add_argument(f"--{name}")
    listed.add_argument("--after", type=int, default=0, help="entries after this id")
    listed.add_argument("--limit", type=int, default=200)
    listed.add_argument("--json", action="store_true")
    listed.set_defaults(run=guarded(_list))


def add_usage_parser(commands) -> None:
    usage = commands.add_parser("usage", parents=[server_options()],
                                help="device-hours, accelerator-hours, idle time and cost over a period")
    usage.add_argument("--since", default="30d", help="how far back (30d, 12h, 3600; default 30d)")
    usage.add_argument("--by", default="tenant", choices=("tenant", "user", "queue", "template", "cost_centre",
                                                          "flavor"))
    usage.add_argument("--json", action="store_true")
    usage.set_defaults(run=guarded(_usage))


def _usage(args: argparse.Namespace) -> int:
    report = connect(args).request("GET", "usage", since=args.since, by=args.by)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    from ..notebook.display import Table

    columns = ["device_hours", "accelerator_hours", "idle_device_hours", "unmeasured_device_hours", "core_hours",
               "cost", "attempts"]
    print(repr(Table([args.by, "device-h", "accel-h", "idle device-h", "unmeasured device-h", "core-h", "cost",
                      "attempts"],
                     [[row["key"], *(_figure(row[name]) for name in columns)] for row in report["rows"]]
                     + [["total", *(_figure(report["total"][name]) for name in columns)]])))
    return 0


def add_report_parser(commands) -> None:
    report = commands.add_parser("report", parents=[server_options()],
                                 help="the acceptance report: per task type its evidence and checkpoints")
    report.add_argument("--since", default="30d", help="how far back (30d, 12h, 3600; default 30d)")
    report.add_argument("--format", default="html", choices=("html", "json"))
    report.add_argument("--lang", default="en", choices=("en", "zh"))
    report.add_argument("-o", "--output", metavar="FILE", help="write it here instead of printing it")
    report.set_defaults(run=guarded(_report))


def _report(args: argparse.Namespace) -> int:
    client = connect(args)
    if args.format == "json":
        answer = client.request("GET", "report", since=args.since, lang=args.lang)  # its checkpoints in that language
        text = json.dumps(answer, indent=2, ensure_ascii=False) + "\n"
    else:
        text = client.text("report", since=args.since, format="html", lang=args.lang)
    return emit(text, args.output, f"the acceptance report since {args.since} ago ({args.format})")


def add_onboard_parser(commands) -> None:
    """``onboard``: "admission" is the engine's word for letting a workload start, so onboarding is not "admit"."""
    onboard = commands.add_parser("onboard", help="run an onboarding checklist (node, tenant, chip, framework, "
                                                  "model); reload the catalog")
    actions = onboard.add_subparsers(dest="action", required=True)
    for kind, what in (("node", "NAME"), ("tenant", "NAME"), ("chip", "MODEL"), ("framework", "TEMPLATE/FAMILY"),
                       ("model", "NAME")):
        one = actions.add_parser(kind, parents=[server_options()], help=f"run a {kind}'s onboarding checklist now")
        one.add_argument("name", metavar=what)
        one.add_argument("--json", action="store_true")
        one.set_defaults(run=guarded(_onboard), kind=kind)
    listed = actions.add_parser("list", parents=[server_options()], help="every onboarding checklist")
    listed.add_argument("--json", action="store_true")
    listed.set_defaults(run=guarded(_checklists))


# A step's status as the command prints it: a skipped step could not run here, which is no failure.
_MARKS = {"passed": "ok  ", "failed": "FAIL", "skipped": "SKIP"}


def _onboard(args: argparse.Namespace) -> int:
    record = connect(args).request("POST", f"onboarding/{args.kind}s/{args.name}", {})
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        skipped = sum(step["status"] == "skipped" for step in record["steps"])
        print(f"{record['kind']} {record['name']}: {record['state']}"
              + (f" ({skipped} step(s) skipped: they cannot run here)" if skipped else ""))
        for step in record["steps"]:
            print(f"  {_MARKS[step['status']]} {step['name']}: {step['evidence']}")
    return 0 if record["state"] == "accepted" else 1


def _checklists(args: argparse.Namespace) -> int:
    records = connect(args).request("GET", "onboarding")
    if args.json:
        print(json.dumps(records, indent=2, ensure_ascii=False))
        return 0
    from ..notebook.display import Table

    print(repr(Table(["kind", "name", "state", "failed step"],
                     [[r["kind"], r["name"], r["state"], r["failed_step"] or "-"] for r in records])))
    return 0


def reload_catalog(args: argparse.Namespace) -> int:
    """``jupyter hetero catalog reload``: the changes, each as audited, and what is said rather than done."""
    answer = connect(args).request("POST", "catalog/reload", {})
    zh = session_language() == "zh"
    said = "message_zh" if zh else "message"
    print(f"{answer['file']}: catalog version {answer['version']}, "
          f"{len(answer['changes'])} change(s), {answer['applies_zh' if zh else 'applies']}"
          + ("" if answer["in_effect"] or not answer["changes"] else " (not yet taken up)"))
    for change in answer["changes"]:
        print(f"  {change['action']:<24} {change[said]}")
    for note in answer["said"]:
        print(f"  ! {note[said]}")
    return 0


def _figure(value: float) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _verify(args: argparse.Namespace) -> int:
    from ..platform.governance.audit import verdict_json
    from ..store import Repository, default_db_url
    from ..store.audit_seal import AuditSeal, default_anchor_file, default_key_file, load_key

    url = args.db_url or default_db_url()
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        print(f"error: no database at {url.removeprefix('sqlite:///')}; give --db-url", file=sys.stderr)
        return 2
    # Read only: a check never makes a key, nor seals or anchors anything.
    key_file = Path(args.key_file) if args.key_file else default_key_file()
    key = load_key(key_file, create=False)
    anchor = args.anchor_file or str(default_anchor_file())
    seal = AuditSeal(key, anchor_file=None if anchor.lower() == "none" else Path(anchor)) if key else None
    if key is None:
        print(f"note: no key at {key_file}, so sealed entries cannot be checked and the anchor is not read; give "
              f"--key-file", file=sys.stderr)
    repository = Repository(url, clock=lambda: 0.0, seal=seal)
    try:
        verdict = verdict_json(repository)
    finally:
        repository.close()
    if args.json:
        print(json.dumps(verdict, indent=2))
    elif verdict["intact"]:
        print(f"audit log intact: {verdict['entries']} entries")
    else:
        print(f"audit log broken at entry {verdict['first_bad']}: {verdict['problem']}", file=sys.stderr)
    return 0 if verdict["intact"] else 1


def _list(args: argparse.Namespace) -> int:
    filters = {name: getattr(args, name) for name in ("actor", "action", "outcome", "target")
               if getattr(args, name) is not None}
    page = connect(args).request("GET", "audit", after=args.after, limit=args.limit, **filters)
    if args.json:
        print(json.dumps(page, indent=2, ensure_ascii=False))
        return 0
    from ..notebook.display import Table

    print(repr(Table(["id", "at", "actor", "action", "target", "outcome"],
                     [[e["id"], _when(e["at"]), e["actor"], e["action"], e["target"], e["outcome"]]
                      for e in page["entries"]])))
    if page["next_after"] is not None:
        print(f"... more after entry {page['next_after']}: --after {page['next_after']}")
    return 0


def _when(at: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
