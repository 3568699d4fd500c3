"""Onboarding through a real server, with ``onboarding.nodes: required`` and the demo's nodes not pre-accepted: each
node runs its checklist (a real sample job and a real failing job on it); the T4 node, whose driver is below the
catalog's minimum, is rejected and takes no work; after the minimum changes and the catalog is reloaded it
passes and the waiting job runs there. A tenant's onboarding shows a member allowed and a non-member refused; a
chip model's and a template variant's frameworks are onboarded with their evidence."""

from __future__ import annotations

import importlib.util
import re
import sys

import numpy
import pytest
import yaml

from jupyter_hetero.api.openapi import build_document

from ..harness import until_async
from .test_api_schema import check


async def _alerts(api, rule: str, state: str = "firing") -> list[dict]:
    return [a for a in await api("alerts", as_user="root", state=state) if a["rule"] == rule]


def write_catalog(path, minimum: str) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["onboarding"] = {"nodes": "required", "accept_emulated": False, "min_driver": {"nvidia": minimum},
                          "sample_timeout_s": 60}
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


@pytest.fixture
def onboarding_required(tmp_path, hetero_config, server_config):
    """The team catalog, batch inference on T4s only, every node to be onboarded (list it before ``api``)."""
    from pathlib import Path

    from ..builders import TOKENS, team_catalog

    path = Path(team_catalog(tmp_path, templates={"batch-inference": {"flavors": ["t4"]}}))
    write_catalog(path, "540")  # the demo's A100 node has 550.54.15, its T4 node 535.161.08
    hetero_config.update(catalog_file=str(path), owner_is_platform_admin=False, alert_interval=0.2)
    server_config["ServerApp"] = {"identity_provider_class": "jupyter_hetero.auth.TeamIdentityProvider"}
    server_config["TeamIdentityProvider"] = {"user_tokens": TOKENS}
    return path


async def test_a_node_below_the_driver_minimum_gets_no_work_until_the_minimum_changes(
        onboarding_required, api, api_error, wait_for, jp_serverapp):
    jp_serverapp.web_app.settings["hetero_platform"].loop.start()  # as the server's start does (tests start it lazily)
    async def record(name: str, states: tuple[str, ...]) -> dict | None:
        found = {(r["kind"], r["name"]): r for r in await api("onboarding", as_user="root")}
        entry = found.get(("node", name))
        return entry if entry and entry["state"] in states else None

    a100 = await until_async(lambda: record("gpu-a100-0", ("accepted", "rejected")), "the A100 node's checklist",
                             timeout=90)
    assert a100["state"] == "accepted", a100
    assert [step["name"] for step in a100["steps"]] == ["capability", "driver", "sample", "fault", "metrics"]
    steps = {step["name"]: step for step in a100["steps"]}
    assert "driver 550.54.15 >= 540" == steps["driver"]["evidence"]
    assert "hetero-sample matmul (256, 256)" in steps["sample"]["evidence"]
    assert "CUDA_VISIBLE_DEVICES 0" in steps["sample"]["evidence"]  # it ran with the node's device variables
    assert steps["fault"]["evidence"].startswith("a job that exits 3 was seen as a failure with exit code 3")
    check(build_document(), "/onboarding", "get", 200, [a100])

    t4 = await until_async(lambda: record("gpu-t4-0", ("accepted", "rejected")), "the T4 node's checklist", timeout=90)
    assert (t4["state"], t4["failed_step"]) == ("rejected", "driver"), t4
    assert t4["steps"][-1]["evidence"] == "driver 535.161.08 is below the catalog's minimum 540"
    nodes = {node["name"]: node for node in await api("nodes", as_user="root")}
    assert (nodes["gpu-t4-0"]["state"], nodes["gpu-t4-0"]["schedulable"]) == ("onboarding", False)
    # An alert says so, and the metrics carry each checklist's state.
    [alert] = await until_async(lambda: _alerts(api, "onboarding-failed"), "the onboarding-failed alert", timeout=30)
    assert (alert["subject"], alert["message"]) == (
        "node/gpu-t4-0", "node gpu-t4-0 failed onboarding at step driver: driver 535.161.08 is below the catalog's "
                         "minimum 540")
    assert nodes["gpu-a100-0"]["state"] == "ready"

    # Batch inference runs on T4s only here: it waits, for onboarding.
    job = await api("workloads", "POST", {"kind": "job", "template": "batch-inference",
                                          "command": [sys.executable, "-c", "print('on', __import__('os').environ"
                                                                            "['HETERO_NODE'])"]}, as_user="alice")
    waiting = await wait_for(job["id"], lambda w: w["state"] in ("queued", "inadmissible") and w.get("blockers"),
                             as_user="alice")
    assert any("still onboarding" in blocker["message"] for blocker in waiting["blockers"]), waiting["blockers"]

    # The platform team lowers the minimum in the file: the server sees the change and verifies the T4 again.
    # (Each version of the file has a size of its own: a file system may keep times to the second only.)
    write_catalog(onboarding_required, "530.1")
    t4 = await until_async(lambda: record("gpu-t4-0", ("accepted",)), "the T4 node accepted after the change",
                           timeout=90)
    assert dict((s["name"], s["ok"]) for s in t4["steps"]) == dict.fromkeys(
        ("capability", "driver", "sample", "fault", "metrics"), True)
    done = await wait_for(job["id"], lambda w: w["state"] == "succeeded", as_user="alice", timeout=90)
    assert done["attempts"][0]["node"] == "gpu-t4-0"
    await until_async(lambda: _alerts(api, "onboarding-failed", "resolved"), "the alert to resolve", timeout=30)

    # Raised above the A100 node's driver, the minimum invalidates its admission: it is verified again, refused.
    write_catalog(onboarding_required, "560.00")
    a100 = await until_async(lambda: record("gpu-a100-0", ("rejected",)), "the A100 node refused by the new minimum",
                             timeout=90)
    assert a100["steps"][-1]["evidence"] == "driver 550.54.15 is below the catalog's minimum 560.00"
    nodes = {node["name"]: node for node in await api("nodes", as_user="root")}
    assert nodes["gpu-a100-0"]["state"] == "onboarding"
    write_catalog(onboarding_required, "530")
    await until_async(lambda: record("gpu-a100-0", ("accepted",)), "the A100 node accepted again", timeout=90)

    applied = await api("audit", as_user="root", action="catalog.applied")
    assert applied["entries"][-1]["detail"] == {"applied": ["onboarding"], "because": "the file changed"}
    # The same by hand: nothing changed since, so nothing is applied; a member may not.
    reloaded = await api("catalog/reload", "POST", {}, as_user="root")
    check(build_document(), "/catalog/reload", "post", 200, reloaded)
    assert (reloaded["applied"], reloaded["changes"]) == ([], []) and "onboarding" in reloaded["unchanged"], reloaded
    status, error = await api_error("catalog/reload", "POST", {}, as_user="alice")
    assert status == 403, error
    onboarding_required.write_text("flavors: [", encoding="utf-8")
    status, error = await api_error("catalog/reload", "POST", {}, as_user="root")
    assert (status, error["field"]) == (400, "catalog") and "nothing was changed" in error["message"], error
    status, error = await api_error("onboarding/nodes/gpu-a100-0", "POST", {}, as_user="carol")
    assert status == 403 and "platform-admin" in error["message"], error
    status, error = await api_error("onboarding/nodes/no-such-node", "POST", {}, as_user="root")
    assert status == 404, error


async def test_a_tenants_onboarding_shows_a_member_allowed_and_a_non_member_refused(onboarding_required, api,
                                                                                      api_error):
    vision = await api("onboarding/tenants/vision", "POST", {}, as_user="root")
    assert vision["state"] == "accepted", vision
    steps = {step["name"]: step for step in vision["steps"]}
    assert list(steps) == ["quota", "permissions", "member-submits", "non-member-refused"]
    assert steps["member-submits"]["evidence"].startswith("alice submitting ") and \
        steps["member-submits"]["evidence"].endswith(": allowed")
    assert "onboarding-outsider-of-vision submitting" in steps["non-member-refused"]["evidence"]
    assert ": refused (" in steps["non-member-refused"]["evidence"]
    nlp = await api("onboarding/tenants/nlp", "POST", {}, as_user="root")  # its members come by group
    assert nlp["state"] == "accepted" and nlp["steps"][2]["evidence"].startswith("onboarding-member-of-nlp"), nlp
    status, error = await api_error("onboarding/tenants/nobody", "POST", {}, as_user="root")
    assert (status, error["field"]) == (404, "name"), error
    status, _error = await api_error("onboarding/tenants/vision", "POST", {}, as_user="alice")
    assert status == 403
    audit = await api("audit", as_user="root", action="onboarding.")
    assert {e["actor"] for e in audit["entries"]} >= {"root", "alice"}


@pytest.mark.usefixtures("team")
@pytest.mark.team(templates={"data-preprocessing": {"variants": [
    {"family": "cpu", "image": "quay.io/jupyter/scipy-notebook:2024-10-07", "frameworks": ["numpy", "yaml"]}]}})
async def test_a_chip_model_and_a_template_variants_frameworks_are_onboarded_with_evidence(api, api_error):
    nodes = {n["name"]: n for n in await api("nodes", as_user="root")}
    model = nodes["gpu-a100-0"]["accelerator"]["model"]
    chip = await api(f"onboarding/chips/{model}", "POST", {}, as_user="root")
    assert chip["state"] == "accepted", chip
    assert [s["name"] for s in chip["steps"]] == ["nodes", "facts", "flavor", "onboarded"]
    assert "flavors a100-80g" == chip["steps"][2]["evidence"]
    status, error = await api_error("onboarding/chips/TPU-v9", "POST", {}, as_user="root")
    assert (status, error["field"]) == (404, "name"), error

    # The variant's frameworks are imported on a CPU node: the catalog names no environment for the variant, so
    # this server's stands in, which has them, and the evidence says so.
    cpu = await api("onboarding/frameworks/data-preprocessing/cpu", "POST", {}, as_user="root")
    assert cpu["state"] == "accepted", cpu
    assert cpu["steps"][2]["evidence"].startswith("ran in the server's environment: the catalog names no "
                                                  "environment for variant data-preprocessing/cpu")
    assert f": numpy {numpy.__version__}, yaml " in cpu["steps"][2]["evidence"]
    # Training's NVIDIA variant wants PyTorch, DeepSpeed and Megatron: where the server's environment lacks them,
    # the check cannot run here (skipped: it needs the variant's environment), which fails nothing.
    nvidia = await api("onboarding/frameworks/training/nvidia", "POST", {}, as_user="root")
    importable = all(importlib.util.find_spec(name) for name in ("torch", "deepspeed", "megatron"))
    assert nvidia["state"] == "accepted", nvidia
    assert nvidia["steps"][2]["status"] == ("passed" if importable else "skipped"), nvidia
    if not importable:
        assert nvidia["steps"][2]["evidence"].startswith("skipped: needs the variant's environment to import ")
    status, error = await api_error("onboarding/frameworks/training/tpu", "POST", {}, as_user="root")
    assert status == 404, error
    status, _error = await api_error("onboarding/frameworks/training/nvidia", "POST", {}, as_user="alice")
    assert status == 403
    listed = {(r["kind"], r["name"]) for r in await api("onboarding", as_user="root")}
    assert {("chip", model), ("framework", "data-preprocessing/cpu"), ("framework", "training/nvidia")} <= listed


MODELS = [
    {"name": "doubler", "code": "def predict(x):\n    return [2 * v for v in x]", "inputs": [[1, 2], [3.5]],
     "expected": [[2, 4], [7.0]], "tolerance": 1e-9, "max_latency_ms": 50, "max_memory_mib": 2048},
    {"name": "drifting", "code": "def predict(x):\n    return [2.1 * v for v in x]", "inputs": [[1, 3]],
     "expected": [[2, 6]], "tolerance": 0.01},
    {"name": "slow", "code": "import time\ndef predict(x):\n    time.sleep(0.02)\n    return x", "inputs": [[1]],
     "expected": [[1]], "max_latency_ms": 5, "repeats": 5},
]


@pytest.fixture
def with_models(tmp_path, hetero_config, server_config):
    """The team catalog with three models to onboard (list it before ``api``)."""
    from pathlib import Path

    from ..builders import TOKENS, team_catalog

    path = Path(team_catalog(tmp_path))
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["models"] = MODELS
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    hetero_config.update(catalog_file=str(path), owner_is_platform_admin=False)
    server_config["ServerApp"] = {"identity_provider_class": "jupyter_hetero.auth.TeamIdentityProvider"}
    server_config["TeamIdentityProvider"] = {"user_tokens": TOKENS}


async def test_a_model_is_onboarded_against_its_reference_outputs_latency_and_memory(with_models, api, api_error):
    doubler = await api("onboarding/models/doubler", "POST", {}, as_user="root")
    assert doubler["state"] == "accepted", doubler
    steps = {step["name"]: step["evidence"] for step in doubler["steps"]}
    assert list(steps) == ["node", "run", "outputs", "latency", "memory"]
    assert steps["outputs"] == "largest difference from the reference 0 (tolerance 1e-09)"
    assert re.fullmatch(r"p95 latency \d+\.\d{3} ms \(at most 50 ms\)", steps["latency"]), steps["latency"]
    assert re.fullmatch(r"peak memory \d+\.\d MiB \(at most 2048 MiB\)", steps["memory"]), steps["memory"]

    drifting = await api("onboarding/models/drifting", "POST", {}, as_user="root")
    assert (drifting["state"], drifting["failed_step"]) == ("rejected", "outputs"), drifting
    assert drifting["steps"][-1]["evidence"] == "largest difference from the reference 0.3 (tolerance 0.01)"
    slow = await api("onboarding/models/slow", "POST", {}, as_user="root")
    assert (slow["state"], slow["failed_step"]) == ("rejected", "latency"), slow
    status, error = await api_error("onboarding/models/unknown", "POST", {}, as_user="root")
    assert (status, error["field"]) == (404, "name"), error
    status, _error = await api_error("onboarding/models/doubler", "POST", {}, as_user="carol")
    assert status == 403
