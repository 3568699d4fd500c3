"""What each README command and cell must show: a check gets the run so far, the command's words (its comment
left out) and what it printed, and asserts what the README promises. ``check_of_command`` and ``check_of_cell``
find a block's check, and fail for one that has none, so a new example is never left unchecked.
"""

from __future__ import annotations

import ast
import datetime as dt
import json
import re
import shlex
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo

import yaml

from jupyter_hetero import __version__

from ..harness import LabServer, until
from .readme import Block, command_words

__all__ = ["CELL_CHECKS", "COMMAND_CHECKS", "Run", "Shown", "check_of_cell", "check_of_command"]

API = "hetero/api/v1"
CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass
class Run:
    """The README's run so far: the demo server, the clone commands run in, and the workloads the README created."""

    lab: LabServer
    clone: Path
    environ: dict[str, str]
    submitted: list[int] = field(default_factory=list)
    arrays: dict[int, list[int]] = field(default_factory=dict)  # each array's id (its first task's) to its tasks
    schedules: list[int] = field(default_factory=list)
    audited_before: int = 0  # the audit entries the server counted just before `audit verify` ran
    commands_run: int = 0
    cells_run: int = 0

    def api(self, path: str, method: str = "GET", body=None):
        return self.lab.api(f"{API}/{path}", method, body)

    def workload(self, workload_id: int) -> dict:
        return self.api(f"workloads/{workload_id}")

    def created(self, text: str) -> int:
        """A workload id the README names, which must be one it created before (a fresh clone has no other)."""
        workload_id = int(text)
        assert workload_id in self.submitted, (
            f"the README names workload {workload_id}, but only created {self.submitted} before this line")
        return workload_id

    def ended(self, workload_id: int, timeout: float = 90.0) -> dict:
        return until(lambda: (w := self.workload(workload_id))["state"] in ("succeeded", "failed", "cancelled") and w,
                     f"workload {workload_id} to end", timeout=timeout)

    def logs(self, workload_id: int) -> str:
        """The log as text (``LabServer.api`` would read a log of one number as JSON)."""
        request = urllib.request.Request(f"{self.lab.base_url}{API}/workloads/{workload_id}/logs",
                                         headers={"Authorization": f"token {self.lab.token}"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.read().decode()


@dataclass(frozen=True)
class Shown:
    """What a command or a cell printed."""

    returncode: int
    stdout: str
    stderr: str


def _option(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words else None


def _after_dashes(words: list[str]) -> list[str]:
    return words[words.index("--") + 1:]


def _printed_by(command: list[str]) -> str:
    """What ``python -c "print('...')"`` prints."""
    printed = re.fullmatch(r"print\((.*)\)", command[2]) if command[:2] == ["python", "-c"] else None
    assert printed, f"{shlex.join(command)}: the test knows what only python -c \"print('...')\" prints"
    return str(ast.literal_eval(printed[1]))


def check_submit(run: Run, words: list[str], shown: Shown) -> None:
    """Prints the new workload's id last; the workload is the one asked for, and, per example, does what the
    README's comment says."""
    last = shown.stdout.strip().splitlines()[-1]
    assert last.isdigit(), f"submit printed no id last: {shown.stdout!r}"
    workload = run.workload(int(last))
    run.submitted.append(workload["id"])
    assert workload["template"] == _option(words, "--template")
    assert workload["spec"]["command"] == _after_dashes(words)
    for param in [words[i + 1] for i, word in enumerate(words) if word == "--param"]:
        name, value = param.split("=", 1)
        assert workload["request"]["parameters"][name] == value, workload["request"]
    if indices := _option(words, "--array"):
        check_array(run, workload, indices, _after_dashes(words))
    elif cwd := _option(words, "--cwd"):
        assert workload["spec"]["cwd"] == str((run.clone / cwd).resolve()), workload["spec"]
        assert run.ended(workload["id"])["state"] == "succeeded", run.logs(workload["id"])
        if _after_dashes(words) == ["ls"]:  # it listed that directory, not the one it was submitted from
            assert sorted(run.logs(workload["id"]).split()) == sorted(p.name for p in (run.clone / cwd).iterdir())
    elif after := _option(words, "--after"):
        awaited, condition = (after.split(":") + ["ok"])[:2]
        awaited_id = run.created(awaited)
        assert workload["spec"]["after"] == [{"workload": awaited_id, "condition": condition}], workload["spec"]
        done = run.ended(workload["id"])
        assert done["state"] == "succeeded", run.logs(workload["id"])
        assert done["started_at"] >= run.workload(awaited_id)["finished_at"]  # not before the one it waits for
        assert run.logs(workload["id"]).strip() == _printed_by(_after_dashes(words))
    elif "cpu=64" in words:  # more CPU than any node has: it waits, and says why
        explain = f"workloads/{workload['id']}/explain"
        until(lambda: [b for b in run.api(explain)["blockers"] if b["kind"] == "node-cpu"],
              f"workload {workload['id']}'s blocker: no node has that much CPU")


def check_array(run: Run, first: dict, indices: str, command: list[str]) -> None:
    """Every task of the array stored, each run once with its index, never more of them at once than its limit."""
    tasks = run.api(f"workloads?array={first['id']}")
    wanted, _, limit = indices.partition("%")
    low, high = map(int, wanted.split("-"))
    assert sorted(t["array"]["index"] for t in tasks) == list(range(low, high + 1)), tasks
    assert {t["array"]["id"] for t in tasks} == {first["id"]} and {t["array"]["limit"] for t in tasks} == {int(limit)}
    run.arrays[first["id"]] = sorted(t["id"] for t in tasks)
    run.submitted += [t["id"] for t in tasks if t["id"] != first["id"]]
    ended = [run.ended(t["id"]) for t in tasks]
    assert all(t["state"] == "succeeded" for t in ended), ended
    assert all(run.logs(t["id"]).strip() == str(t["array"]["index"]) for t in ended), [run.logs(t["id"]) for t in ended]
    spans = [(a["started_at"], a["ended_at"]) for t in ended for a in t["attempts"]]
    at_once = max(sum(start <= moment < end for start, end in spans) for moment, _ in spans)
    assert at_once <= int(limit), f"{at_once} tasks ran at once, the limit is {limit}: {spans}"
    assert command[:2] == ["python", "-c"] and "HETERO_ARRAY_INDEX" in command[2], command


def check_ls(run: Run, words: list[str], shown: Shown) -> None:
    """A table with a row per workload created so far, an array's on one row."""
    header, *rows = shown.stdout.splitlines()
    assert header.split()[:3] == ["ID", "STATE", "NAME"], header
    tasks = {task for array, tasks in run.arrays.items() for task in tasks if task != array}
    listed = {int(re.match(r"\d+", row.split()[0])[0]) for row in rows}
    assert listed >= set(run.submitted) - tasks, shown.stdout


def check_ls_array(run: Run, words: list[str], shown: Shown) -> None:
    """A line per task of the array."""
    array = run.created(_option(words, "--array"))
    header, *rows = shown.stdout.splitlines()
    assert header.split()[:3] == ["ID", "STATE", "NAME"], header
    assert sorted(int(re.match(r"\d+", row.split()[0])[0]) for row in rows) == run.arrays[array], shown.stdout


def check_ls_json(run: Run, words: list[str], shown: Shown) -> None:
    """GET /workloads as it answers: every workload created so far."""
    listed = json.loads(shown.stdout)
    assert {w["id"] for w in listed} >= set(run.submitted) and all("state" in w for w in listed), listed


def check_logs_follow(run: Run, words: list[str], shown: Shown) -> None:
    """Waits for the job to end and prints its log: the CUDA_VISIBLE_DEVICES it was given, its devices as placed."""
    workload_id = run.created(words[2])
    done = run.workload(workload_id)
    assert done["state"] == "succeeded", done
    placed = [d["index"] for slot in done["attempts"][-1]["placement"]["slots"] for d in slot["devices"]]
    assert len(placed) == int(done["request"]["parameters"]["devices"]), done["attempts"][-1]
    assert shown.stdout.strip() == ",".join(map(str, placed)), shown.stdout


def check_explain_zh(run: Run, words: list[str], shown: Shown) -> None:
    """Why it waits, in Chinese: its state and each of its blockers."""
    workload_id = run.created(words[2])
    assert shown.stdout.startswith(f"workload {workload_id}: ") and CJK.search(shown.stdout), shown.stdout
    blockers = run.api(f"workloads/{workload_id}/explain")["blockers"]
    assert blockers, f"workload {workload_id} waits on nothing: the README's explain shows no reason"
    assert len(re.findall(r"^\s+\d+\. ", shown.stdout, re.M)) == len(blockers), shown.stdout
    if any(b["message"].startswith("capacity:") for b in blockers):
        assert "容量" in shown.stdout, shown.stdout  # the capacity blocker's own word, in Chinese


def check_cancel(run: Run, words: list[str], shown: Shown) -> None:
    workload_id = run.created(words[2])
    assert shown.stdout.strip() == f"workload {workload_id}: cancelled", shown.stdout
    assert run.workload(workload_id)["state"] == "cancelled"


def check_nodes(run: Run, words: list[str], shown: Shown) -> None:
    """This machine and every node of the demo's file, those flagged emulated."""
    demo = yaml.safe_load((run.clone / _option(words, "--emulated-nodes-file")).read_text())["nodes"]
    rows = {line.split()[0]: line.split() for line in shown.stdout.splitlines()[1:] if not line.startswith(" ")}
    assert all(rows.get(node["name"], ["?"])[-1] == "yes" for node in demo), shown.stdout
    assert [name for name, row in rows.items() if row[-1] == "no"], f"this machine is missing: {shown.stdout}"


def check_copy(run: Run, words: list[str], shown: Shown) -> None:
    source, target = words[1:]
    assert (run.clone / target).read_bytes() == (run.clone / source).read_bytes()


def check_catalog_validate(run: Run, words: list[str], shown: Shown) -> None:
    assert re.fullmatch(rf"{re.escape(words[3])}: valid catalog: \d+ flavors, \d+ templates, \d+ queues, .*",
                        shown.stdout.strip()), shown.stdout


def check_version(run: Run, words: list[str], shown: Shown) -> None:
    assert shown.stdout.strip() == f"jupyter-hetero {__version__}" == f"jupyter-hetero {run.api('version')['version']}"


def check_k8s_render(run: Run, words: list[str], shown: Shown) -> None:
    """The template's pod as the Kubernetes backend would create it (a kernel's with its connection Secret), in the
    namespace asked for."""
    objects = [o for o in yaml.safe_load_all(shown.stdout) if o]
    pods = [o for o in objects if o["kind"] == "Pod"]
    described = [json.loads(p["metadata"]["annotations"]["hetero.jupyter.org/workload"]) for p in pods]
    kind = "kernel" if "--kernel" in words else "job"
    assert described and all(d["template"] == _option(words, "--template") and d["kind"] == kind
                             for d in described), shown.stdout[:2000]
    assert kind == "job" or [o for o in objects if o["kind"] == "Secret"], "a kernel's connection Secret is missing"
    namespace = _option(words, "--namespace") or "hetero"
    assert {o["metadata"]["namespace"] for o in objects} == {namespace}, shown.stdout[:2000]


def check_export_kueue(run: Run, words: list[str], shown: Shown) -> None:
    """One file per kind in the directory, every one of Kueue's objects there."""
    files = sorted((run.clone / _option(words, "-o")).glob("*.yaml"))
    kinds = {o["kind"] for path in files for o in yaml.safe_load_all(path.read_text()) if o}
    assert {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"} <= kinds, kinds
    assert len(files) == len(kinds) and all(path.name in shown.stdout for path in files), shown.stdout


def check_schedule_create(run: Run, words: list[str], shown: Shown) -> None:
    """Prints the schedule's id last; it submits the job asked for, next at the cron's time in its time zone."""
    last = shown.stdout.strip().splitlines()[-1]
    assert last.isdigit(), f"schedules create printed no id last: {shown.stdout!r}"
    schedule = run.api(f"schedules/{last}")
    run.schedules.append(schedule["id"])
    assert (schedule["name"], schedule["cron"], schedule["timezone"], schedule["state"]) == (
        words[3], _option(words, "--cron"), _option(words, "--tz"), "active"), schedule
    assert schedule["job"]["template"] == _option(words, "--template"), schedule["job"]
    minute, hour = map(int, _option(words, "--cron").split()[:2])
    due = dt.datetime.fromtimestamp(schedule["next_run_at"], ZoneInfo(schedule["timezone"]))
    assert (due.hour, due.minute) == (hour, minute) and schedule["next_run_at"] > time.time(), due


def check_schedule_run(run: Run, words: list[str], shown: Shown) -> None:
    """Submits the schedule's job now and prints its id last; the job runs the schedule's command."""
    schedule_id = int(words[3])
    assert schedule_id in run.schedules, f"the README runs schedule {schedule_id}, which it never created"
    last = shown.stdout.strip().splitlines()[-1]
    assert last.isdigit(), f"schedules run printed no id last: {shown.stdout!r}"
    workload = run.ended(int(last))
    run.submitted.append(workload["id"])
    assert workload["state"] == "succeeded" and workload["schedule"] == schedule_id, workload
    assert run.logs(workload["id"]).strip() == _printed_by(workload["spec"]["command"])
    assert [r["workload"] for r in run.api(f"schedules/{schedule_id}")["runs"]][:1] == [workload["id"]]


def check_schedules_ls(run: Run, words: list[str], shown: Shown) -> None:
    """A row per schedule created so far, in its own time zone."""
    header, *rows = shown.stdout.splitlines()
    assert header.split()[:3] == ["ID", "NAME", "STATE"], header
    assert sorted(int(row.split()[0]) for row in rows) == run.schedules, shown.stdout
    assert all(run.api(f"schedules/{row.split()[0]}")["timezone"] in row for row in rows), shown.stdout


def check_export_kueue_stream(run: Run, words: list[str], shown: Shown) -> None:
    """One YAML stream; each tenant's LocalQueues, one per queue, in the tenant's namespace."""
    objects = [o for o in yaml.safe_load_all(shown.stdout) if o]
    local = [o for o in objects if o["kind"] == "LocalQueue"]
    queues = {q["name"] for q in run.api("queues")}
    tenant = run.api("tenants/me")["tenant"]
    namespace = _option(words, "--namespace").replace("{tenant}", tenant)
    assert {q["metadata"]["name"] for q in local if q["metadata"]["namespace"] == namespace} == queues, local


def check_hub_config(run: Run, words: list[str], shown: Shown) -> None:
    """Python a hub's config can take: the hetero service among its services."""
    compile(shown.stdout, "jupyterhub_config.py", "exec")
    assert "c.JupyterHub.services.append(" in shown.stdout and '"name": "hetero"' in shown.stdout, shown.stdout


def check_export_prometheus(run: Run, words: list[str], shown: Shown) -> None:
    rules = yaml.safe_load(shown.stdout)["groups"][0]["rules"]
    assert rules and all(rule["alert"].startswith("Hetero") and rule["expr"] for rule in rules), rules


def check_audit_verify(run: Run, words: list[str], shown: Shown) -> None:
    """Read on the server's own database: at least as many entries as the server counted before it ran."""
    counted = shown.stdout.strip()
    found = re.fullmatch(r"audit log intact: (\d+) entries", counted)
    assert found, counted
    assert int(found[1]) >= run.audited_before >= 1, (counted, run.audited_before)


def check_usage(run: Run, words: list[str], shown: Shown) -> None:
    """A row per cost centre and a total, counting the attempts the README's jobs made."""
    header, *rows = shown.stdout.splitlines()
    assert header.split()[0] == "COST_CENTRE" and rows[-1].startswith("total "), shown.stdout
    assert int(rows[-1].split()[-1]) >= 1, shown.stdout


def check_report(run: Run, words: list[str], shown: Shown) -> None:
    """One self-contained HTML page with the checkpoints."""
    page = (run.clone / _option(words, "-o")).read_text()
    assert page.lstrip().lower().startswith("<!doctype html") and 'id="checkpoints"' in page, page[:500]
    assert "<script src=" not in page and "<link " not in page


def check_onboard_node(run: Run, words: list[str], shown: Shown) -> None:
    """The node's checklist run now, passed step by step."""
    node = words[3]
    assert node in {n["name"] for n in run.api("nodes")}, f"the demo has no node {node}"
    first, *steps = shown.stdout.splitlines()
    assert first == f"node {node}: accepted" and steps and all(s.split()[0] == "ok" for s in steps), shown.stdout


Check = Callable[[Run, list[str], Shown], None]

# Each README command's words (`.venv/bin/jupyter hetero` as `hetero`), matched whole, to its check.
COMMAND_CHECKS: list[tuple[str, Check]] = [
    (r"hetero submit .+ -- .+", check_submit),
    (r"hetero ls", check_ls),
    (r"hetero ls --format json", check_ls_json),
    (r"hetero ls --array \d+", check_ls_array),
    (r"hetero schedules create \S+ --cron '[^']+' --tz \S+ --template \S+ -- .+", check_schedule_create),
    (r"hetero schedules run \d+", check_schedule_run),
    (r"hetero schedules ls", check_schedules_ls),
    (r"hetero logs \d+ --follow", check_logs_follow),
    (r"hetero explain \d+ --lang zh", check_explain_zh),
    (r"hetero cancel \d+", check_cancel),
    (r"hetero nodes --emulated-nodes-file \S+", check_nodes),
    (r"cp \S+ \S+", check_copy),
    (r"hetero catalog validate \S+", check_catalog_validate),
    (r"hetero version", check_version),
    (r"hetero k8s render --template \S+( --kernel)?( --namespace \S+)?", check_k8s_render),
    (r"hetero export kueue -o \S+", check_export_kueue),
    (r"hetero export kueue --namespace \S+", check_export_kueue_stream),
    (r"hetero hub-config", check_hub_config),
    (r"hetero export prometheus-rules", check_export_prometheus),
    (r"hetero audit verify", check_audit_verify),
    (r"hetero usage --by cost_centre", check_usage),
    (r"hetero report -o \S+\.html", check_report),
    (r"hetero onboard node \S+", check_onboard_node),
]


def check_of_command(command: str) -> Check:
    words = command_words(command)
    found = [check for pattern, check in COMMAND_CHECKS if re.fullmatch(pattern, shlex.join(words))]
    assert found, f"the README runs {command!r}, which no check in COMMAND_CHECKS covers: add what it must show"
    return found[0]


def check_templates_cell(run: Run, shown: Shown) -> None:
    """The extension loads and lists the nine templates."""
    assert all(name in shown.stdout for name in ("training", "fine-tuning", "online-inference")), shown.stdout


def check_submit_cell(run: Run, shown: Shown) -> None:
    """The cell ran as a job on a device and its result came back."""
    pulled = re.search(r"pulled metrics from workload (\d+)", shown.stdout)
    assert pulled, shown.stdout
    workload = run.workload(int(pulled[1]))
    run.submitted.append(workload["id"])
    assert workload["state"] == "succeeded" and workload["template"] == "training", workload
    assert workload["request"]["request"]["devices"] == 1 and workload["attempts"][-1]["node"], workload


def check_result_cell(run: Run, shown: Shown) -> None:
    """The job's result, computed on the pushed data, is in the notebook."""
    assert shown.stdout.strip() == "{'rows': 1000}", shown.stdout


# Each README cell, by its first line (matched at its start), to its check.
CELL_CHECKS: list[tuple[str, Callable[[Run, Shown], None]]] = [
    (r"%load_ext jupyter_hetero\b", check_templates_cell),
    (r"%%hetero_submit .*--pull metrics .*--wait", check_submit_cell),
    (r"metrics\b", check_result_cell),
]


def check_of_cell(block: Block) -> Callable[[Run, Shown], None]:
    first = block.text.strip().splitlines()[0]
    found = [check for pattern, check in CELL_CHECKS if re.match(pattern, first)]
    assert found, f"{block} is a cell no check in CELL_CHECKS covers: add what it must show"
    return found[0]

