"""``jupyter hetero bench throughput``: admissions per second, cycle latency and peak RSS.

    jupyter hetero bench throughput --nodes 5000 --workloads 50000 --json
    jupyter hetero bench throughput --scale 500,5000,20000
    jupyter hetero bench kernel-start --runs 20
"""

from __future__ import annotations

import argparse
import json

from .kernel_start import run_kernel_start
from .throughput import run_throughput

__all__ = ["add_bench_parser"]

_COLUMNS = ("nodes", "workloads", "cycles", "admissions", "admissions_per_s", "cycle_p50_ms", "cycle_p99_ms", "peak_rss_mib")


def _throughput(args: argparse.Namespace) -> int:
    sizes = [int(n) for n in args.scale.split(",")] if args.scale else [args.nodes]
    results = [
        run_throughput(nodes, args.workloads if not args.scale else nodes * 10, cycles=args.cycles, seed=args.seed,
                       eta=not args.no_eta)
        for nodes in sizes
    ]
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else {"scaling": results}, indent=2))
        return 0
    print("".join(f"{column.upper():>18}" for column in _COLUMNS))
    for result in results:
        print("".join(f"{result[column]:>18}" for column in _COLUMNS))
    return 0


def _kernel_start(args: argparse.Namespace) -> int:
    result = run_kernel_start(args.runs, args.kernelspec, args.emulated_nodes_file)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for name, median in result["median_s"].items():
        print(f"{name:<16} median start-to-ready {median:.3f} s over {result['runs']} starts")
    print(f"overhead of the hetero provisioner: {result['overhead_pct']:+.1f}%")
    return 0


def add_bench_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``bench throughput`` on the ``jupyter hetero`` subcommands."""
    bench = commands.add_parser("bench", help="measure the scheduling engine")
    kinds = bench.add_subparsers(dest="benchmark", required=True)
    throughput = kinds.add_parser("throughput", help="admissions per second over a stream of cycles")
    throughput.add_argument("--nodes", type=int, default=5000, help="cluster size (mixed CPU/GPU/NPU flavors)")
    throughput.add_argument("--workloads", type=int, default=50000, help="pending workloads at the start")
    throughput.add_argument("--scale", help="comma-separated node counts to compare, with 10 workloads per node")
    throughput.add_argument("--cycles", type=int, default=30, help="cycles in the stream (stops early when none wait)")
    throughput.add_argument("--seed", type=int, default=1)
    throughput.add_argument("--no-eta", action="store_true", help="skip ETAs for waiting workloads")
    throughput.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    throughput.set_defaults(run=_throughput)
    kernel = kinds.add_parser("kernel-start", help="start-to-ready time of a hetero kernel against a plain ipykernel")
    kernel.add_argument("--runs", type=int, default=20)
    kernel.add_argument("--kernelspec", default="hetero-cpu")
    kernel.add_argument("--emulated-nodes-file", help="emulated nodes for the benchmark's server")
    kernel.add_argument("--json", action="store_true")
    kernel.set_defaults(run=_kernel_start)
