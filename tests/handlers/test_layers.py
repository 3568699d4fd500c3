"""The handlers speak HTTP and call services; the engine and the store are reached only through those."""

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
