"""``jupyter hetero simulate placement``: replay the openb traces under the FGD protocol.

    jupyter hetero simulate placement --nodes openb_node_list_gpu_node.csv --pods openb_pod_list_default.csv
    jupyter hetero simulate placement --nodes ... --pods ... --policy all --seeds 42-51 --json
"""

from __future__ import annotations

import argparse
import json
import sys

from .openb import LEVELS, POLICIES, run_placement
from .queueing_cli import add_queueing_parser
from .seeds import parse_seeds
from .topology_cli import add_topology_parser

__all__ = ["DEFAULT_POLICY", "add_simulate_parser"]

DEFAULT_POLICY = "hetero"


def _placement(args: argparse.Namespace) -> int:
    policies = POLICIES if args.policy == "all" else (args.policy,)
    try:
        results = {policy: run_placement(args.nodes, args.pods, policy, args.seeds) for policy in policies}
    except (OSError, KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(results if args.policy == "all" else results[args.policy], indent=2))
        return 0
    first = next(iter(results.values()))
    seeds = f"{args.seeds[0]}..{args.seeds[-1]} ({len(args.seeds)})"
    print(f"trace {first['trace']}, seeds {seeds}: % of GPUs allocated at arrived demand")
    print(f"{'POLICY':<14}" + "".join(f"{f'X={level}':>9}" for level in LEVELS) + f"{'SECONDS':>9}")
    for policy, result in results.items():
        cells = "".join(f"{result['alloc_pct'][str(level)]:>9.2f}" for level in LEVELS)
        print(f"{policy:<14}{cells}{result['seconds']:>9.1f}")
    return 0


def add_simulate_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``simulate placement`` on the ``jupyter hetero`` subcommands."""
    simulate = commands.add_parser("simulate", help="replay public traces against the scheduling engine")
    actions = simulate.add_subparsers(dest="simulation", required=True)
    placement = actions.add_parser(
        "placement", help="GPU allocation under the FGD paper's protocol on the Alibaba openb traces"
    )
    placement.add_argument("--nodes", required=True, help="node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
    placement.add_argument(
        "--pods", required=True,
        help="pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli; gpu_spec and other columns optional)",
    )
    placement.add_argument(
        "--policy", default=DEFAULT_POLICY, choices=(*POLICIES, "all"),
        help=f"placement policy, or 'all' to compare every one (default: {DEFAULT_POLICY}, the engine's own placement)",
    )
    placement.add_argument(
        "--seeds", type=parse_seeds, default=parse_seeds("42-51"), help="seeds, e.g. 42-51 (default) or 42,43"
    )
    placement.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    placement.set_defaults(run=_placement)
    add_queueing_parser(actions)
    add_topology_parser(actions)
