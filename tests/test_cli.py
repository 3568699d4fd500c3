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


def _task(workload: int, index: int, state: str, **fields) -> dict:
    """A task of array 12 (``0-3%2``) as GET /workloads answers it."""
    return {"id": workload, "state": state, "name": f"shard[{index}]", "created_at": 1000.0, "started_at": None,
            "finished_at": None, "node": None, "last_node": None, "blockers": [],
            "array": {"id": 12, "index": index, "size": 4, "limit": 2, "indices": "0-3"}, **fields}


def test_ls_shows_an_array_on_one_line_and_its_tasks_when_asked():
    from jupyter_hetero.cli.workloads import _ls_lines

    held = {"message": "array limit: array 12 runs at most 2 tasks at once (2 running, 0 next in line)"}
    rows = [_task(15, 3, "queued", blockers=[held]), _task(14, 2, "succeeded", started_at=1002.0, finished_at=1010.0,
                                                          last_node="cpu-0"),
            _task(13, 1, "running", started_at=1003.0, node="cpu-1"), _task(12, 0, "running", started_at=1001.0,
                                                                            node="cpu-0"),
            {**_task(11, 0, "succeeded"), "array": None, "name": "single"}]
    header, array, single = _ls_lines(rows, now=1020.0)
    assert array.split()[:5] == ["12[0-3%2]", "running", "2,", "queued", "1,"]
    assert "succeeded 1" in array and "shard" in array and "2 nodes" in array
    assert " 00:00:01 " in array and " 00:00:19 " in array  # waited until its first start, elapsed since then
    assert array.endswith(held["message"])
    assert single.split()[:3] == ["11", "succeeded", "single"]
    tasks = _ls_lines(rows, now=1020.0, tasks=True)[1:]
    assert [line.split()[:3] for line in tasks[:2]] == [["15", "queued", "shard[3]"], ["14", "succeeded", "shard[2]"]]
    assert len(tasks) == 5


@pytest.mark.slow
def test_submit_an_array_list_it_and_cancel_it(tmp_path):
    from .harness import ServerLayout, start_hetero_server, until

    layout = ServerLayout.create(tmp_path)
    gate = layout.notebooks / "gate"
    (layout.notebooks / "shard.py").write_text(
        "import os, sys, time\nopen(f\"index-{os.environ['HETERO_ARRAY_INDEX']}\", 'w').write('ran')\n"
        "while not os.path.exists(sys.argv[1]): time.sleep(0.05)\n", encoding="utf-8")
    with start_hetero_server(layout, "cli-array", DEMO_NODES) as server:
        login = ("--url", server.base_url, "--token", server.token)

        def submit(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "jupyter", "hetero", "submit", *login, "--template",
                                   "data-preprocessing", "--queue", "experiment", *args],
                                  capture_output=True, text=True, timeout=120, cwd=layout.notebooks)

        refused = submit("--array", "9-0", "--", "python", "shard.py", str(gate))
        assert refused.returncode == 1
        assert refused.stderr.strip() == "error: array: '9-0' runs backwards: 9 is above 0"
        submitted = submit("--array", "0-3%2", "--name", "shard", "--", "python", "shard.py", str(gate))
        assert submitted.returncode == 0, submitted.stderr
        array = int(submitted.stdout.strip().splitlines()[-1])
        assert submitted.stdout.startswith(f"submitted array {array}[0-3%2] of 4 tasks to queue experiment")
        until(lambda: sorted(path.name for path in layout.notebooks.glob("index-*")) == ["index-0", "index-1"],
              "the first two tasks to run")
        line = until(lambda: next((line for line in hetero("ls", *login).stdout.splitlines()
                                   if line.startswith(f"{array}[0-3%2]") and "running 2, queued 2" in line), None),
                     "the array's one line in ls")
        assert "shard" in line and f"array limit: array {array} runs at most 2 tasks at once" in line
        for listed in (hetero("ls", "--tasks", *login).stdout, hetero("ls", "--array", str(array), *login).stdout):
            assert sorted(row.split()[2] for row in listed.splitlines()[1:]) == [f"shard[{i}]" for i in range(4)]
        tasks = json.loads(hetero("ls", "--array", str(array), "--format", "json", *login).stdout)
        assert sorted(task["array"]["index"] for task in tasks) == [0, 1, 2, 3]
        assert {task["array"]["id"] for task in tasks} == {array}
        cancelled = hetero("cancel", str(array), "--array", *login)
        assert cancelled.returncode == 0, cancelled.stderr
        assert cancelled.stdout.startswith(f"array {array}[0-3%2]: ") and "cancelled 2" in cancelled.stdout
        until(lambda: f"{array}[0-3%2]  cancelled 4" in hetero("ls", *login).stdout, "every task cancelled",
              timeout=60)
        assert sorted(path.name for path in layout.notebooks.glob("index-*")) == ["index-0", "index-1"]
