"""``jupyter hetero bench throughput``: admissions per second, cycle latency and peak RSS.

    jupyter hetero bench throughput --nodes 5000 --workloads 50000 --json
    jupyter hetero bench throughput --scale 500,5000,20000
    jupyter hetero bench kernel-start --runs 20
    jupyter hetero bench api --repo /work/base --repo . --json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .api_load import ENDPOINTS, TARGETS, run_api_load
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


def _api(args: argparse.Namespace) -> int:
    repos = args.repo or [Path(__file__).resolve().parents[2]]
    results = [run_api_load(Path(repo), nodes=args.nodes, workloads=args.workloads, duration_s=args.duration,
                            clients=args.clients, submit_s=args.submit_duration, keep=args.keep) for repo in repos]
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else {"runs": results}, indent=2))
        return 0
    print(f"targets: API p99 < {TARGETS['api_p99_ms']:g} ms, submissions >= {TARGETS['submissions_per_s']:g}/s, "
          f"tick < {TARGETS['tick_s']:g} s")
    for result in results:
        tick = result["tick"]
        print(f"\n{result['repo']}: {result['nodes']} nodes, {result['workloads']} workloads, {result['running']} "
              f"running, {result['duration_s']} s x {result['clients_per_endpoint']} clients per endpoint, "
              f"load average {result['load_average']['before'][0]} on {result['cpus']} CPUs")
        print(f"{'ENDPOINT':<22}{'OK':>8}{'ERRORS':>8}{'P50 MS':>10}{'P99 MS':>10}{'MAX MS':>10}")
        for name in ENDPOINTS:
            row = result["endpoints"][name]
            print(f"{name:<22}{row['ok']:>8}{row['errors']:>8}{row['p50_ms']!s:>10}{row['p99_ms']!s:>10}"
                  f"{row['max_ms']!s:>10}")
        print(f"submissions/s {result['submissions_per_s']}; ticks: {_ticks(tick)}")
        phase = result.get("submissions_phase")
        if phase:
            print(f"submissions phase ({phase['clients']} POST clients alone, {phase['duration_s']} s): "
                  f"{phase['submissions_per_s']} submissions/s, p50 {phase['p50_ms']} ms, p99 {phase['p99_ms']} ms, "
                  f"{phase['errors']} errors; ticks: {_ticks(phase['tick'])}")
    return 0


def _ticks(tick: dict | None) -> str:
    if not tick:
        return "not reported by this checkout"
    return (f"p50 {tick['p50_s']} s, p99 {tick['p99_s']} s, max {tick['max_s']} s over the last {tick['recent']}, "
            f"{tick['ticks_during_load']} during the load; mean per phase {tick['mean_s_per_phase']}")


def add_bench_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``bench throughput``, ``kernel-start`` and ``api`` on the ``jupyter hetero`` subcommands."""
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
    api = kinds.add_parser("api", help="API latency and submissions/s on a real server while its scheduler ticks")
    api.add_argument("--repo", action="append",
                     help="checkout to measure (its folder goes first on PYTHONPATH); repeat to compare, "
                     "e.g. --repo /work/base --repo . (default: this package's checkout)")
    api.add_argument("--nodes", type=int, default=5000, help="emulated nodes")
    api.add_argument("--workloads", type=int, default=5000, help="queued jobs seeded before the server starts")
    api.add_argument("--duration", type=float, default=30.0, help="seconds of load per checkout")
    api.add_argument("--clients", type=int, default=4, help="concurrent clients per endpoint")
    api.add_argument("--submit-duration", type=float, default=15.0,
                     help="seconds of the submissions phase after the mixed one (POST clients alone); 0 skips it")
    api.add_argument("--keep", action="store_true", help="keep the run's folder (server log, store)")
    api.add_argument("--json", action="store_true", help="print JSON instead of a table")
    api.set_defaults(run=_api)
