"""Kernelspecs per template: one launcher entry for every template that runs kernels, no flavor pinned.

    jupyter hetero kernelspecs install [--user | --prefix PREFIX] [--catalog FILE]

Each kernelspec names the hetero provisioner with its template and no flavor, so JupyterLab's
launcher offers "Python 3 (Fine-tuning)" and the engine picks the flavor when the kernel starts,
among the template's flavors in order, wherever there is room. A kernelspec of your own pins one
with ``"parameters": {"flavor": ...}`` in its provisioner config, as ``POST /hetero/api/v1/kernels``
does with ``parameters.flavor``.

The ``kernels/`` folders shipped with the package are :func:`shipped_kernelspecs` of the default
catalog; ``write_kernelspecs(shipped_kernelspecs(load_catalog(DEFAULT_CATALOG_PATH)), "kernels")`` writes
them again.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager

from ..catalog import Catalog

__all__ = ["GENERIC_KERNELSPEC", "install_kernelspecs", "kernelspec_for", "shipped_kernelspecs", "write_kernelspecs"]

# The kernelspec whose provisioner takes the template and parameters at launch.
GENERIC_KERNELSPEC = "hetero-python3"
# Names shipped before kernelspecs followed templates, kept so notebooks that name them still open;
# neither pins a flavor any more (hetero-gpu used to pin a100-80g).
_ALIASES = {
    "hetero-cpu": ("Python 3 (hetero CPU)", {}),
    "hetero-gpu": ("Python 3 (hetero GPU, any flavor)", {"devices": 1}),
}


def kernelspec_for(template, wait_timeout: float = 60, *, parameters: dict[str, Any] | None = None,
                   display_name: str | None = None) -> dict:
    """The kernel.json of one template (its default request, its idle timeout), ``parameters`` on top."""
    config: dict[str, Any] = {"template": template.name, "wait_timeout": wait_timeout}
    if parameters:
        config["parameters"] = dict(parameters)
    return {
        "argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": display_name or f"Python 3 ({template.display.en})",
        "language": "python",
        "metadata": {
            "debugger": True,
            "cull_idle_timeout": template.idle_timeout_s,
            "hetero": {"template": template.name, "display": template.display.model_dump()},
            "kernel_provisioner": {"provisioner_name": "hetero-provisioner", "config": config},
        },
    }


def _template_kernelspecs(catalog: Catalog) -> dict[str, dict]:
    return {f"hetero-{t.name}": kernelspec_for(t) for t in catalog.templates if t.interactive}


def shipped_kernelspecs(catalog: Catalog) -> dict[str, dict]:
    """The package's own kernelspecs by name: one per template, the generic one and the old names."""
    specs = _template_kernelspecs(catalog)
    interactive = catalog.template("interactive")
    if interactive is not None:
        specs[GENERIC_KERNELSPEC] = kernelspec_for(interactive, display_name="Python 3 (hetero: choose at launch)")
        for name, (display_name, parameters) in _ALIASES.items():
            specs[name] = kernelspec_for(interactive, parameters=parameters, display_name=display_name)
    return dict(sorted(specs.items()))


def write_kernelspecs(specs: dict[str, dict], directory: str | Path) -> list[Path]:
    """Write each spec as ``directory/<name>/kernel.json``; returns the folders."""
    folders = []
    for name, spec in specs.items():
        folder = Path(directory) / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "kernel.json").write_text(json.dumps(spec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        folders.append(folder)
    return folders


def install_kernelspecs(catalog: Catalog, *, user: bool = False, prefix: str | None = None) -> list[str]:
    """Install ``hetero-<template>`` for every template that runs kernels; returns where they went."""
    manager = KernelSpecManager()
    installed = []
    with tempfile.TemporaryDirectory() as tmp:
        for folder in write_kernelspecs(_template_kernelspecs(catalog), tmp):
            installed.append(manager.install_kernel_spec(str(folder), folder.name, user=user,
                                                         prefix=prefix if not user else None, replace=True))
    return installed


def main_install(args) -> int:
    from ..catalog import CatalogError, load_catalog  # noqa: PLC0415

    try:
        catalog = load_catalog(args.catalog)
    except CatalogError as exc:
        print(exc, file=sys.stderr)
        return 1
    prefix = args.prefix or (None if args.user else sys.prefix)
    for path in install_kernelspecs(catalog, user=args.user, prefix=prefix):
        print(f"installed {path}")
    return 0
