"""The API benchmark's inputs: the emulated fleet and the catalog it writes are valid and sized as asked."""

from __future__ import annotations

import yaml

from jupyter_hetero.backends.local import load_emulated_nodes
from jupyter_hetero.catalog import load_catalog
from jupyter_hetero.sim.api_load import _catalog, _fleet

from ..conftest import REPO


def test_the_fleet_has_exactly_the_nodes_asked_for_in_every_flavor(tmp_path):
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump(_fleet(103)))
    catalog = load_catalog(_catalog(REPO, tmp_path / "catalog.yaml"))
    nodes = load_emulated_nodes(path)
    assert len(nodes) == 103
    flavors = {catalog.flavor_of(node).name for node in nodes}
    assert {"cpu-standard", "a100-80g", "h100-80g", "t4", "ascend-910b", "amd-mi300"} <= flavors


def test_the_quota_lets_136_of_the_seeded_jobs_run(tmp_path):
    catalog = load_catalog(_catalog(REPO, tmp_path / "catalog.yaml"))
    tenant = catalog.tenant("default")
    cpu_jobs = tenant.quotas["cpu-standard"].nominal.cpu_milli // catalog.template("data-preprocessing").request.cpu_milli
    gpu_jobs = tenant.quotas["a100-80g"].nominal.device_milli // (1000 * catalog.template("training").request.devices)
    assert cpu_jobs + gpu_jobs == 136
