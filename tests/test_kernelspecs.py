"""The shipped kernelspecs: one per template that runs kernels, none pinned to a flavor."""

from __future__ import annotations

import json

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.kernel.kernelspecs import GENERIC_KERNELSPEC, shipped_kernelspecs, write_kernelspecs

from .conftest import REPO


def _shipped() -> dict[str, dict]:
    return {p.name: json.loads((p / "kernel.json").read_text(encoding="utf-8")) for p in (REPO / "kernels").iterdir()}


def test_the_shipped_folders_are_the_default_catalogs_kernelspecs():
    catalog = load_catalog(DEFAULT_CATALOG_PATH)
    # If this fails after a catalog change: write_kernelspecs(shipped_kernelspecs(catalog), "kernels").
    assert _shipped() == shipped_kernelspecs(catalog)
    per_template = {f"hetero-{t.name}" for t in catalog.templates if t.interactive}
    assert set(_shipped()) == per_template | {GENERIC_KERNELSPEC, "hetero-cpu", "hetero-gpu"}


def test_no_shipped_kernelspec_pins_a_flavor():
    for name, spec in _shipped().items():
        config = spec["metadata"]["kernel_provisioner"]["config"]
        assert config["template"] and "flavor" not in config.get("parameters", {}), name


def test_the_old_names_stay_as_flavor_free_aliases_of_the_interactive_template():
    specs = _shipped()
    assert specs["hetero-gpu"]["metadata"]["kernel_provisioner"]["config"] == {
        "template": "interactive", "wait_timeout": 60, "parameters": {"devices": 1}}
    assert specs["hetero-cpu"]["metadata"]["kernel_provisioner"]["config"] == {
        "template": "interactive", "wait_timeout": 60}


def test_written_kernelspecs_read_back_as_written(tmp_path):
    specs = shipped_kernelspecs(load_catalog(DEFAULT_CATALOG_PATH))
    write_kernelspecs(specs, tmp_path)
    assert {p.name: json.loads((p / "kernel.json").read_text(encoding="utf-8")) for p in tmp_path.iterdir()} == specs
