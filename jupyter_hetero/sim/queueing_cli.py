"""``jupyter hetero simulate queueing``: FIFO, quota FIFO and the engine on a window of the Philly trace.

    jupyter hetero simulate queueing --trace philly_jobs.csv
    jupyter hetero simulate queueing --trace philly_jobs.csv --window 2017-11-06+7d --seed 1 --json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .philly import DEFAULT_NODES_PER_FLAVOR, DEFAULT_WINDOW, SCHEDULERS, Scenario, Window, run_queueing

__all__ = ["add_queueing_parser"]

_THROUGHPUTS = "gavel_throughputs.json"


def _throughputs_next_to(trace: str) -> str:
    """Gavel's table beside the trace or one folder up (``shared/data/traces/`` -> ``shared/data/``)."""
    here = Path(trace).resolve().parent
    for folder in (here, here.parent):
        if (folder / _THROUGHPUTS).exists():
            return str(folder / _THROUGHPUTS)
    return str(here / _THROUGHPUTS)


def _window(text: str) -> Window:
    try:
        return Window.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _schedulers(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in SCHEDULERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"schedulers must be among {', '.join(SCHEDULERS)}: {text!r}")
    return names


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f}"


def _print_table(out: dict) -> None:
    cluster = out["cluster"]
    print(
        f"{out['trace']}: {out['jobs']} jobs of {out['tenants']} tenants submitted {out['window']['start']} "
        f"+ {out['window']['days']:g} days; cluster {cluster['nodes_per_flavor']} nodes x {cluster['gpus_per_node']} GPUs "
        f"of each of {', '.join(cluster['gpus'])}; seed {out['seed']}"
    )
    print(f"{'SCHEDULER':<14}{'AVG JCT h':>10}{'WAIT p50 h':>11}{'p95 h':>8}{'p99 h':>8}{'GPU UTIL':>9}"
          f"{'WORST vs QUOTA':>22}{'MAX SLOWDOWN':>20}{'PREEMPT':>9}{'SECONDS':>9}")
    for name, s in out["schedulers"].items():
        wait = s["queueing_delay_s"]["all"]
        versus = s.get("tenant_jct_vs_quota_fifo")
        worst = "-" if name == "quota-fifo" or not versus else f"{versus['value']:.2f} ({versus['tenant']})"
        slow = s["max_tenant_slowdown"] or {}
        slowest = f"{slow.get('value', float('nan')):.1f} ({slow.get('tenant')})"
        print(f"{name:<14}{_hours(s['avg_jct_s']):>10}{_hours(wait['p50']):>11}{_hours(wait['p95']):>8}"
              f"{_hours(wait['p99']):>8}{s['gpu_utilisation']:>9.1%}{worst:>22}{slowest:>20}"
              f"{s['preemptions']:>9}{s['wall_s']:>9.1f}")
        if s["finished"] < s["jobs"]:
            print(f"{'':<14}{s['jobs'] - s['finished']} jobs never finished")
    if "heterogeneity_gain" in out:
        print(f"heterogeneity-aware gain (avg JCT blind / aware): {out['heterogeneity_gain']:.2f}x")
    print(f"run time {out['run_s']:.0f} s with {out['workers']} worker(s)")


def _queueing(args: argparse.Namespace) -> int:
    scenario = Scenario(
        trace=args.trace, throughputs=args.throughputs or _throughputs_next_to(args.trace), window=args.window,
        seed=args.seed, nodes_per_flavor=args.nodes_per_flavor, training_borrows=not args.strict_training,
    )
    try:
        out = run_queueing(scenario, schedulers=args.schedulers, workers=args.workers)
    except (OSError, KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        _print_table(out)
    return 0


def add_queueing_parser(simulations: argparse._SubParsersAction) -> None:
    """Register ``queueing`` on the ``simulate`` subcommands."""
    queueing = simulations.add_parser(
        "queueing", help="average JCT, waits, utilisation and fairness of three schedulers on the Philly trace"
    )
    queueing.add_argument("--trace", required=True, help="Philly jobs CSV (timestamp,duration,num_gpus,gpu_time,cluster)")
    queueing.add_argument("--throughputs", help=f"Gavel's {_THROUGHPUTS} (default: beside the trace or one folder up)")
    queueing.add_argument("--window", type=_window, default=Window.parse(DEFAULT_WINDOW),
                          help=f"submit-time window START+DAYSd (default: {DEFAULT_WINDOW})")
    queueing.add_argument("--seed", type=int, default=1, help="seed of the job-type draw (default: 1)")
    queueing.add_argument("--nodes-per-flavor", type=int, default=DEFAULT_NODES_PER_FLAVOR,
                          help=f"8-GPU nodes of each of k80, p100, v100 (default: {DEFAULT_NODES_PER_FLAVOR})")
    queueing.add_argument("--schedulers", type=_schedulers, default=tuple(SCHEDULERS),
                          help=f"comma-separated subset of {', '.join(SCHEDULERS)} (default: all)")
    queueing.add_argument("--strict-training", action="store_true",
                          help="keep the catalog's training queue as is: it borrows only after its max wait")
    queueing.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1),
                          help="processes to run the schedulers in parallel; numbers do not change (default: CPUs, at most 4)")
    queueing.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    queueing.set_defaults(run=_queueing)
