"""The handlers speak HTTP and call the platform; the engine and the store are reached only through those. Across the
whole package, no two folders import each other (however indirectly), and no module imports another's private name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import jupyter_hetero.handlers

HANDLERS = Path(jupyter_hetero.handlers.__file__).parent
FORBIDDEN = ("jupyter_hetero.engine", "jupyter_hetero.store")


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved against the handlers package."""
    package = ["jupyter_hetero", "handlers"]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.add(module)
            # `from .. import engine` names the module in the alias
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_imported_modules_resolves_relative_imports(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text("from ..engine import render\nfrom .. import store\nimport jupyter_hetero.engine.cycle\n")
    names = imported_modules(source)
    assert {"jupyter_hetero.engine", "jupyter_hetero.store", "jupyter_hetero.engine.cycle"} <= names


@pytest.mark.parametrize("path", sorted(HANDLERS.glob("*.py")), ids=lambda p: p.name)
def test_no_handler_imports_the_engine_or_the_store(path):
    reached = {name for name in imported_modules(path)
               if any(name == layer or name.startswith(layer + ".") for layer in FORBIDDEN)}
    assert not reached, f"{path.name} imports {sorted(reached)}: go through a service"


# -- the whole package: no cycle between its folders, no private name across modules ----------

PACKAGE = Path(jupyter_hetero.__file__).parent


def module_parts(path: Path) -> list[str]:
    """The dotted name of a file of the package, as parts; a package's ``__init__`` is the package."""
    parts = ["jupyter_hetero", *path.relative_to(PACKAGE).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def runtime_imports(source: str, module: list[str], is_package: bool = False, *,
                    type_checking: bool = False) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import ``source`` runs, relative ones resolved; imports inside a function
    count (they run when it does), those under ``if TYPE_CHECKING:`` only with ``type_checking`` (they never run)."""
    package = module if is_package else module[:-1]
    found = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_checking:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            found.append((node.lineno, ".".join(base + ([node.module] if node.module else [])),
                          [alias.name for alias in node.names]))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def folder_of(module: str) -> str | None:
    """The folder a module of the package is in: its sub-package, or a top-level module itself."""
    parts = module.split(".")
    return parts[1] if parts[0] == "jupyter_hetero" and len(parts) > 1 else None


def package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def import_edges(files, place, package: str) -> dict[tuple[str, str], list[str]]:
    """(importer, imported) place -> where: every import between two places of ``files``, ``place`` giving a
    module's place (None: outside, or no place); ``package``: whose ``from <package> import x`` names a module."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in files:
        parts = module_parts(path)
        source = place(".".join(parts))
        if source is None:
            continue
        for line, module, names in runtime_imports(path.read_text(encoding="utf-8"), parts,
                                                   path.name == "__init__.py"):
            # `from .. import store` names the module in the alias
            targets = [f"{module}.{name}" for name in names] if module == package else [module]
            for target in targets:
                imported = place(target)
                if imported is not None and imported != source:
                    edges.setdefault((source, imported), []).append(f"{path.relative_to(PACKAGE)}:{line}")
    return edges


def folder_imports() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) folder -> where: every import between two folders of the package (its own __init__,
    which lists entry points, is no folder)."""
    return import_edges(package_files(), folder_of, "jupyter_hetero")


def cycles(edges) -> list[list[str]]:
    """The strongly connected components of more than one folder (Tarjan's algorithm), each sorted."""
    graph: dict[str, set[str]] = {}
    for importer, imported in edges:
        graph.setdefault(importer, set()).add(imported)
        graph.setdefault(imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def test_runtime_imports_resolves_relative_imports_and_skips_type_checking_ones():
    source = ("from typing import TYPE_CHECKING\nfrom ..engine import render\nfrom . import base\n"
              "if TYPE_CHECKING:\n    from ..app import HeteroApp\nelse:\n    import json\n"
              "def later():\n    from ..store import Repository\n")
    imports = runtime_imports(source, ["jupyter_hetero", "platform", "sample"])
    assert [(module, names) for _line, module, names in imports] == [
        ("typing", ["TYPE_CHECKING"]), ("jupyter_hetero.engine", ["render"]), ("jupyter_hetero.platform", ["base"]),
        ("json", []), ("jupyter_hetero.store", ["Repository"])]
    with_types = runtime_imports(source, ["jupyter_hetero", "platform", "sample"], type_checking=True)
    assert ("jupyter_hetero.app", ["HeteroApp"]) in [(module, names) for _line, module, names in with_types]


@pytest.mark.parametrize(("edges", "expected"), [
    pytest.param({("sim", "engine"), ("platform", "sim")}, [], id="a chain is no cycle"),
    pytest.param({("platform", "sim"), ("sim", "platform")}, [["platform", "sim"]],
                 id="two folders importing each other"),
    pytest.param({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}, [["a", "b", "c"]],
                 id="a longer loop, without its tail"),
])
def test_cycles_finds_folders_that_reach_each_other(edges, expected):
    assert cycles(edges) == expected


def test_no_import_cycle_between_the_packages_folders():
    edges = folder_imports()
    found = cycles(set(edges))
    where = {cycle: [f"{a} -> {b}: {', '.join(edges[a, b])}" for a, b in sorted(edges) if a in cycle and b in cycle]
             for cycle in map(tuple, found)}
    assert not found, f"folders import each other: {where}"


def test_no_private_name_is_imported_from_another_module():
    found = []
    for path in package_files():
        for line, module, names in runtime_imports(path.read_text(encoding="utf-8"), module_parts(path),
                                                   path.name == "__init__.py", type_checking=True):
            private = [name for name in names if name.startswith("_") and not name.startswith("__")]
            if private and module.split(".")[0] == "jupyter_hetero":
                found.append(f"{path.relative_to(PACKAGE)}:{line} imports {', '.join(private)} from {module}")
    assert not found, "a private name is the module's own; make it public where it belongs:\n" + "\n".join(found)


# --- which folder may import which (docs/architecture.md, "Layers") ----------------------------------------------

FOUNDATIONS = {"__about__", "units", "i18n", "packages", "errors", "capability", "credential_format",
               "metric_names"}
# Each folder of the package (sub-package or top-level module) and the folders it may import, beside the
# foundations, which every folder may import (and which import only each other). Lower layers first.
ALLOWED: dict[str, set[str]] = {
    # the pure core: what to schedule and how
    "engine": set(),
    "catalog": {"engine"},
    # what the core is fed from and speaks to
    "store": set(),
    "models": {"catalog"},
    "api": {"catalog", "models"},
    "engine_inputs": {"engine", "catalog", "store"},
    "backends": {"engine", "catalog"},
    "export": {"backends", "catalog", "engine"},
    "sim": {"engine", "catalog", "backends", "engine_inputs"},
    # who is asking (Jupyter's identity providers and authorizer) and which of the server's routes a member reaches
    "member_routes": set(),
    "auth": {"member_routes"},
    "authorizer": {"auth", "member_routes"},
    # the platform around the core: one place that stores, schedules and launches
    "platform": {"engine", "catalog", "store", "models", "api", "engine_inputs", "backends", "export", "sim",
                 "auth"},
    # the faces of the platform: Jupyter's routes and kernels, the hub, the notebook client, the command line
    "handlers": {"platform", "models", "api", "export", "kernel", "auth"},
    "kernel": {"platform", "catalog", "store"},
    "hub": {"platform", "catalog", "backends"},
    "notebook": set(),
    "cli": {"platform", "catalog", "store", "backends", "export", "hub", "kernel", "notebook"},
    # the wiring
    "startup": {"platform", "handlers", "kernel", "engine", "catalog", "store", "backends", "engine_inputs",
                "auth"},
    "app": {"startup", "platform", "handlers", "engine", "catalog", "store", "auth", "authorizer"},
}


def folders() -> set[str]:
    """Every folder of the package: its sub-packages and top-level modules (not __init__)."""
    return {folder_of(".".join(module_parts(path))) for path in package_files()} - {None}


def test_every_folder_of_the_package_has_its_place_in_the_layers():
    assert folders() <= set(ALLOWED) | FOUNDATIONS, "give the new folder its layer in ALLOWED (and in the docs)"


def test_the_foundations_import_only_each_other():
    leaks = {(importer, imported): where for (importer, imported), where in folder_imports().items()
             if importer in FOUNDATIONS and imported not in FOUNDATIONS}
    assert not leaks, leaks


def test_each_folder_imports_only_what_its_layer_allows():
    broken = {(importer, imported): where for (importer, imported), where in folder_imports().items()
              if importer in ALLOWED and imported not in ALLOWED[importer] | FOUNDATIONS}
    assert not broken, "imports across layers the rules forbid (docs/architecture.md, Layers): " + "; ".join(
        f"{importer} -> {imported} at {', '.join(where)}" for (importer, imported), where in sorted(broken.items()))


@pytest.mark.parametrize(("edge", "forbidden"), [
    (("sim", "platform"), True),         # the replays drive the engine, not the platform (issue 35)
    (("auth", "platform"), True),        # who is asking does not depend on what is asked
    (("backends", "export"), True),      # the export reads the backend's names, not the other way
    (("platform", "handlers"), True),    # HTTP is the handlers' alone
    (("handlers", "engine"), True),
    (("handlers", "store"), True),
    (("engine", "catalog"), True),       # the engine is pure
    (("notebook", "platform"), True),    # the notebook side talks to the server over HTTP only
    (("platform", "engine_inputs"), False),
])
def test_the_rules_forbid_what_the_layers_forbid(edge, forbidden):
    importer, imported = edge
    assert (imported not in ALLOWED[importer] | FOUNDATIONS) == forbidden


# Below the handlers: HTTP errors are the handlers' to raise; these raise the project's own (errors.py).
BELOW_HANDLERS = ("platform", "engine", "engine_inputs", "store", "backends", "catalog", "sim", "export")


@pytest.mark.parametrize("path", [path for path in package_files() if folder_of(".".join(module_parts(path)))
                                  in BELOW_HANDLERS], ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_below_the_handlers_uses_tornado_web(path):
    reached = [f"line {line}" for line, module, names in runtime_imports(
        path.read_text(encoding="utf-8"), module_parts(path), path.name == "__init__.py", type_checking=True)
        if module == "tornado.web" or (module == "tornado" and "web" in names)]
    assert not reached, f"{path.relative_to(PACKAGE)} uses tornado.web ({', '.join(reached)}): raise an errors.py error"


# --- platform/ by world (issue 35): which world of platform/ may import which -----------------------------------

# Beside wiring.py (the wiring, which only app, startup and the handlers import), the modules every world shares.
SHARED = {"access", "identity", "clock", "request_limits", "live_catalog"}
# Each world of platform/ and the worlds it may import, beside the shared modules and the layers below the platform.
WORLDS: dict[str, set[str]] = {
    # submission, the one enqueue, a request resolved from its template, a job's files, environment and credential
    "workloads": set(),
    # the tick and the launch: the launch starts a job from its files and environment, the preview resolves a
    # submission as the workloads world would
    "scheduling": {"workloads"},
    # kernels and hub users' servers are workloads the scheduler places and the provisioner or the hub launches
    "kernels": {"workloads", "scheduling"},
    # a service's replicas are workloads the scheduler places
    "serving": {"workloads", "scheduling"},
    # the views over everything: onboarding, metrics, alerts, usage, the report, capacity, the audit log
    "governance": {"workloads", "scheduling", "kernels", "serving"},
}


def place_in_platform(module: str) -> str | None:
    """Where a module of platform/ is: its world, a shared module, or the wiring; None outside platform/."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["jupyter_hetero", "platform"] and len(parts) > 2 else None


def platform_imports() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) place in platform/ -> where: every import between two places of platform/."""
    return import_edges(sorted((PACKAGE / "platform").rglob("*.py")), place_in_platform, "jupyter_hetero.platform")


def may_import(importer: str, imported: str) -> bool:
    """Whether one place of platform/ may import another: a world its own and lower worlds, every place the
    shared modules, the shared modules only each other, and nothing the wiring, which imports every world."""
    if importer == "wiring":
        return True
    if imported == "wiring":
        return False
    if imported in SHARED:
        return True
    return importer in WORLDS and imported in WORLDS[importer]


def test_every_module_of_platform_is_in_a_world_or_shared():
    places = {path.stem if path.parent == PACKAGE / "platform" else path.relative_to(PACKAGE / "platform").parts[0]
              for path in (PACKAGE / "platform").rglob("*.py")} - {"__init__"}
    assert places <= set(WORLDS) | SHARED | {"wiring"}, "give the new module its world (or share it) here"


def test_each_world_of_platform_imports_only_what_it_needs():
    broken = {edge: where for edge, where in platform_imports().items() if not may_import(*edge)}
    assert not broken, "imports between the worlds of platform/ the rules forbid: " + "; ".join(
        f"{importer} -> {imported} at {', '.join(where)}" for (importer, imported), where in sorted(broken.items()))


def test_no_import_cycle_between_the_worlds_of_platform():
    assert not cycles(set(platform_imports())), "worlds of platform/ import each other"


def test_platform_imports_no_handler():
    edges = folder_imports()
    assert ("platform", "handlers") not in edges, edges.get(("platform", "handlers"))


@pytest.mark.parametrize(("edge", "allowed"), [
    pytest.param(("kernels", "scheduling"), True, id="a kernel waits on the scheduler's placement"),
    pytest.param(("scheduling", "workloads"), True, id="the launch reads a job's files and environment"),
    pytest.param(("governance", "serving"), True, id="governance reads every world"),
    pytest.param(("kernels", "identity"), True, id="every world asks who is asking"),
    pytest.param(("workloads", "scheduling"), False, id="a submission is stored, never scheduled, by its world"),
    pytest.param(("scheduling", "kernels"), False, id="the tick knows no kernels"),
    pytest.param(("serving", "kernels"), False, id="serving and kernels are apart"),
    pytest.param(("kernels", "governance"), False, id="nothing below governance reads it"),
    pytest.param(("governance", "wiring"), False, id="nothing in platform/ imports the wiring"),
    pytest.param(("identity", "workloads"), False, id="the shared modules import no world"),
    pytest.param(("wiring", "governance"), True, id="the wiring builds every world"),
])
def test_the_world_rules_allow_what_the_worlds_need(edge, allowed):
    assert may_import(*edge) is allowed
