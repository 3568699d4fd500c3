"""``jupyter hetero simulate topology``: topology-aware against topology-blind placement of whole-device jobs.

    jupyter hetero simulate topology --trace philly_jobs.csv
    jupyter hetero simulate topology --trace philly_jobs.csv --presets nvlink-2x4 --seeds 1-3 --json
"""

from __future__ import annotations

import argparse
import json
import sys

from .seeds import parse_seeds

__all__ = ["add_topology_parser"]


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _print_table(out: dict) -> None:
    print(f"{out['jobs']} jobs per seed (seeds {', '.join(map(str, out['seeds']))}), load {out['load']:g}, "
          f"{out['nodes_per_preset']} nodes per preset; job sizes "
          + ", ".join(f"{k}: {share:.1%}" for k, share in out["sizes"].items()))
    print(f"{'PRESET':<18}{'MODE':<7}{'1 DOMAIN':>9}{'2-DEV':>8}{'4-DEV':>8}{'8-DEV':>8}{'1 NUMA':>8}"
          f"{'ALLOC':>8}{'WAIT h':>8}{'MULTI WAIT h':>13}{'CYCLE s':>9}")
    for preset, result in out["presets"].items():
        for mode in ("aware", "blind"):
            r = result[mode]
            sizes = r["single_domain_share_by_size"]
            print(f"{preset:<18}{mode:<7}{_share(r['single_domain_share']):>9}{_share(sizes['2']):>8}"
                  f"{_share(sizes['4']):>8}{_share(sizes['8']):>8}{_share(r['single_numa_share']):>8}"
                  f"{r['allocation_rate']:>8.1%}{r['mean_wait_s'] / 3600:>8.2f}{r['mean_wait_multi_s'] / 3600:>13.2f}"
                  f"{r['cycle_s']:>9.2f}")
    print(f"run time {out['run_s']:.0f} s")


def _topology(args: argparse.Namespace) -> int:
    from .topology_study import philly_samples, run_topology  # noqa: PLC0415  (keeps `--help` fast)

    try:
        samples = philly_samples(args.trace)
        out = run_topology(samples, presets=tuple(args.presets), nodes=args.nodes, jobs=args.jobs, load=args.load,
                           seeds=tuple(args.seeds), max_runtime_s=args.max_runtime_h * 3600)
    except (OSError, KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    out["trace"] = args.trace.rsplit("/", 1)[-1]
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        _print_table(out)
    return 0


def add_topology_parser(simulations: argparse._SubParsersAction) -> None:
    """Register ``topology`` on the ``simulate`` subcommands."""
    topology = simulations.add_parser(
        "topology", help="single-domain share, allocation and waits of topology-aware and -blind device placement"
    )
    topology.add_argument("--trace", required=True,
                          help="Philly jobs CSV: the 1/2/4/8-GPU jobs give the job sizes and run times")
    topology.add_argument("--presets", type=lambda text: text.split(","),
                          default=["nvswitch-8", "nvlink-2x4", "ascend-910b-hccs", "mi300x-xgmi", "ascend-910a-2x4"],
                          help="comma-separated presets of sim/topologies.yaml (default: all five)")
    topology.add_argument("--nodes", type=int, default=16, help="8-device nodes per preset (default: 16)")
    topology.add_argument("--jobs", type=int, default=2000, help="jobs per seed (default: 2000)")
    topology.add_argument("--load", type=float, default=0.9,
                          help="offered device-time over the cluster's capacity (default: 0.9)")
    topology.add_argument("--seeds", type=parse_seeds, default=parse_seeds("1-5"), help="seeds (default: 1-5)")
    topology.add_argument("--max-runtime-h", type=float, default=24.0, help="run times are capped here (default: 24)")
    topology.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    topology.set_defaults(run=_topology)
