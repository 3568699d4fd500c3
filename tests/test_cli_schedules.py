"""`jupyter hetero schedules`, run as a real subprocess against a real server whose wall clock the test moves
(tests.fakes.FileClock): create (options before or after the name), ls, show, run now, edit, pause, resume, a due
run, delete; refusals as one `error:` line and exit 1, usage mistakes exit 2; `submit` with the same job options."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import nbformat
import pytest

from .conftest import DEMO_NODES
from .harness import ServerLayout, start_hetero_server, until

pytestmark = pytest.mark.slow


def test_the_schedules_commands_against_a_real_server(tmp_path):
    layout = ServerLayout.create(tmp_path)
    offset = tmp_path / "wall-offset"
    offset.write_text("0", encoding="utf-8")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('from the notebook', 6 * 7)")])
    nbformat.write(notebook, layout.notebooks / "report.ipynb")
    with start_hetero_server(layout, "cli-schedules", DEMO_NODES, "--HeteroApp.clock_class=tests.fakes.FileClock",
                             env={"HETERO_TEST_WALL_OFFSET": str(offset)}) as server:
        def hetero(*args: str) -> subprocess.CompletedProcess:
            # From the server's root: where a job runs by default when it is defined from there.
            verb, *rest = args
            return subprocess.run([sys.executable, "-m", "jupyter", "hetero", "schedules", verb, "--url",
                                   server.base_url, "--token", server.token, *rest], capture_output=True, text=True,
                                  timeout=120, cwd=layout.notebooks)

        def ok(*args: str) -> list[str]:
            result = hetero(*args)
            assert result.returncode == 0, result.stderr
            return result.stdout.strip().splitlines()

        created = ok("create", "hourly", "--cron", "0 * * * *", "--tz", "Asia/Shanghai", "--template",
                     "data-preprocessing", "--queue", "experiment", "--", "python", "-c", "print('hourly run')")
        schedule = created[-1]
        assert created[0].startswith(f"schedule {schedule} (hourly): every hour at minute 0 (Asia/Shanghai); "
                                     "next run ")
        header, row = ok("ls")
        assert header.split() == ["ID", "NAME", "STATE", "CRON", "TZ", "NEXT", "LAST", "LAST-STATE"]
        assert row.split()[:3] == [schedule, "hourly", "active"] and "Asia/Shanghai" in row and row.endswith(" -")
        [listed] = json.loads("\n".join(ok("ls", "--format", "json")))
        assert (listed["id"], listed["job"]["command"], listed["job"]["cwd"]) == (
            int(schedule), ["python", "-c", "print('hourly run')"], str(layout.notebooks))
        shown = ok("show", schedule)
        assert shown[0] == f"schedule {schedule} (hourly): active, of {listed['user']} in tenant default" and \
            shown[-1] == "  no runs yet"
        assert ok("show", schedule, "--lang", "zh")[1].startswith("  0 * * * * in Asia/Shanghai: ")

        workload = ok("run", schedule)[-1]
        until(lambda: json.loads(subprocess.run(
            [sys.executable, "-m", "jupyter", "hetero", "status", workload, "--json", "--url", server.base_url,
             "--token", server.token], capture_output=True, text=True, timeout=120).stdout)["state"] == "succeeded",
              "the run to succeed", timeout=60)
        runs = ok("show", schedule)
        assert runs[-2].split() == ["WORKLOAD", "DUE", "SUBMITTED", "STATE", "LATE"]
        assert runs[-1].split()[0] == workload and runs[-1].split()[-1] == "succeeded"

        edited = ok("edit", schedule, "--cron", "30 * * * *", "--tz", "UTC", "--missed", "skip")
        assert edited == [f"schedule {schedule} (hourly): every hour at minute 30 (UTC); next run "
                          f"{edited[0].split('next run ')[1]}"]
        assert ok("pause", schedule) == [f"schedule {schedule} (hourly): paused; paused: no next run"]
        resumed = ok("resume", schedule)[0]
        assert resumed.startswith(f"schedule {schedule} (hourly): active; next run ") and resumed.endswith(":30 UTC")

        due = json.loads("\n".join(ok("show", schedule, "--format", "json")))["next_run_at"]
        offset.write_text(repr(due + 1 - time.time()), encoding="utf-8")
        ran = until(lambda: (found := json.loads("\n".join(ok("show", schedule, "--format", "json"))))["runs"][0][
            "due_at"] == due and found, "the due run", timeout=60)
        assert len(ran["runs"]) == 2 and ran["runs"][0]["late"] is False
        until(lambda: ok("ls")[1].endswith(" succeeded"), "ls showing the due run's state", timeout=60)

        report = ok("create", "--cron", "@daily", "--template", "data-preprocessing", "--queue", "experiment",
                    "--notebook", "report.ipynb", "daily report")[-1]  # options before the name work too
        assert json.loads("\n".join(ok("show", report, "--format", "json")))["job"]["notebook"]["path"] == \
            str(layout.notebooks / "report.ipynb")

        # An array's job: each run submits one job per index, at most two at once; the run records the array.
        shards = ok("create", "shards", "--cron", "@daily", "--template", "data-preprocessing", "--queue",
                    "experiment", "--array", "0-9%2", "--", "python", "-c", "print('shard')")[-1]
        defined = json.loads("\n".join(ok("show", shards, "--format", "json")))
        assert defined["job"]["array"] == "0-9%2"
        assert ok("show", shards)[3].endswith(", array 0-9%2")
        first = ok("run", shards)[-1]
        assert json.loads("\n".join(ok("show", shards, "--format", "json")))["runs"][0]["array"] == int(first)
        assert ok("edit", shards, "--array", "0-3")
        assert json.loads("\n".join(ok("show", shards, "--format", "json")))["job"]["array"] == "0-3"
        assert ok("edit", shards, "--no-array")
        assert json.loads("\n".join(ok("show", shards, "--format", "json")))["job"]["array"] is None
        assert ok("delete", shards)

        # submit takes the same job options (cli/jobs.py): a notebook, not only a command.
        submitted = subprocess.run([sys.executable, "-m", "jupyter", "hetero", "submit", "--url", server.base_url,
                                    "--token", server.token, "--template", "data-preprocessing", "--queue",
                                    "experiment", "--notebook", "report.ipynb"], capture_output=True, text=True,
                                   timeout=120, cwd=layout.notebooks)
        assert submitted.returncode == 0, submitted.stderr
        status = json.loads(subprocess.run(
            [sys.executable, "-m", "jupyter", "hetero", "status", submitted.stdout.split()[-1], "--json", "--url",
             server.base_url, "--token", server.token], capture_output=True, text=True, timeout=120).stdout)
        assert status["spec"]["notebook"]["path"] == str(layout.notebooks / "report.ipynb")

        assert ok("delete", schedule) == [f"schedule {schedule} (hourly): deleted; the workloads it submitted stay"]
        assert [line.split()[0] for line in ok("ls")[1:]] == [report]

        for args, code, said in (
            (("create", "bad", "--cron", "0 25 * * *", "--template", "data-preprocessing", "--", "true"), 1,
             "error: cron: the hour 25 is outside 0-23"),
            (("create", "bad", "--cron", "@daily", "--tz", "Mars/Olympus", "--template", "data-preprocessing", "--",
              "true"), 1, "error: timezone: 'Mars/Olympus' is not an IANA time zone name"),
            (("create", "bad", "--cron", "@daily", "--template", "no-such", "--", "true"), 1,
             "error: template 'no-such' does not exist"),
            (("create", "bad", "--cron", "@daily", "--template", "data-preprocessing"), 2,
             "error: give what the job runs: --notebook PATH, --script PATH or the command after --"),
            (("create", "bad", "--template", "data-preprocessing", "--", "true"), 2,
             "the following arguments are required: --cron"),
            (("pause", "999"), 1, "error: schedule 999 does not exist"),
            (("run", schedule), 1, f"error: schedule {schedule} was deleted"),
            (("edit", report), 2, "error: give what changes"),
        ):
            result = hetero(*args)
            assert result.returncode == code and said in result.stderr, (args, result.returncode, result.stderr)
