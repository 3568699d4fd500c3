"""``jupyter hetero export kueue|prometheus-rules``: the catalog as Kueue objects, for ``kubectl apply``, or its
alert rules as Prometheus alerting rules.

    jupyter hetero export kueue [--catalog FILE] [--namespace PATTERN] [-o DIR]
    jupyter hetero export prometheus-rules [--catalog FILE] [-o FILE]

Without ``-o`` the objects are printed as one multi-document YAML stream; with it, one file per kind
is written into DIR, numbered so that ``kubectl apply -f DIR`` creates what an object refers to first.
Each catalog rule the objects cannot say is a ``# not expressed in Kueue: ...`` comment above the object it
concerns and one warning on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from ..catalog import DEFAULT_CATALOG_PATH, CatalogError, load_catalog
from ..export.kueue import DEFAULT_NAMESPACE, DEFAULT_PREFIX, KINDS, Unexpressed, kueue_export
from ..export.prometheus import rule_groups

__all__ = ["add_export_parser", "emit", "kind_file_name"]


def kind_file_name(kind: str) -> str:
    """``ClusterQueue`` -> ``3-clusterqueues.yaml``: apply order, then the kind's plural."""
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    return f"{KINDS.index(kind) + 1}-{plural}.yaml"


def add_export_parser(commands) -> None:
    export = commands.add_parser("export", help="write the catalog as another scheduler's objects")
    targets = export.add_subparsers(dest="export_target", required=True)
    kueue = targets.add_parser("kueue", help="ResourceFlavors, Cohorts, ClusterQueues, LocalQueues and "
                                             "WorkloadPriorityClasses for Kueue (kueue.x-k8s.io/v1beta2)")
    kueue.add_argument("--catalog", help="catalog YAML (default: the shipped one)")
    kueue.add_argument("--namespace", default=DEFAULT_NAMESPACE,
                       help=f"namespace of each tenant's LocalQueues, '{{tenant}}' replaced by its name, as "
                            f"c.KubernetesConfig.namespace (default: {DEFAULT_NAMESPACE})")
    kueue.add_argument("--prefix", default=DEFAULT_PREFIX,
                       help=f"prefix of the cluster-wide names (default: {DEFAULT_PREFIX})")
    kueue.add_argument("-o", "--output", metavar="DIR", help="write one YAML file per kind into DIR instead")
    kueue.set_defaults(run=_export_kueue)
    rules = targets.add_parser("prometheus-rules", help="the catalog's alert rules as Prometheus alerting rules over "
                                                        "the metrics endpoint's metrics")
    rules.add_argument("--catalog", help="catalog YAML (default: the shipped one)")
    rules.add_argument("-o", "--output", metavar="FILE", help="write the rule file here instead of printing it")
    rules.set_defaults(run=_export_rules)


def _export_rules(args: argparse.Namespace) -> int:
    try:
        groups = rule_groups(load_catalog(args.catalog or DEFAULT_CATALOG_PATH))
    except CatalogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    text = yaml.safe_dump(groups, sort_keys=False, allow_unicode=True, width=120)
    return emit(text, args.output, f"{len(groups['groups'][0]['rules'])} rules")


def emit(text: str, output: str | None, what: str) -> int:
    """Print ``text``, or write it to ``output`` and say ``what`` it holds."""
    if output is None:
        print(text, end="")
        return 0
    Path(output).write_text(text, encoding="utf-8")
    print(f"{output}: {what}")
    return 0


def _export_kueue(args: argparse.Namespace) -> int:
    try:
        catalog = load_catalog(args.catalog or DEFAULT_CATALOG_PATH)
        objects, unexpressed = kueue_export(catalog, namespace=args.namespace, prefix=args.prefix)
    except (CatalogError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for gap in unexpressed:
        print(f"warning: {gap}", file=sys.stderr)
    if args.output is None:
        print(_dump(objects, unexpressed), end="")
        return 0
    directory = Path(args.output)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for kind in KINDS:
            of_kind = [o for o in objects if o["kind"] == kind]
            if of_kind:
                path = directory / kind_file_name(kind)
                path.write_text(_dump(of_kind, unexpressed), encoding="utf-8")
                print(f"{path}: {len(of_kind)} {kind}")
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _dump(objects: list[dict], unexpressed: list[Unexpressed]) -> str:
    """The objects as one YAML stream, each after the comments of the rules it leaves out."""
    documents = []
    for obj in objects:
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        comments = "".join(f"# {gap}\n" for gap in unexpressed if gap.object == where)
        documents.append(comments + yaml.safe_dump(obj, sort_keys=False, allow_unicode=True, width=120))
    return "---\n".join(documents)
