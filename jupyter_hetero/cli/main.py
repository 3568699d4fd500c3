"""``jupyter hetero``: the command line of jupyter-hetero.

    jupyter hetero version
    jupyter hetero catalog validate my_catalog.yaml | catalog reload   (the running server's file, read again)
    jupyter hetero nodes [--emulated-nodes-file binder/demo-nodes.yaml] [--json]
    jupyter hetero k8s render --template fine-tuning [--flavor a100-80g] [--kernel]
    jupyter hetero export kueue [--catalog FILE] [--namespace hetero-{tenant}] [-o DIR]
    jupyter hetero hub-config [--z2jh]
    jupyter hetero audit verify [--db-url URL]        (exit 1 naming the first entry that breaks the chain)
    jupyter hetero usage [--since 30d] [--by tenant|user|queue|template|cost_centre|flavor]
    jupyter hetero report [--since 30d] [--format html|json] [-o FILE]
    jupyter hetero evidence ID [--format text|json|html] [--lang en|zh] [-o FILE]
    jupyter hetero metrics ID [--format table|json] [--lang en|zh]
    jupyter hetero schedules create NAME --cron "0 2 * * *" [--tz ZONE] --template T (--notebook P | -- CMD)
    jupyter hetero onboard node|tenant|chip|framework|model NAME | onboard list | catalog reload
    jupyter hetero service --HeteroApp.db_url=...     (run by JupyterHub as a managed service)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib import import_module
from pathlib import Path

from ..__about__ import __version__

__all__ = ["main"]

# Everything else is imported by the command that needs it: ``jupyter hetero --help`` must not
# pay for pydantic, jupyter_client or the engine (numpy). The catalog package is not imported for
# its path either.
_SHIPPED_CATALOG = str(Path(__file__).resolve().parent.parent / "catalog" / "default_catalog.yaml")

# Commands whose parsers are built by modules that import the engine; each is built only when it is
# the command given (or for build_parser() without argv), and otherwise listed by name and help.
_LAZY_COMMANDS = {
    "simulate": ("jupyter_hetero.sim.cli", "add_simulate_parser", "replay public traces against the scheduling engine"),
    "bench": ("jupyter_hetero.sim.bench_cli", "add_bench_parser", "measure the scheduling engine"),
    "service": ("jupyter_hetero.cli.hub_service", "add_service_parser",
                "run the shared scheduler as a JupyterHub-managed service"),
    "k8s": ("jupyter_hetero.cli.k8s", "add_k8s_parser",
            "show the Kubernetes objects the backend would create"),
    "export": ("jupyter_hetero.cli.export", "add_export_parser", "write the catalog as another scheduler's objects"),
    "audit": ("jupyter_hetero.cli.governance", "add_audit_parser",
              "verify the audit log's hash chain, or list its entries"),
    "usage": ("jupyter_hetero.cli.governance", "add_usage_parser",
              "device-hours, accelerator-hours, idle time and cost over a period"),
    "onboard": ("jupyter_hetero.cli.governance", "add_onboard_parser",
                "run an onboarding checklist (node, tenant, chip, framework, model); reload the catalog"),
    "report": ("jupyter_hetero.cli.governance", "add_report_parser",
               "the acceptance report: per task type its evidence and checkpoints"),
    "evidence": ("jupyter_hetero.cli.evidence", "add_evidence_parser",
                 "one workload's evidence chain: request, attempts, waits, release, audit"),
    "metrics": ("jupyter_hetero.cli.metrics", "add_metrics_parser",
                "a workload's figures: latest value, unit, source and points of each metric"),
    "hub-config": ("jupyter_hetero.cli.hub", "add_hub_config_parser",
                   "print the JupyterHub configuration for the hetero service and profiles"),
}


def _version(args: argparse.Namespace) -> int:
    print(f"jupyter-hetero {__version__}")
    return 0


def _catalog_validate(args: argparse.Namespace) -> int:
    from ..catalog import CatalogError, load_catalog

    try:
        catalog = load_catalog(args.file)
    except CatalogError as exc:
        print(f"{exc.source}: invalid catalog, {len(exc.issues)} error(s):", file=sys.stderr)
        for issue in exc.issues:
            print(f"  {issue}", file=sys.stderr)
        return 1
    print(
        f"{args.file}: valid catalog: {len(catalog.flavors)} flavors, {len(catalog.templates)} templates, "
        f"{len(catalog.queues)} queues, {len(catalog.tenants)} tenants"
    )
    return 0


def _catalog_reload(args: argparse.Namespace) -> int:
    from .governance import reload_catalog

    return reload_catalog(args)


def _nodes(args: argparse.Namespace) -> int:
    from ..backends.local import discover_local_node, load_emulated_nodes
    from ..backends.local.discovery import EmulatedNodesError
    from ..catalog import CatalogError, load_catalog
    from ..units import format_memory

    try:
        catalog = load_catalog(args.catalog)
        nodes = [] if args.no_local else [discover_local_node()]
        if args.emulated_nodes_file:
            nodes += load_emulated_nodes(args.emulated_nodes_file)
    except (CatalogError, EmulatedNodesError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    rows = []
    for node in nodes:
        flavor = catalog.flavor_of(node)
        rows.append({**node.model_dump(mode="json"), "flavor": flavor.name if flavor else None})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    header = f"{'NODE':<20} {'FLAVOR':<14} {'CPU':>5} {'MEMORY':>8}  {'ACCELERATORS':<32} EMULATED"
    print(header)
    for node, row in zip(nodes, rows):
        acc = node.accelerator
        devices = f"{acc.count}x {acc.model} {format_memory(acc.memory_mib)}" if acc else "-"
        print(
            f"{node.name:<20} {row['flavor'] or '-':<14} {node.cpu_milli // 1000:>5} "
            f"{format_memory(node.memory_mib):>8}  {devices:<32} {'yes' if node.emulated else 'no'}"
        )
        for note in node.notes:
            print(f"{'':<20} note: {note}")
    return 0


def _kernelspecs_install(args: argparse.Namespace) -> int:
    from ..kernel.kernelspecs import main_install

    return main_install(args)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``argv``, only the command it names is built in full."""
    parser = argparse.ArgumentParser(prog="jupyter hetero", description="Heterogeneous compute for Jupyter.")
    commands = parser.add_subparsers(dest="command", required=True)

    commands.add_parser("version", help="print the version").set_defaults(run=_version)

    catalog = commands.add_parser("catalog", help="work with catalog files").add_subparsers(dest="action", required=True)
    validate = catalog.add_parser("validate", help="check a catalog file; every error is listed with its path")
    validate.add_argument("file")
    validate.set_defaults(run=_catalog_validate)
    from .client import guarded, server_options  # light: the HTTP client only

    reload = catalog.add_parser("reload", parents=[server_options()],
                                help="read the running server's catalog file again: tenants, quotas, queues, templates "
                                     "and flavors change at its next tick, each change audited (platform admins)")
    reload.set_defaults(run=guarded(_catalog_reload))

    nodes = commands.add_parser("nodes", help="print the discovered inventory")
    nodes.add_argument("--catalog", default=_SHIPPED_CATALOG, help="catalog used to map nodes to flavors")
    nodes.add_argument("--emulated-nodes-file", help="also list the emulated nodes declared in this YAML file")
    nodes.add_argument("--no-local", action="store_true", help="leave this machine out")
    nodes.add_argument("--json", action="store_true", help="print JSON instead of a table")
    nodes.set_defaults(run=_nodes)

    kernelspecs = commands.add_parser("kernelspecs", help="kernelspecs per template").add_subparsers(
        dest="action", required=True)
    install = kernelspecs.add_parser("install", help="one kernelspec per catalog template that runs kernels")
    install.add_argument("--catalog", default=_SHIPPED_CATALOG)
    install.add_argument("--user", action="store_true", help="into the user's Jupyter data dir")
    install.add_argument("--prefix", help="into PREFIX/share/jupyter/kernels (default: this environment)")
    install.set_defaults(run=_kernelspecs_install)

    named = next((word for word in argv if not word.startswith("-")), None) if argv is not None else None
    for command, (module, adder, summary) in _LAZY_COMMANDS.items():
        if argv is None or command == named:
            getattr(import_module(module), adder)(commands)
        else:
            commands.add_parser(command, help=summary)
    from .schedules import add_schedules_command
    from .services import add_services_command
    from .workloads import add_workload_commands

    add_workload_commands(commands)
    add_services_command(commands)
    add_schedules_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["service"] and not {"-h", "--help"} & set(argv[1:]):
        # Everything after `service` is the server's (--HeteroApp.*, --KubernetesConfig.*), not ours to parse.
        from .hub_service import main as hub_service

        return hub_service(argv[1:])
    if argv[:1] == ["admit"]:
        # One word per concept: "admission" is the engine's (a workload may start); onboarding accepts a node.
        print("error: `jupyter hetero admit` is now `jupyter hetero onboard` (" + " ".join(["onboard", *argv[1:]])
              + "); 'admit' is the scheduler's word for letting a workload start", file=sys.stderr)
        return 2
    args = build_parser(argv).parse_args(argv)
    return args.run(args)

