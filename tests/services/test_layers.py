"""What lies below the handlers speaks no HTTP, and the top-level modules the services use do not use them back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import jupyter_hetero

PACKAGE = Path(jupyter_hetero.__file__).parent
# Below the handlers: HTTP errors are the handlers' to raise; these raise the project's own (errors.py).
BELOW_HANDLERS = ("services", "engine", "store", "backends", "catalog")


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved against its own package."""
    package = ["jupyter_hetero", *path.parent.relative_to(PACKAGE).parts]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)  # `from tornado import web`
    return names


def _reaches(path: Path, module: str) -> bool:
    return any(name == module or name.startswith(module + ".") for name in imported_modules(path))


def test_imported_modules_resolves_relative_imports_from_any_package():
    platform = imported_modules(PACKAGE / "services" / "platform.py")
    assert {"jupyter_hetero.auth.WorkloadUser", "jupyter_hetero.services.credentials"} <= platform  # `..`, `.`
    assert "jupyter_hetero.credential_format" in imported_modules(PACKAGE / "auth.py")


@pytest.mark.parametrize("path", sorted(p for layer in BELOW_HANDLERS for p in (PACKAGE / layer).rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_below_the_handlers_uses_tornado_web(path):
    assert not _reaches(path, "tornado.web"), f"{path.relative_to(PACKAGE)} uses tornado.web: raise an errors.py error"


def test_auth_imports_nothing_of_the_services():
    # services/platform.py imports auth.py: auth.py importing services/ back made the two a cycle.
    assert not _reaches(PACKAGE / "auth.py", "jupyter_hetero.services")
