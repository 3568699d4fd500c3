"""Matching on declared capabilities through the REST API of a real server: a job whose template asks for an
inference engine in a version range, a framework range and RDMA waits, inadmissible, with the blocker that
names what the nodes lack, in English and Chinese; when a node that has it joins the inventory, it runs there."""

from __future__ import annotations

import pytest
import yaml

from jupyter_hetero.backends.local.discovery import load_emulated_nodes
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH

from ..fakes import JoiningNodes

L40S = {"cpu": 32, "memory": "128Gi", "frameworks": ["torch==2.4.1"], "network": {"rdma": True, "bandwidth_gbps": 100},
        "accelerator": {"vendor": "nvidia", "model": "L40S", "count": 1, "memory_mib": "48Gi",
                        "driver_version": "550.54.15", "runtime": "cuda 12.4", "inference_engines": ["vllm 0.5.4"]}}
NEWER = {**L40S, "name": "gpu-l40s-1", "accelerator": {**L40S["accelerator"], "inference_engines": ["vllm==0.6.3"]}}
SERVE = {"template": "online-inference", "kind": "job", "command": ["python", "-c", "print('served')"]}


@pytest.fixture
def old_engines_only(tmp_path, hetero_config):
    """One L40S node with vLLM 0.5.4; online inference asks for vLLM >= 0.6, torch >= 2.3 and RDMA at 100 Gb/s."""
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    for template in data["templates"]:
        if template["name"] == "online-inference":
            template.update(flavors=["l40s"], inference_engines=["vllm>=0.6"], frameworks=["torch>=2.3"],
                            network={"rdma": True, "min_bandwidth_gbps": 100})
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump({"nodes": [{**L40S, "name": "gpu-l40s-0"}]}), encoding="utf-8")
    hetero_config.update(catalog_file=str(catalog), emulated_nodes_file=str(nodes), discover_local=False,
                         backend_class="tests.fakes.JoiningNodes")
    JoiningNodes._joined = None
    yield nodes
    JoiningNodes._joined = None


async def test_a_job_waits_for_the_inference_engine_it_asks_for_and_runs_when_a_node_has_it(
        old_engines_only, api, wait_for):
    job = await api("workloads", "POST", SERVE)
    waiting = await wait_for(job["id"], lambda w: w["state"] == "inadmissible")
    [blocker] = waiting["blockers"]
    assert blocker["kind"] == "inference-engines"
    assert blocker["message"] == ("inference engines: template needs vllm>=0.6, nodes of flavor l40s provide "
                                  "vllm 0.5.4")
    assert waiting["reason"] == f"no node in the inventory can ever hold it: {blocker['message']}"
    zh = await api(f"workloads/{job['id']}", lang="zh")
    assert [b["message"] for b in zh["blockers"]] == ["推理引擎：模板需要 vllm>=0.6，规格 l40s 的节点提供 vllm 0.5.4"]

    JoiningNodes.join(load_emulated_nodes(old_engines_only) + load_emulated_nodes([NEWER]))
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), timeout=60)
    assert done["state"] == "succeeded" and done["attempts"][0]["node"] == "gpu-l40s-1"
    types = [e["type"] for e in await api(f"workloads/{job['id']}/events")]
    assert types[:4] == ["submitted", "inadmissible", "requeued", "admitted"]
