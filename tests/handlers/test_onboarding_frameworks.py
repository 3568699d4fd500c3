"""A variant's frameworks are checked where the variant runs, through a real server on the local backend: in the
environment the catalog names for it (here a real interpreter whose path holds a fake ``torch`` 2.4.0, imported for
real), or else in the server's own environment, which the evidence says; what cannot be checked here is skipped
with what it needs, not failed. On Kubernetes the check is a pod in the variant's image (built here by value)."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy
import pytest
import yaml

from jupyter_hetero.backends.kubernetes.config import KubernetesConfig
from jupyter_hetero.backends.kubernetes.factory import PodFactory
from jupyter_hetero.backends.local.discovery import load_emulated_nodes
from jupyter_hetero.catalog import parse_catalog
from jupyter_hetero.platform.governance.onboarding_runs import probe_launch
from jupyter_hetero.platform.governance.onboarding_frameworks import framework_probe, judge

from ..builders import TOKENS, team_catalog
from ..conftest import DEMO_NODES

IMAGE = "registry.example/pytorch:24.10"


def fake_environment(root: Path, version: str = "2.4.0") -> Path:
    """A directory standing for a second environment: ``bin/python`` execs this interpreter with a path entry that
    holds a ``torch`` package of ``version`` (the server's own environment has none, or another)."""
    package = root / "site" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"__version__ = {version!r}\n", encoding="utf-8")
    python = root / "bin" / "python"
    python.parent.mkdir()
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{root / "site"}" exec "{sys.executable}" "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    return python


@pytest.fixture
def environment():
    """A fake environment where the local backend's sandbox shows it: it hides /tmp, as it hides homes."""
    root = Path(tempfile.mkdtemp(prefix="hetero-env-", dir="/var/tmp"))
    yield fake_environment(root / "torch-env")
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def variants(tmp_path, environment, hetero_config, server_config):
    """The team catalog: training's NVIDIA variant runs in a fake environment with torch 2.4.0, fine-tuning's asks
    that environment for torch>=2.5, training's AMD variant has no node here, embedding's CPU variant names no
    environment (numpy and yaml, which the server has) and its NVIDIA variant asks the server for torch."""
    python = str(environment)
    path = Path(team_catalog(tmp_path, templates={
        "training": {"flavors": ["a100-80g", "amd-mi300"], "variants": [
            {"family": "nvidia", "image": IMAGE, "frameworks": ["pytorch", "torch>=2.3"], "python": python},
            {"family": "amd", "image": "rocm/pytorch:latest", "frameworks": ["pytorch"]}]},
        "fine-tuning": {"flavors": ["a100-80g"], "variants": [{"family": "nvidia", "image": IMAGE, "frameworks": ["torch>=2.5"],
                                      "python": python}]},
        "embedding": {"flavors": ["t4", "cpu-standard"], "variants": [
            {"family": "cpu", "image": "quay.io/jupyter/scipy-notebook:2024-10-07", "frameworks": ["numpy", "yaml"]},
            {"family": "nvidia", "image": IMAGE, "frameworks": ["pytorch"]}]}}))
    hetero_config.update(catalog_file=str(path), owner_is_platform_admin=False)
    server_config["ServerApp"] = {"identity_provider_class": "jupyter_hetero.auth.TeamIdentityProvider"}
    server_config["TeamIdentityProvider"] = {"user_tokens": TOKENS}
    return python


def _step(record: dict, name: str) -> dict:
    return next(step for step in record["steps"] if step["name"] == name)


async def test_the_variants_environment_is_where_its_frameworks_are_imported(variants, api):
    server_torch = importlib.util.find_spec("torch")
    training = await api("onboarding/frameworks/training/nvidia", "POST", {}, as_user="root")
    assert training["state"] == "accepted", training["steps"]
    imports = _step(training, "imports")
    assert imports["status"] == "passed" and imports["ok"] is True
    # The version comes from the variant's environment, not from the server's (which has no torch, or its own).
    assert imports["evidence"] == f"in the environment of {variants}: torch 2.4.0", imports
    assert server_torch is None or "2.4.0" not in importlib.import_module("torch").__version__
    assert f"environment {variants}" in _step(training, "variant")["evidence"]

    # The same environment does not meet torch>=2.5: that is a failure where the variant runs.
    tuning = await api("onboarding/frameworks/fine-tuning/nvidia", "POST", {}, as_user="root")
    assert (tuning["state"], tuning["failed_step"]) == ("rejected", "imports"), tuning
    assert _step(tuning, "imports")["status"] == "failed"
    assert "torch 2.4.0 does not meet torch>=2.5" in _step(tuning, "imports")["evidence"]


async def test_without_an_environment_the_server_stands_in_and_says_so(variants, api):
    cpu = await api("onboarding/frameworks/embedding/cpu", "POST", {}, as_user="root")
    assert cpu["state"] == "accepted", cpu
    evidence = _step(cpu, "imports")["evidence"]
    assert evidence.startswith("ran in the server's environment: the catalog names no environment for variant "
                               "embedding/cpu"), evidence
    assert f"numpy {numpy.__version__}, yaml {yaml.__version__}" in evidence

    if importlib.util.find_spec("torch") is not None:
        pytest.skip("the server's environment has torch: nothing to skip")
    nvidia = await api("onboarding/frameworks/embedding/nvidia", "POST", {}, as_user="root")
    # The server's environment is not the variant's: lacking torch there is no failure of the variant.
    assert (nvidia["state"], nvidia["failed_step"]) == ("accepted", None), nvidia
    imports = _step(nvidia, "imports")
    assert imports["status"] == "skipped" and imports["ok"] is True
    assert imports["evidence"].startswith("skipped: needs the variant's environment to import torch: ran in the "
                                          "server's environment: the catalog names no environment for variant "
                                          "embedding/nvidia"), imports


async def test_a_variant_with_no_node_of_its_family_here_is_skipped_with_what_it_needs(variants, api):
    amd = await api("onboarding/frameworks/training/amd", "POST", {}, as_user="root")
    assert amd["state"] == "accepted", amd
    assert [(s["name"], s["status"]) for s in amd["steps"]] == [
        ("variant", "passed"), ("node", "skipped"), ("imports", "skipped")]
    assert _step(amd, "node")["evidence"] == "skipped: needs a ready amd node: the inventory has none"


def test_on_kubernetes_the_check_is_a_pod_in_the_variants_image(tmp_path):
    """The pod the Kubernetes backend would create for the check: the variant's image, ``python -c`` the probe,
    bound to the node; its verdict read from what the probe prints."""
    catalog = parse_catalog(Path(team_catalog(tmp_path, templates={"training": {"flavors": ["a100-80g"], "variants": [
        {"family": "nvidia", "image": IMAGE, "frameworks": ["pytorch", "torch>=2.3"],
         "python": "/opt/envs/torch/bin/python"}]}})).read_text(encoding="utf-8"))
    template = catalog.template("training")
    probe = framework_probe(template, template.variants[0], runs_here=False)
    assert (probe.where, probe.python, probe.place) == ("image", None, f"in image {IMAGE}")
    a100 = next(c for c in load_emulated_nodes(DEMO_NODES) if c.name == "gpu-a100-0")
    view = SimpleNamespace(name=a100.name, capability=a100, flavor="a100-80g")
    launch = probe_launch(view, run=1796655000, folder=tmp_path, code=probe.code, image=probe.image,
                          python=probe.python, runs_here=False)
    pod, service = PodFactory(KubernetesConfig(), work_dir=str(tmp_path)).job_objects(launch)
    container = pod.spec.containers[0]
    assert service is None and container.image == IMAGE
    command = container.command + (container.args or [])
    assert command[-3:] == ["python", "-c", probe.code] and container.resources.limits["nvidia.com/gpu"] == "1"
    terms = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert "gpu-a100-0" in str(terms)

    # What such a pod prints, judged: the image is named, and a missing framework there is a failure, not a skip.
    out = 'hetero-versions {"found": {"torch": "2.4.0"}, "missing": {}}'
    assert judge(probe, 0, out) == ("passed", f"in image {IMAGE}: torch 2.4.0")
    out = 'hetero-versions {"found": {}, "missing": {"torch": "ModuleNotFoundError: No module named \'torch\'"}}'
    status, evidence = judge(probe, 0, out)
    assert status == "failed" and evidence.startswith(f"in image {IMAGE}: cannot import torch")
    assert judge(probe, None, "still running after 300 s: killed")[0] == "failed"


# -- tenants: the default tenant is its owner's; a tenant that names no one cannot be tried ------------------------


async def test_the_default_tenant_is_onboarded_as_the_servers_owner(api):
    """The shipped catalog's default tenant names no one: it is the server's owner's, who may submit there."""
    tenant = await api("onboarding/tenants/default", "POST", {})
    assert (tenant["state"], tenant["failed_step"]) == ("accepted", None), tenant["steps"]
    assert _step(tenant, "member-submits")["evidence"].startswith("the server's owner submitting ")
    assert _step(tenant, "non-member-refused")["evidence"].endswith(")") and \
        "refused" in _step(tenant, "non-member-refused")["evidence"]


@pytest.fixture
def nameless_tenant(tmp_path, hetero_config, server_config):
    path = Path(team_catalog(tmp_path))
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["tenants"].append({"name": "ghost", "display": {"en": "Ghost", "zh": "幽灵"}, "cost_centre": "CC-9",
                            "quotas": {"cpu-standard": {"nominal": {"cpu": 4, "memory": "8Gi"}}}})
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    hetero_config.update(catalog_file=str(path), owner_is_platform_admin=False)
    server_config["ServerApp"] = {"identity_provider_class": "jupyter_hetero.auth.TeamIdentityProvider"}
    server_config["TeamIdentityProvider"] = {"user_tokens": TOKENS}


async def test_a_tenant_that_names_no_member_skips_the_member_check(nameless_tenant, api):
    ghost = await api("onboarding/tenants/ghost", "POST", {}, as_user="root")
    assert [(s["name"], s["status"]) for s in ghost["steps"]] == [
        ("quota", "passed"), ("permissions", "passed"), ("member-submits", "skipped"), ("non-member-refused", "passed")]
    assert _step(ghost, "member-submits")["evidence"] == \
        "skipped: needs a member to submit as: the tenant names no user or group"
    assert ghost["state"] == "accepted"


async def onboard_by_cli(port: int, base_url: str, *args: str) -> tuple[int, str]:
    """``jupyter hetero onboard ...`` as its own process, off the event loop, which serves its requests."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jupyter_hetero.cli", "onboard", *args, "--url", f"http://127.0.0.1:{port}{base_url}",
        "--token", "root-token", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    return process.returncode, out.decode() + err.decode()


async def test_the_cli_prints_a_skipped_step_as_skipped_not_failed(variants, api, jp_http_port, jp_base_url):
    code, out = await onboard_by_cli(jp_http_port, jp_base_url, "framework", "training/amd")
    assert code == 0, out
    assert out.splitlines() == [
        "framework training/amd: accepted (2 step(s) skipped: they cannot run here)",
        "  ok   variant: image rocm/pytorch:latest, frameworks pytorch, driver >= any, runtime >= any",
        "  SKIP node: skipped: needs a ready amd node: the inventory has none",
        "  SKIP imports: skipped: needs a ready amd node to import on"]
    code, out = await onboard_by_cli(jp_http_port, jp_base_url, "framework", "fine-tuning/nvidia")
    assert code == 1 and "  FAIL imports: in the environment of " in out, out


async def test_the_demo_passes_its_own_onboarding(api):
    """The shipped catalog and the demo's emulated nodes, as ``make demo`` starts them: every node, chip, template
    variant and tenant is accepted here; what cannot run on this machine is skipped, with what it needs."""
    from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog

    catalog = load_catalog(DEFAULT_CATALOG_PATH)
    nodes = await api("nodes")
    paths = [f"nodes/{n['name']}" for n in nodes]
    paths += sorted({f"chips/{n['accelerator']['model']}" for n in nodes if n.get("accelerator")})
    paths += [f"frameworks/{t.name}/{v.family.value}" for t in catalog.templates for v in t.variants]
    paths += [f"tenants/{t.name}" for t in catalog.tenants]
    records = [await api(f"onboarding/{path}", "POST", {}) for path in paths]
    assert [(r["kind"], r["name"], r["failed_step"]) for r in records if r["state"] != "accepted"] == []
    skipped = [s for r in records for s in r["steps"] if s["status"] == "skipped"]
    assert all(s["evidence"].startswith("skipped: needs ") for s in skipped)
    assert not [a for a in await api("alerts", state="firing") if a["rule"] == "onboarding-failed"]
