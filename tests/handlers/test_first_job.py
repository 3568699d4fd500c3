"""A newcomer's first job: on this machine alone, a job with the template's defaults runs."""

from __future__ import annotations

import pytest


@pytest.fixture
def hetero_config(hetero_config):
    hetero_config["emulated_nodes_file"] = ""  # the embedded default: this machine is the inventory
    return hetero_config


async def test_a_default_data_preprocessing_job_runs_on_this_machine(api, wait_for):
    (machine,) = await api("nodes")
    template = await api("templates/data-preprocessing")
    request = template["request"]
    assert request["cpu_milli"] <= machine["cpu_milli"] // 2
    assert request["memory_mib"] <= machine["memory_mib"] // 2
    job = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing",
                                          "command": ["python", "-c", "print('first job')"]})
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"))
    assert done["state"] == "succeeded", done
    assert "first job" in await api.text(f"workloads/{job['id']}/logs")
