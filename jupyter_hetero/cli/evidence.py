"""``jupyter hetero evidence ID``: one workload's evidence chain, from its request to its release.

    jupyter hetero evidence 42                              # text, one section per part of the chain
    jupyter hetero evidence 42 --format json -o 42.json
    jupyter hetero evidence 42 --format html --lang zh -o 42.html

Through a running server, with the access describing the workload has (its tenant's members, platform admins).
"""

from __future__ import annotations

import argparse
import json

from .client import connect, guarded, server_options
from .export import emit

__all__ = ["add_evidence_parser"]


def add_evidence_parser(commands) -> None:
    evidence = commands.add_parser("evidence", parents=[server_options()],
                                   help="one workload's evidence chain: request, attempts, waits, release, audit")
    evidence.add_argument("id", type=int)
    evidence.add_argument("--format", default="text", choices=("text", "json", "html"))
    evidence.add_argument("--lang", default="en", choices=("en", "zh"))
    evidence.add_argument("-o", "--output", metavar="FILE", help="write it here instead of printing it")
    evidence.set_defaults(run=guarded(_evidence))


def _evidence(args: argparse.Namespace) -> int:
    client = connect(args)
    path = f"workloads/{args.id}/evidence"
    if args.format == "html":
        text = client.text(path, format="html", lang=args.lang)
    else:
        chain = client.request("GET", path, lang=args.lang)
        if args.format == "json":
            text = json.dumps(chain, indent=2, ensure_ascii=False) + "\n"
        else:
            from ..export.evidence import render_evidence_text  # noqa: PLC0415 - only this format needs it

            text = render_evidence_text(chain, args.lang)
    return emit(text, args.output, f"the evidence of workload {args.id} ({args.format})")
