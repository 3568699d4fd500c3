"""The `jupyter hetero` command, run as a real subprocess."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest
import yaml

from jupyter_hetero import __version__
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH

from .conftest import DEMO_NODES


def hetero(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jupyter", "hetero", *args], capture_output=True, text=True, timeout=120
    )


def test_version():
    result = hetero("version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"jupyter-hetero {__version__}"


def test_admit_is_now_onboard_and_says_so():
    """One word per concept: "admit" is the scheduler's (a workload may start); onboarding is "onboard"."""
    result = hetero("admit", "node", "cpu-0")
    assert result.returncode == 2
    assert "`jupyter hetero admit` is now `jupyter hetero onboard` (onboard node cpu-0)" in result.stderr
    listed = hetero("--help")
    assert " onboard " in listed.stdout and " admit " not in listed.stdout, listed.stdout


def test_validate_accepts_the_default_catalog():
    result = hetero("catalog", "validate", str(DEFAULT_CATALOG_PATH))
    assert result.returncode == 0, result.stderr
    assert "9 templates, 5 queues" in result.stdout


def test_validate_lists_every_error_and_exits_1(tmp_path):
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    data["templates"][2]["request"]["memory"] = "lots"
    data["queues"][4]["max_wait_s"] = "forever"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    result = hetero("catalog", "validate", str(path))
    assert result.returncode == 1
    assert "2 error(s)" in result.stderr
    assert "templates[2](fine-tuning).request.memory" in result.stderr
    assert "queues[4](batch).max_wait_s" in result.stderr


def test_the_old_onboarding_key_is_an_error_naming_the_new_one(tmp_path):
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    data["onboarding"] = {"nodes": "required", "pre_admit_emulated": False}
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    result = hetero("catalog", "validate", str(path))
    assert result.returncode == 1
    assert "onboarding" in result.stderr and "pre_admit_emulated is now accept_emulated: write 'accept_emulated: " \
        "false' instead" in result.stderr, result.stderr
    data["onboarding"] = {"nodes": "required", "accept_emulated": False}
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert hetero("catalog", "validate", str(path)).returncode == 0


def test_nodes_prints_the_local_machine_and_emulated_nodes():
    result = hetero("nodes", "--emulated-nodes-file", str(DEMO_NODES), "--json")
    assert result.returncode == 0, result.stderr
    nodes = json.loads(result.stdout)
    assert nodes[0]["source"] == "local" and nodes[0]["emulated"] is False
    assert {n["flavor"] for n in nodes[1:]} == {"a100-80g", "t4", "ascend-910b", "cpu-standard"}
    table = hetero("nodes", "--emulated-nodes-file", str(DEMO_NODES))
    assert "gpu-a100-0" in table.stdout and "a100-80g" in table.stdout


def test_kernelspecs_install_writes_one_per_interactive_template(tmp_path):
    result = hetero("kernelspecs", "install", "--prefix", str(tmp_path))
    assert result.returncode == 0, result.stderr
    specs = {p.name: json.loads((p / "kernel.json").read_text()) for p in (tmp_path / "share/jupyter/kernels").iterdir()}
    catalog = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    interactive = {f"hetero-{t['name']}" for t in catalog["templates"] if "kernel" in t["kinds"]}
    assert set(specs) == interactive
    fine_tuning = specs["hetero-fine-tuning"]
    assert fine_tuning["metadata"]["kernel_provisioner"] == {
        "provisioner_name": "hetero-provisioner", "config": {"template": "fine-tuning", "wait_timeout": 60}}
    assert fine_tuning["metadata"]["cull_idle_timeout"] == 1800
    assert fine_tuning["display_name"] == "Python 3 (Fine-tuning)"


def test_help_starts_without_the_engine_pydantic_or_jupyter_client():
    # What `jupyter hetero --help` imports decides how fast it answers (docs/benchmarks.md).
    probe = ("import sys; sys.argv = ['jupyter-hetero', '--help']\n"
             "from jupyter_hetero.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'pydantic', 'jupyter_client', "
             "'sqlalchemy', 'yaml', 'psutil', 'jupyterhub', 'kubespawner'}))")
    result = subprocess.run([sys.executable, "-c", probe], check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "simulate" in result.stdout and "bench" in result.stdout and "hub-config" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_the_help_of_a_command_built_on_demand_is_its_own():
    from jupyter_hetero.cli.main import _SHIPPED_CATALOG, build_parser

    def summaries(parser):
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return {c.dest: c.help for c in commands._choices_actions}

    assert summaries(build_parser(["--help"])) == summaries(build_parser())
    assert _SHIPPED_CATALOG == str(DEFAULT_CATALOG_PATH.resolve())


def test_a_malformed_after_is_refused_before_anything_is_sent():
    result = hetero("submit", "--url", "http://127.0.0.1:9/", "--template", "t", "--after", "12:soon", "--", "true")
    assert result.returncode == 2
    assert "argument --after: '12:soon' is not ID, ID:ok, ID:any or ID:failed" in result.stderr


@pytest.mark.slow
def test_submit_after_waits_for_the_awaited_job_and_says_so(tmp_path):
    from .harness import ServerLayout, start_hetero_server, until

    layout = ServerLayout.create(tmp_path)
    gate = layout.notebooks / "gate"
    (layout.notebooks / "hold.py").write_text(
        "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\n", encoding="utf-8")
    with start_hetero_server(layout, "cli-after", DEMO_NODES) as server:
        login = ("--url", server.base_url, "--token", server.token)

        def submit(*args: str) -> int:
            # From the server's root: where a job runs by default when it is submitted from there.
            result = subprocess.run([sys.executable, "-m", "jupyter", "hetero", "submit", *login, "--template",
                                     "data-preprocessing", "--queue", "experiment", *args],
                                    capture_output=True, text=True, timeout=120, cwd=layout.notebooks)
            assert result.returncode == 0, result.stderr
            return int(result.stdout.strip().splitlines()[-1])

        first = submit("--", "python", str(layout.notebooks / "hold.py"), str(gate))
        second = submit("--after", str(first), "--after", f"{first}:any", "--", "python", "-c", "print('second')")
        blocker = f"dependency: waits for workload {first} (running) to succeed"
        listed = until(lambda: blocker in (out := hetero("ls", *login).stdout) and out, "the blocker in ls")
        assert [line for line in listed.splitlines() if line.split()[:2] == [str(second), "queued"]]
        status = json.loads(hetero("status", str(second), "--json", *login).stdout)
        assert status["spec"]["after"] == [{"workload": first, "condition": "ok"},
                                           {"workload": first, "condition": "any"}]
        gate.write_text("open")
        until(lambda: json.loads(hetero("status", str(second), "--json", *login).stdout)["state"] == "succeeded",
              "the second job to run after the first", timeout=60)
