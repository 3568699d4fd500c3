"""The server's engine places with the product scorer: a whole-GPU job, submitted through the REST
API to emulated nodes, goes where it leaves the least fragmentation for the catalog's templates."""

from __future__ import annotations

import pytest


def a100(name: str, cores: int, gpus: int) -> dict:
    return {
        "name": name, "cpu": cores, "memory": "512Gi",
        "accelerator": {"vendor": "nvidia", "model": "A100-SXM4-80GB", "count": gpus, "memory_mib": "80Gi",
                        "driver_version": "550.54.15", "runtime": "cuda 12.4", "interconnect": "nvlink",
                        "sharing": "milli", "frameworks": ["pytorch", "transformers", "peft"]},
    }


@pytest.fixture
def two_a100_nodes(hetero_config):
    # a-small would be first by name and by fewest free GPUs; a fine-tuning job there leaves its last
    # GPU behind 4 free cores, where none of the templates that use an A100 fits.
    hetero_config.pop("emulated_nodes_file")
    hetero_config["discover_local"] = False
    hetero_config["emulated_nodes"] = [a100("a-small", 12, 2), a100("b-big", 64, 4)]


async def test_a_whole_gpu_job_goes_where_it_fragments_least(two_a100_nodes, api, wait_for):
    body = {"kind": "job", "template": "fine-tuning", "command": ["python", "-c", "pass"]}
    created = await api("workloads", "POST", body)
    started = await wait_for(created["id"], lambda w: bool(w.get("attempts")))
    assert started["attempts"][0]["node"] == "b-big"
