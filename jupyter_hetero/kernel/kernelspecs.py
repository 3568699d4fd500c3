"""Kernelspecs per template: one launcher entry for every template that runs kernels.

    jupyter hetero kernelspecs install [--user | --prefix PREFIX] [--catalog FILE]

Each kernelspec names the hetero provisioner with its template, so JupyterLab's launcher offers
"Python 3 (Fine-tuning)" and the kernel starts where the scheduler places it.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager

from ..catalog import Catalog

__all__ = ["install_kernelspecs", "kernelspec_for"]


def kernelspec_for(template, wait_timeout: float = 60) -> dict:
    """The kernel.json of one template (its default request, its idle timeout)."""
    return {
        "argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python 3 ({template.display.en})",
        "language": "python",
        "metadata": {
            "debugger": True,
            "cull_idle_timeout": template.idle_timeout_s,
            "hetero": {"template": template.name, "display": template.display.model_dump()},
            "kernel_provisioner": {
                "provisioner_name": "hetero-provisioner",
                "config": {"template": template.name, "wait_timeout": wait_timeout},
            },
        },
    }


def install_kernelspecs(catalog: Catalog, *, user: bool = False, prefix: str | None = None) -> list[str]:
    """Install ``hetero-<template>`` for every template that runs kernels; returns where they went."""
    manager = KernelSpecManager()
    installed = []
    for template in catalog.templates:
        if not template.interactive:
            continue
        name = f"hetero-{template.name}"
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / name
            source.mkdir()
            (source / "kernel.json").write_text(json.dumps(kernelspec_for(template), indent=2), encoding="utf-8")
            installed.append(manager.install_kernel_spec(str(source), name, user=user,
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
