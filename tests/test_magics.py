"""The %hetero_* magics in real notebooks run by nbclient, against a real jupyter server."""

from __future__ import annotations

import os

import nbformat
import pytest

from .conftest import DEMO_NODES
from .harness import LabServer, ServerLayout, kill_runners_under, until
from .notebooks import output_text, run_notebook

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    layout = ServerLayout.create(tmp_path_factory.mktemp("magics"))
    (layout.notebooks / "job.py").write_text("import sys\nprint('script got', sys.argv[1:])\n")
    (layout.notebooks / "sleepy.py").write_text("import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n")
    report = nbformat.v4.new_notebook()
    defaults = nbformat.v4.new_code_cell("rows = 1")
    defaults.metadata["tags"] = ["parameters"]
    report.cells = [defaults, nbformat.v4.new_code_cell("print('rows', rows * 2)")]
    nbformat.write(report, layout.notebooks / "report.ipynb")
    with LabServer.start(
        layout, app="server", log_path=layout.root / "server.log",
        extra_args=[f"--HeteroApp.db_url=sqlite:///{layout.state / 'hetero.sqlite'}",
                    f"--HeteroApp.work_dir={layout.state / 'work'}", f"--HeteroApp.emulated_nodes_file={DEMO_NODES}",
                    "--HeteroApp.schedule_interval=0.2"],
    ) as lab:
        yield lab, layout
    kill_runners_under(layout.root)  # a served cell's replicas run until scaled down


def run(server, *sources: str, errors: bool = False) -> nbformat.NotebookNode:
    lab, layout = server
    return run_notebook(lab.base_url, lab.token, layout.notebooks, *sources, errors=errors)


text = output_text


def test_a_cell_runs_as_a_job_on_pushed_data_and_pulls_its_result(server):
    notebook = run(server, "data = [1, 2, 3]\nscale = lambda x: x * 2",
                   "%%hetero_submit --template data-preprocessing --push data,scale --pull total --wait\n"
                   "total = scale(sum(data))",
                   "print('total is', total)")
    assert "pulled total from workload" in text(notebook.cells[2])
    assert "total is 12" in text(notebook.cells[3])


def test_a_script_and_a_parameterised_notebook_run_as_jobs(server):
    notebook = run(server,
                   "%hetero_submit --template data-preprocessing --wait job.py 5 --six",
                   "job = %hetero_submit --template data-preprocessing --wait report.ipynb -p rows=21",
                   "%hetero_status",
                   "import sys\nprint('kernel', sys.executable)")
    assert "succeeded" in text(notebook.cells[1]) or "submitted workload" in text(notebook.cells[1])
    lab, _layout = server
    from jupyter_hetero.notebook.client import HeteroClient

    client = HeteroClient(lab.base_url, lab.token)
    jobs = {w["spec"]["payload"]: w for w in client.workloads(limit=50)}
    assert "script got ['5', '--six']" in "".join(client.logs(jobs["script"]["id"]))
    executed = client.request("GET", f"workloads/{jobs['notebook']['id']}")
    assert executed["state"] == "succeeded"
    assert "Workloads" in text(notebook.cells[3])
    kernel_python = text(notebook.cells[4]).split()[-1]
    assert jobs["script"]["spec"]["python"] == jobs["notebook"]["spec"]["python"] == kernel_python  # the kernel's


def test_logs_and_cancel(server):
    notebook = run(server,
                   "job = %hetero_submit --template data-preprocessing sleepy.py\nimport time\n"
                   "deadline = time.time() + 60\n"
                   "while 'sleeping' not in job.logs() and time.time() < deadline: time.sleep(0.2)",
                   "%hetero_logs {job.id}",
                   "%hetero_cancel {job.id}",
                   "job.wait(timeout=60)['state']",
                   "%hetero_status {job.id}")
    assert "sleeping" in text(notebook.cells[2])
    assert "cancel" in text(notebook.cells[3])
    assert "'cancelled'" in text(notebook.cells[4])
    assert "attempts 1: 0 failed, 0 preempted, 0 lost with their node" in text(notebook.cells[5])


def test_a_job_submitted_after_another_waits_for_it_to_succeed(server):
    lab, layout = server
    gate = layout.notebooks / "after-gate"
    (layout.notebooks / "hold.py").write_text(
        "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\n", encoding="utf-8")
    from jupyter_hetero.notebook.client import HeteroClient

    client = HeteroClient(lab.base_url, lab.token)
    notebook = run(server,
                   f"first = %hetero_submit --template data-preprocessing hold.py {gate}",
                   "second = %hetero_submit --template data-preprocessing --after {first.id} job.py after",
                   "print('ids', first.id, second.id)")
    first, second = (int(word) for word in text(notebook.cells[3]).split()[1:3])
    assert client.workload(second)["spec"]["after"] == [{"workload": first, "condition": "ok"}]
    blocker = f"dependency: waits for workload {first} (running) to succeed"
    until(lambda: blocker in [b["message"] for b in client.workload(second).get("blockers") or ()], "the blocker")
    gate.write_text("open")
    until(lambda: client.workload(second)["state"] == "succeeded", "the second job to run", timeout=60)
    assert client.workload(first)["state"] == "succeeded"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param("%%hetero_submit --template nope\nx = 1", "template 'nope' does not exist (valid: ", id="unknown template"),
        pytest.param("%%hetero_submit --template training --queue vip\nx = 1", "queue 'vip' does not exist",
                     id="unknown queue"),
        pytest.param("%%hetero_submit --template training --devices 99\nx = 1",
                     "parameters.devices: 99 is outside template training's bounds [1, 8]", id="out of bounds"),
        pytest.param("%%hetero_submit --template training --flavor tpu\nx = 1", "parameters.flavor: must be one of",
                     id="unknown flavor"),
        pytest.param("%%hetero_submit --template data-preprocessing --push missing\nx = 1",
                     "--push: no variable named missing", id="push of a missing variable"),
        pytest.param("%%hetero_submit --devices 2\nx = 1", "needs --template", id="no template"),
        pytest.param("%hetero_connect http://127.0.0.1:1", "cannot reach the server", id="server unreachable"),
        pytest.param("%%hetero_submit --template data-preprocessing --devices two\nx = 1",
                     "%hetero_submit: argument --devices: invalid int value: 'two' (see %hetero_submit? · 用法见",
                     id="a value of the wrong type"),
        pytest.param("%hetero_logs latest", "%hetero_logs: argument id: invalid int value: 'latest'",
                     id="a workload id that is not a number"),
    ],
)
def test_bad_input_is_one_readable_line_in_the_cell(server, source, message):
    notebook = run(server, source, errors=True)
    cell = notebook.cells[1]
    # IPython shows a UsageError as one line on stderr, with no traceback.
    assert not [o for o in cell.outputs if o.output_type == "error"], cell.outputs
    stderr = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stderr")
    assert stderr.startswith("UsageError: ") and message in stderr, cell.outputs
    assert "Traceback" not in stderr


def test_tables_render_as_html_and_text(server):
    notebook = run(server, "%hetero_templates", "%hetero_queues", "%hetero_quota", "%hetero_nodes")
    html = [o["data"]["text/html"] for cell in notebook.cells[1:] for o in cell.outputs if "text/html" in o.get("data", {})]
    assert len(html) == 4
    assert "fine-tuning" in html[0] and "urgent" in html[1] and "a100-80g" in html[2] and "gpu-a100-0" in html[3]
    assert "TEMPLATE" in text(notebook.cells[1])


def test_work_no_node_can_hold_stops_the_wait_and_says_why(server):
    # No node of the demo (nor, in any test environment, this machine) has eight A100 80 GB devices.
    notebook = run(server, "%%hetero_submit --template training --flavor a100-80g --devices 8 --wait\nx = 1",
                   "%hetero_status", errors=True)
    stderr = "".join(o.get("text", "") for o in notebook.cells[1].outputs if o.get("name") == "stderr")
    assert "inadmissible: no node in the inventory can ever hold it: capacity: a replica needs 8 devices on one " \
           "node, nodes of flavor a100-80g have 2" in stderr, notebook.cells[1].outputs
    assert ("inadmissible in training - no node can ever hold it (capacity: a replica needs 8 devices on one node, "
            "nodes of flavor a100-80g have 2); it is queued again when the inventory changes") in text(notebook.cells[2])


def test_the_live_status_widget_stops_waiting_for_inadmissible_work_and_says_why(server):
    from jupyter_hetero.notebook.client import HeteroClient, Workload
    from jupyter_hetero.notebook.widgets import StatusWidget

    lab, _layout = server
    client = HeteroClient(lab.base_url, lab.token)
    created = client.submit(template="training", parameters={"devices": 8, "flavor": "a100-80g"},
                            command=["python", "-c", "pass"])
    status = StatusWidget(Workload(client, created["id"]), poll_s=0.05)
    watcher = status.watch_in_background()
    watcher.join(timeout=30)
    assert not watcher.is_alive()  # it stopped polling: only the inventory can change this
    assert status.state.value == "inadmissible" and status.progress.bar_style == "warning"
    assert "no node can ever hold it (capacity: a replica needs 8 devices on one node" in status.header.value
    assert not status.cancel.disabled
    client.cancel(created["id"])


# -- arguments, in a real IPython shell without a server ----------------------------------------


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jupyter_hetero")
    return shell


@pytest.mark.parametrize(
    ("magic", "expected"),
    [
        pytest.param("%hetero_submit", ["%hetero_submit [--template TEMPLATE]", "--devices DEVICES",
                                        "-p <KEY=VALUE>, --param <KEY=VALUE>", "Task template (see %hetero_templates)"],
                     id="submit"),
        pytest.param("%%hetero_submit", ["--push PUSH", "--wait"], id="submit as a cell magic"),
        pytest.param("%hetero_logs", ["%hetero_logs [--follow] [--attempt ATTEMPT] id"], id="logs"),
        pytest.param("%hetero_explain", ["--preempt", "--lang LANG"], id="explain"),
    ],
)
def test_the_help_of_a_magic_lists_its_arguments(shell, magic, expected):
    # What `%hetero_submit?` shows: IPython's inspector on the magic.
    help_text = shell.object_inspect_text(magic)
    for line in expected:
        assert line in help_text, help_text


def test_an_array_of_a_notebook_runs_each_index_which_it_reads_from_its_environment(server):
    lab, layout = server
    shard = nbformat.v4.new_notebook()
    shard.cells = [nbformat.v4.new_code_cell(
        "import os\nopen(f\"shard-{os.environ['HETERO_ARRAY_ID']}-{os.environ['HETERO_ARRAY_INDEX']}\", 'w')"
        ".write(os.environ['HETERO_ARRAY_SIZE'])")]
    nbformat.write(shard, layout.notebooks / "shard.ipynb")
    from jupyter_hetero.notebook.client import HeteroClient

    client = HeteroClient(lab.base_url, lab.token)
    notebook = run(server, "job = %hetero_submit --template data-preprocessing --array 0-2%1 --name shard shard.ipynb",
                   "print('id', job.id)")
    array = int(text(notebook.cells[2]).split()[-1])
    assert f"submitted array {array} of 3 tasks" in text(notebook.cells[1])
    tasks = client.workloads(array=array)
    assert sorted((task["array"]["index"], task["name"]) for task in tasks) == [(i, f"shard[{i}]") for i in range(3)]
    until(lambda: all(t["state"] == "succeeded" for t in client.workloads(array=array)), "every task to run",
          timeout=90)
    assert {path.name: path.read_text() for path in layout.notebooks.glob(f"shard-{array}-*")} == {
        f"shard-{array}-{index}": "3" for index in range(3)}


def test_cancel_array_cancels_every_unfinished_task_of_the_array(server):
    lab, _layout = server
    from jupyter_hetero.notebook.client import HeteroClient

    client = HeteroClient(lab.base_url, lab.token)
    notebook = run(server,
                   "job = %hetero_submit --template data-preprocessing --array 0-2%1 sleepy.py\nimport time\n"
                   "deadline = time.time() + 60\n"
                   "while 'sleeping' not in job.logs() and time.time() < deadline: time.sleep(0.2)",
                   "%hetero_cancel {job.id} --array",
                   "%hetero_cancel {job.id}",
                   "plain = %hetero_submit --template data-preprocessing job.py\n%hetero_cancel {plain.id} --array",
                   errors=True)
    array = int(text(notebook.cells[1]).split()[2])  # "submitted array 12 of 3 tasks"
    # The first task runs (it logged), the two held by the limit are cancelled at once, the running one stops.
    assert text(notebook.cells[2]).strip() == (
        f"array {array}[0-2%1]: running 1, cancelled 2 (1 stopping within their queue's grace period)")
    until(lambda: {t["state"] for t in client.workloads(array=array)} == {"cancelled"}, "every task cancelled",
          timeout=60)
    assert f"workload {array}: cancel" in text(notebook.cells[3])  # without --array, the one task, as before
    plain = int(text(notebook.cells[4]).split(":")[0].split()[-1])  # its status widget: "workload 15: submitted"
    assert f"workload {plain} is not a task of an array: cancel it without array=true" in text(notebook.cells[4])
    assert client.workload(plain)["state"] not in ("cancelled",)  # a refusal cancels nothing


@pytest.mark.parametrize(
    ("magic", "line", "cell", "message"),
    [
        pytest.param("hetero_submit", "--template t --devices two", "x = 1", "argument --devices: invalid int value: 'two'",
                     id="a value of the wrong type"),
        pytest.param("hetero_submit", "--template t --bogus 1", "x = 1", "unrecognized arguments: --bogus",
                     id="an unknown option"),
        pytest.param("hetero_submit", "--template 'unclosed", "x = 1", "No closing quotation", id="an unclosed quote"),
        pytest.param("hetero_submit", "--devices 1", "x = 1", "needs --template, one of those %hetero_templates lists",
                     id="no template"),
        pytest.param("hetero_submit", "--template t report.ipynb -p rows", None, "-p expects key=value, got 'rows'",
                     id="a parameter without a value"),
        pytest.param("hetero_submit", "--template t report.ipynb -p rows=1 more.ipynb", None,
                     "a notebook takes -p key=value, not 'more.ipynb'", id="a second file after a notebook"),
        pytest.param("hetero_submit", "--template t --after 12:soon", "x = 1",
                     "--after expects ID, ID:ok, ID:any or ID:failed, got '12:soon'", id="a malformed dependency"),
        pytest.param("hetero_submit", "--template t --array 0-3 --wait", "x = 1",
                     "--wait follows one workload: an array's tasks are listed by %hetero_status",
                     id="an array waited for"),
        pytest.param("hetero_status", "abc", None, "argument id: invalid int value: 'abc'", id="status of a non-id"),
        pytest.param("hetero_cancel", "", None, "the following arguments are required: id", id="cancel of nothing"),
        pytest.param("hetero_cancel", "--array", None, "the following arguments are required: id",
                     id="cancel of no array"),
        pytest.param("hetero_connect", "", None, "the following arguments are required: url", id="connect to nothing"),
    ],
)
def test_a_bad_argument_is_one_usage_error_naming_it(shell, magic, line, cell, message):
    from IPython.core.error import UsageError

    magics = shell.magics_manager.registry["HeteroMagics"]
    function = getattr(magics, magic)
    with pytest.raises(UsageError) as error:
        function(line, cell) if cell is not None else function(line)
    assert str(error.value) == f"%{magic}: {message} (see %{magic}? · 用法见 %{magic}?)"


def test_a_chinese_session_is_told_in_chinese(shell, monkeypatch):
    from IPython.core.error import UsageError

    monkeypatch.setenv("JUPYTER_HETERO_LANG", "zh")
    magics = shell.magics_manager.registry["HeteroMagics"]
    with pytest.raises(UsageError) as error:
        magics.hetero_submit("--devices 1", "x = 1")
    assert str(error.value) == ("%hetero_submit: 需要 --template，取 %hetero_templates 列出的模板之一 "
                                "(see %hetero_submit? · 用法见 %hetero_submit?)")
    with pytest.raises(UsageError) as error:
        magics.hetero_submit("--template t report.ipynb -p rows", None)
    assert "-p 需要 key=value，收到的是 'rows'" in str(error.value)


def test_a_cells_function_is_served_reached_through_its_endpoint_and_shown_in_the_status(server):
    notebook = run(
        server,
        "%%hetero_serve tripler --replicas 2 --wait\ndef predict(inputs):\n    return [3 * x for x in inputs]",
        "import json, os, urllib.request\n"
        "request = urllib.request.Request(os.environ['JUPYTER_HETERO_URL'] + 'hetero/endpoints/default/tripler/predict',\n"
        "    json.dumps({'inputs': [1, 2]}).encode(), {'Authorization': 'token ' + os.environ['JUPYTER_HETERO_TOKEN']})\n"
        "print(json.loads(urllib.request.urlopen(request).read()))",
        "%hetero_status",
        "%hetero_serve broken",
    errors=True)
    served, called, status, bad = (text(cell) for cell in notebook.cells[1:])
    assert "service tripler: 2 replica(s) asked for; endpoint http" in served, served
    assert "service tripler: 2 replica(s) ready" in served, served
    assert "{'outputs': [3, 6]}" in called, called
    assert "tripler" in status and "2/2" in status and "/hetero/endpoints/default/tripler/" in status, status
    assert "%hetero_serve: give a .py file, -- and a command, or use %%hetero_serve on a cell" in bad, bad
    lab, _layout = server
    from jupyter_hetero.notebook.client import HeteroClient

    HeteroClient(lab.base_url, lab.token).delete_service("tripler")


def test_the_submit_form_offers_only_the_templates_the_users_tenant_may_use(tmp_path):
    import yaml

    from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH
    from jupyter_hetero.notebook.client import HeteroClient
    from jupyter_hetero.notebook.widgets import SubmitForm

    # The owner's tenant may use two of the catalog's job templates; the server would refuse the others (403).
    catalog = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    next(t for t in catalog["tenants"] if t["name"] == catalog["default_tenant"])["templates"] = [
        "data-preprocessing", "training"]
    layout = ServerLayout.create(tmp_path / "form")
    catalog_file = layout.state / "catalog.yaml"
    catalog_file.write_text(yaml.safe_dump(catalog, allow_unicode=True), encoding="utf-8")
    with LabServer.start(
        layout, app="server", log_path=layout.root / "server.log",
        extra_args=[f"--HeteroApp.db_url=sqlite:///{layout.state / 'hetero.sqlite'}",
                    f"--HeteroApp.work_dir={layout.state / 'work'}", f"--HeteroApp.emulated_nodes_file={DEMO_NODES}",
                    f"--HeteroApp.catalog_file={catalog_file}"],
    ) as lab:
        client = HeteroClient(lab.base_url, lab.token)
        form = SubmitForm(client)
        assert sorted(form.templates) == ["data-preprocessing", "training"]
        assert sorted(value for _label, value in form.template.options) == ["data-preprocessing", "training"]
        assert "hpc" in [t["name"] for t in client.templates(kind="job")]  # the catalog has more; none offered
    kill_runners_under(layout.root)


def test_the_submit_form_runs_after_the_workloads_given_in_the_panels_words(server):
    from jupyter_hetero.i18n import translate
    from jupyter_hetero.notebook.client import HeteroClient
    from jupyter_hetero.notebook.widgets import SubmitForm

    lab, _layout = server
    client = HeteroClient(lab.base_url, lab.token)
    # The same field as the panel's Launch form, in its words, English and Chinese.
    for language in ("en", "zh"):
        form = SubmitForm(client, language=language)
        said = (form.after.description, form.after.placeholder, form.after_hint.value)
        assert said == tuple(translate(text, language) for text in (
            "Run after", "e.g. 12 or 12:any, 13:failed",
            "Optional: workloads this job waits for; :ok (succeeded, the default), :any (ended) or :failed.")), said
    assert form.after.description == "在其后运行"
    first = client.submit(template="data-preprocessing", command=["python", "-c", "pass"])["id"]
    form = SubmitForm(client, language="en")
    form.template.value = "data-preprocessing"
    form.command.value = "python -c 'print(1)'"
    form.after.value = f"{first}:any"
    before = len(client.workloads())
    form._submit()
    assert form.message.value.startswith("submitted workload "), form.message.value
    job = int(form.message.value.rsplit(" ", 1)[1])
    assert client.workload(job)["spec"]["after"] == [{"workload": first, "condition": "any"}]
    until(lambda: client.workload(job)["state"] == "succeeded", "the job to run after the first", timeout=60)
    # A malformed entry is said in the form, and nothing is submitted.
    form.after.value = f"{first}:soon"
    form._submit()
    assert "Give workload ids, each as ID, ID:ok, ID:any or ID:failed." in form.message.value
    assert len(client.workloads()) == before + 1
