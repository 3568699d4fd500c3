"""%%hetero_schedule and %hetero_schedules in real notebooks run by nbclient, against a real jupyter server whose
tenants are two teams: what a cell schedules runs its code, is listed for its owner and for no other team."""

from __future__ import annotations

import hashlib
from datetime import datetime
from zoneinfo import ZoneInfo

import nbformat
import pytest
import yaml

from jupyter_hetero.notebook.client import HeteroClient
from jupyter_hetero.notebook.schedule_magics import default_name

from .conftest import DEMO_NODES
from .harness import LabServer, ServerLayout, until
from .notebooks import output_text, run_notebook

pytestmark = pytest.mark.slow

MIA = "mia-token-for-schedule-magics"    # a member of the default tenant
BOB = "bob-token-for-schedule-magics"    # a member of another tenant, lab-b


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH

    layout = ServerLayout.create(tmp_path_factory.mktemp("schedule-magics"))
    catalog = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    default = next(t for t in catalog["tenants"] if t["name"] == catalog["default_tenant"])
    default["users"] = ["mia"]
    catalog["tenants"].append({**default, "name": "lab-b", "display": {"en": "Lab B", "zh": "B 实验室"},
                               "users": ["bob"]})
    catalog_file = layout.state / "catalog.yaml"
    catalog_file.write_text(yaml.safe_dump(catalog, allow_unicode=True), encoding="utf-8")
    with LabServer.start(
        layout, app="server", log_path=layout.root / "server.log",
        extra_args=["--ServerApp.identity_provider_class=jupyter_hetero.auth.TeamIdentityProvider",
                    f"--TeamIdentityProvider.user_tokens={MIA}=mia",
                    f"--TeamIdentityProvider.user_tokens={BOB}=bob",
                    f"--HeteroApp.catalog_file={catalog_file}",
                    f"--HeteroApp.db_url=sqlite:///{layout.state / 'hetero.sqlite'}",
                    f"--HeteroApp.work_dir={layout.state / 'work'}", f"--HeteroApp.emulated_nodes_file={DEMO_NODES}",
                    "--HeteroApp.schedule_interval=0.2"],
    ) as lab:
        yield lab, layout


def run(server, token: str, *sources: str, errors: bool = False, language: str = "en") -> nbformat.NotebookNode:
    """A notebook of ``sources`` after ``%load_ext jupyter_hetero``, run as the holder of ``token``."""
    lab, layout = server
    return run_notebook(lab.base_url, token, layout.notebooks, *sources, errors=errors,
                        env={"JUPYTER_HETERO_LANG": language})


text = output_text


def test_a_cell_is_scheduled_says_when_it_runs_next_and_runs_its_code(server):
    lab, _layout = server
    mia = HeteroClient(lab.base_url, MIA)
    notebook = run(server, MIA,
                   '%%hetero_schedule --cron "0 2 * * *" --tz Asia/Shanghai --name nightly-sum --template '
                   'data-preprocessing\nprint("scheduled run", sum(range(7)))',
                   "import sys\nprint('kernel', sys.executable)")
    said = text(notebook.cells[1])
    schedule = next(s for s in mia.request("GET", "schedules") if s["name"] == "nightly-sum")
    assert f"schedule {schedule['id']} (nightly-sum): every day at 02:00 (Asia/Shanghai)" in said, said
    next_run = datetime.fromtimestamp(schedule["next_run_at"], ZoneInfo("Asia/Shanghai"))
    assert (next_run.hour, next_run.minute) == (2, 0)
    assert f"next run: {next_run:%Y-%m-%d} 02:00 (Asia/Shanghai)" in said, said
    # The cell itself is the job's code, run by the kernel's interpreter, as %%hetero_submit sends a cell.
    owner = (schedule["user"], schedule["tenant"], schedule["missed"], schedule["state"])
    assert owner == ("mia", "default", "run-once", "active")
    assert schedule["job"]["payload"] == "code"
    assert schedule["job"]["code"].strip() == 'print("scheduled run", sum(range(7)))'
    assert schedule["job"]["python"] == text(notebook.cells[2]).split()[-1]
    assert mia.request("GET", "workloads", mine=True) == []  # nothing is submitted at creation

    workload = mia.request("POST", f"schedules/{schedule['id']}/run")
    until(lambda: mia.workload(workload["id"])["state"] == "succeeded", "the scheduled cell to run", timeout=60)
    assert "scheduled run 21" in "".join(mia.logs(workload["id"]))
    assert mia.workload(workload["id"])["schedule"] == schedule["id"]


def test_the_schedules_are_listed_for_their_owner_and_for_no_other_tenant(server):
    lab, _layout = server
    made = run(server, MIA, '%%hetero_schedule --cron "@hourly" --missed skip --paused\n# hourly export\nprint("export")')
    assert "(hourly export): every hour" in text(made.cells[1])
    assert "paused: nothing runs until it is resumed" in text(made.cells[1])
    listed = run(server, MIA, "%hetero_schedules")
    table = text(listed.cells[1])
    assert "hourly export" in table and "every hour" in table, table
    row = next(line for line in table.splitlines() if "hourly export" in line)
    assert "paused" in row and "UTC" in row, row
    # Bob's tenant is another: he sees none of Mia's, and cannot read one by its id.
    others = run(server, BOB, "%hetero_schedules")
    assert "hourly export" not in text(others.cells[1])
    assert "nightly-sum" not in text(others.cells[1])
    bob = HeteroClient(lab.base_url, BOB)
    mine = next(s for s in HeteroClient(lab.base_url, MIA).request("GET", "schedules") if s["name"] == "hourly export")
    with pytest.raises(Exception) as refused:
        bob.request("GET", f"schedules/{mine['id']}")
    assert getattr(refused.value, "status", None) == 403


def test_the_schedules_speak_chinese_in_a_chinese_session(server):
    lab, _layout = server
    notebook = run(server, MIA, '%%hetero_schedule --cron "0 9 * * 1" --name weekly-zh\nprint(1)', "%hetero_schedules",
                   language="zh")
    english = next(s for s in HeteroClient(lab.base_url, MIA).request("GET", "schedules") if s["name"] == "weekly-zh")
    # The cadence in words is the server's answer for lang=zh; the magic's own words and headers are Chinese too.
    chinese = HeteroClient(lab.base_url, MIA).request("GET", f"schedules/{english['id']}", lang="zh")
    assert chinese["description"] != english["description"]
    assert f"定时任务 {english['id']}（weekly-zh）：{chinese['description']}" in text(notebook.cells[1])
    assert "下次运行：" in text(notebook.cells[1])
    table = text(notebook.cells[2])
    assert "下次运行" in table and "时区" in table, table
    row = next(line for line in table.splitlines() if "weekly-zh" in line)
    assert chinese["description"] in row and "活动" in row, row
    # A schedule's actions speak it too: paused, then shown with its runs' table.
    acted = run(server, MIA, f"%hetero_schedules pause {english['id']}", f"%hetero_schedules show {english['id']}",
                language="zh")
    assert f"定时任务 {english['id']}（weekly-zh）已暂停" in text(acted.cells[1]), text(acted.cells[1])
    shown = text(acted.cells[2])
    assert f"定时任务 {english['id']} 的运行记录" in shown and "属于租户 default 的 mia" in shown, shown


def test_a_schedule_is_shown_paused_resumed_run_now_and_deleted_by_its_owner_and_by_no_other_tenant(server):
    lab, _layout = server
    mia = HeteroClient(lab.base_url, MIA)
    job = {"template": "data-preprocessing", "queue": "experiment", "code": "print('acted on')"}
    made = mia.request("POST", "schedules", {"name": "acted", "cron": "0 3 * * *", "timezone": "Asia/Shanghai",
                                             "job": job})
    number = made["id"]
    # Bob, in another tenant, is refused each action (a 403 as one line) and changes nothing.
    refused = run(server, BOB, f"%hetero_schedules pause {number}", f"%hetero_schedules delete {number}", errors=True)
    for cell in refused.cells[1:]:
        stderr = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stderr")
        assert stderr.startswith("UsageError: ") and "belongs to tenant default" in stderr, cell.outputs
    assert mia.request("GET", f"schedules/{number}")["state"] == "active"

    paused = run(server, MIA, f"%hetero_schedules pause {number}")
    assert f"schedule {number} (acted) is paused: nothing runs until it is resumed" in text(paused.cells[1])
    assert mia.request("GET", f"schedules/{number}")["state"] == "paused"
    resumed = run(server, MIA, f"%hetero_schedules resume {number}")
    again = mia.request("GET", f"schedules/{number}")
    assert again["state"] == "active"
    when = datetime.fromtimestamp(again["next_run_at"], ZoneInfo("Asia/Shanghai"))
    assert f"schedule {number} (acted) is active again" in text(resumed.cells[1])
    assert f"next run: {when:%Y-%m-%d} 03:00 (Asia/Shanghai)" in text(resumed.cells[1])

    ran = run(server, MIA, f"%hetero_schedules run {number}")
    workload = next(r for r in mia.request("GET", f"schedules/{number}")["runs"])["workload"]
    assert f"schedule {number} submitted workload {workload} now, to queue experiment: " in text(ran.cells[1])
    until(lambda: mia.workload(workload)["state"] == "succeeded", "the run to succeed", timeout=60)
    assert "acted on" in "".join(mia.logs(workload))

    shown = text(run(server, MIA, f"%hetero_schedules show {number}").cells[1])
    assert f"schedule {number} (acted): every day at 03:00 (Asia/Shanghai)" in shown, shown
    assert "active, of mia in tenant default; missed runs: run-once" in shown, shown
    assert "job: code, template data-preprocessing, queue experiment" in shown, shown
    runs = shown[shown.index(f"Runs of schedule {number}"):].splitlines()
    assert runs[1].split() == ["WORKLOAD", "DUE", "SUBMITTED", "STATE", "LATE"], runs
    assert runs[2].split()[0] == str(workload) and runs[2].split()[-1] == "succeeded", runs

    deleted = run(server, MIA, f"%hetero_schedules delete {number}")
    assert f"schedule {number} (acted) is deleted; the workloads it submitted stay" in text(deleted.cells[1])
    assert mia.request("GET", f"schedules/{number}")["state"] == "deleted"
    assert mia.workload(workload)["state"] == "succeeded"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param('%%hetero_schedule --cron "0 2 * *"\nx = 1', "cron", id="a cron of four fields names cron"),
        pytest.param('%%hetero_schedule --cron "0 2 * * *" --tz Mars/Olympus\nx = 1', "timezone",
                     id="an unknown zone names timezone"),
        pytest.param('%%hetero_schedule --cron "0 2 * * *" --template nope\nx = 1', "job.template",
                     id="an unknown template names job.template"),
        pytest.param('%%hetero_schedule --cron "0 2 * * *" --template data-preprocessing --queue vip\nx = 1',
                     "job.queue", id="an unknown queue names job.queue"),
        pytest.param("%%hetero_schedule --tz UTC\nx = 1", "the following arguments are required: --cron",
                     id="no cron"),
        pytest.param('%%hetero_schedule --cron "0 2 * * *" --missed later\nx = 1', "--missed", id="a bad missed rule"),
        pytest.param('%%hetero_schedule --cron "0 2 * * *"\n  \n ', "the cell is empty", id="a blank cell"),
        pytest.param("%hetero_schedules everything", "invalid choice: 'everything'", id="an unknown action"),
        pytest.param("%hetero_schedules pause", "pause needs a schedule's id", id="an action without an id"),
        pytest.param("%hetero_schedules 3", "invalid choice: '3'", id="an id without an action"),
        pytest.param("%hetero_schedules show 99999", "schedule 99999 does not exist", id="an unknown schedule"),
    ],
)
def test_a_refusal_is_one_line_naming_what_is_wrong(server, source, message):
    lab, _layout = server
    before = len(HeteroClient(lab.base_url, MIA).request("GET", "schedules"))
    notebook = run(server, MIA, source, errors=True)
    cell = notebook.cells[1]
    # IPython shows a UsageError as one line on stderr, with no traceback.
    assert not [o for o in cell.outputs if o.output_type == "error"], cell.outputs
    stderr = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stderr")
    assert stderr.startswith("UsageError: ") and message in stderr, cell.outputs
    assert "Traceback" not in stderr
    assert len(HeteroClient(lab.base_url, MIA).request("GET", "schedules")) == before


@pytest.mark.parametrize(
    ("cell", "name"),
    [
        pytest.param("# nightly report\nbuild()", "nightly report", id="a first comment names it"),
        pytest.param("  \n#  ## spaced  \nx", "spaced", id="blank lines and hashes are left out"),
        pytest.param("build()", "cell-" + hashlib.sha1(b"build()").hexdigest()[:8],
                     id="else a digest of the cell"),
        pytest.param("#\nbuild()", "cell-" + hashlib.sha1(b"#\nbuild()").hexdigest()[:8],
                     id="an empty comment is no name"),
    ],
)
def test_the_default_name(cell, name):
    assert default_name(cell) == name

