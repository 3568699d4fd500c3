"""Package metadata: what jupyter_hetero imports is declared, and nothing is declared for nothing."""

from __future__ import annotations

import ast
import json
import re
import sys

import pytest

from .conftest import REPO

tomllib = pytest.importorskip("tomllib")

# Import names whose distribution is spelt otherwise.
_DISTRIBUTION = {"yaml": "pyyaml", "IPython": "ipython", "pynvml": "nvidia-ml-py", "kubespawner": "jupyterhub-kubespawner"}
# Declared without being imported: the kernel that the shipped kernelspecs run.
_RUN_NOT_IMPORTED = {"ipykernel"}


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imported() -> set[str]:
    found = set()
    for path in (REPO / "jupyter_hetero").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "jupyter_hetero":
                    found.add(_DISTRIBUTION.get(top, top).lower().replace("_", "-"))
    return found


def test_every_import_is_declared_and_every_dependency_imported():
    project = _project()
    required = {_name(r) for r in project["dependencies"]}
    optional = {_name(r) for extra, reqs in project["optional-dependencies"].items() if extra != "test" for r in reqs}
    imported = _imported()
    assert imported - required - optional == set()
    assert required - imported - _RUN_NOT_IMPORTED == set()


def test_the_postgresql_driver_is_an_extra_that_the_tests_install_too():
    # SQLAlchemy imports it for a postgresql+psycopg:// URL, so no import names it.
    extras = _project()["optional-dependencies"]
    assert "psycopg[binary]>=3.1" in extras["postgres"]
    assert "psycopg[binary]>=3.1" in extras["test"]


def test_the_jupyterlab_floor_is_the_one_the_extension_is_built_against():
    package = json.loads((REPO / "labextension" / "package.json").read_text(encoding="utf-8"))
    built_against = package["dependencies"]["@jupyterlab/application"].lstrip("^~")
    for extra in ("test", "lab"):
        lab = next(r for r in _project()["optional-dependencies"][extra] if _name(r) == "jupyterlab")
        assert f">={built_against}," in lab, f"the {extra} extra asks for {lab}; the extension needs {built_against}"


def test_the_licence_is_shipped_and_declared():
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("BSD 3-Clause License")
    assert _project()["license"] == "BSD-3-Clause"
    package = json.loads((REPO / "labextension" / "package.json").read_text(encoding="utf-8"))
    assert package["license"] == "BSD-3-Clause"
