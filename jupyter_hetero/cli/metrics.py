"""``jupyter hetero metrics ID``: a workload's figures, measured and reported, and what is not measured and why.

    jupyter hetero metrics 42                 # NAME  LATEST  UNIT  SOURCE  POINTS, then "not measured: why"
    jupyter hetero metrics 42 --format json   # GET /workloads/42/metrics as it answers
    jupyter hetero metrics 42 --lang zh

Through a running server, with the access describing the workload has (its tenant's members, platform admins).
``jupyter hetero status ID`` prints the same summary under the workload.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .client import connect, guarded, server_options

__all__ = ["add_metrics_parser", "metric_lines"]


def add_metrics_parser(commands) -> None:
    metrics = commands.add_parser("metrics", parents=[server_options()],
                                  help="a workload's figures: latest value, unit, source and points of each metric")
    metrics.add_argument("id", type=int)
    metrics.add_argument("--format", default="table", choices=("table", "json"))
    metrics.add_argument("--lang", default="en", choices=("en", "zh"))
    metrics.set_defaults(run=guarded(_metrics))


def _metrics(args: argparse.Namespace) -> int:
    answer = connect(args).request("GET", f"workloads/{args.id}/metrics", lang=args.lang)
    if args.format == "json":
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    else:
        print("\n".join(metric_lines(answer)))
    return 0


def metric_lines(answer: dict[str, Any]) -> list[str]:
    """The table of a ``GET /workloads/{id}/metrics`` answer (declared names first), then each name without figures
    and why."""
    from ..notebook.display import Table  # noqa: PLC0415 - the table only

    declared = answer.get("declared") or []
    order = {name: i for i, name in enumerate(declared)}
    series = sorted(answer.get("series") or [], key=lambda one: (order.get(one["name"], len(order)), one["name"]))
    lines = []
    if series:
        lines.append(repr(Table(["name", "latest", "unit", "source", "points"],
                                [[one["name"], _figure(one["points"][-1][1]) if one["points"] else "-",
                                  one.get("unit") or "-", one["source"], len(one["points"])] for one in series])))
    else:
        lines.append("no figures yet")
    lines += [f"not measured: {missing['why']}" for missing in answer.get("not_measured") or []]
    return lines


def _figure(value: float) -> str:
    return f"{value:.6g}"
