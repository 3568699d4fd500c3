"""The acceptance report through a real server over a scripted stretch of real work: preprocessing (one job
succeeds, one fails and is retried), training that writes a checkpoint, batch inference that archives its
results, and an online service whose bad canary is rolled back. Every checkpoint is met, and the report's
figures agree with what the API says of the same workloads; the HTML is one self-contained file."""

from __future__ import annotations

import re
import sys

import pytest

from ..harness import until_async
from ..serving.test_rollouts import CANARY, _load_until_decided, _serve

pytestmark = [pytest.mark.usefixtures("team"),
              pytest.mark.team(vision_a100=4, templates=CANARY, queues={"batch": {"failure": {"backoff_s": 1}}})]

OUTPUT = "import os, pathlib; pathlib.Path(os.environ['HETERO_OUTPUT_DIR'], '{name}').write_text('done')"
FLAKY = ("import os, pathlib, sys\n"
         "if os.environ['HETERO_ATTEMPT'] == '1': sys.exit(3)\n"
         "pathlib.Path(os.environ['HETERO_OUTPUT_DIR'], 'clean.csv').write_text('a,b')")
CHECKPOINT = "import os, pathlib; pathlib.Path(os.environ['HETERO_CHECKPOINT_DIR'], 'step-1.pt').write_text('w')\n" \
             "import time; time.sleep(2.5)"  # long enough for the scheduler to see the checkpoint while it runs


def job(template: str, code: str, **parameters) -> dict:
    return {"kind": "job", "template": template, "parameters": parameters, "command": [sys.executable, "-c", code]}


async def test_the_acceptance_report_meets_every_checkpoint_and_agrees_with_the_api(api, jp_fetch, wait_for):
    submitted = [
        await api("workloads", "POST", job("data-preprocessing", OUTPUT.format(name="rows.csv")), as_user="alice"),
        await api("workloads", "POST", job("data-preprocessing", FLAKY), as_user="alice"),
        await api("workloads", "POST", job("training", CHECKPOINT, devices=1), as_user="alice"),
        await api("workloads", "POST", job("batch-inference", OUTPUT.format(name="predictions.json"), devices=1),
                  as_user="alice"),
    ]
    for workload in submitted:
        await wait_for(workload["id"], lambda w: w["state"] == "succeeded", as_user="alice", timeout=90)
    await _serve(api, "report-demo")
    await api("services/report-demo/rollouts", "POST", {"env": {"MODEL_ERROR_RATE": "1"}}, as_user="alice")
    service, _answers = await _load_until_decided(api, jp_fetch, "report-demo")
    assert service["revisions"][-1]["outcome"] == "rolled-back"

    async def canary_gone() -> bool:
        replicas = await api("workloads", as_user="root", kind="service")
        return all(w["state"] == "cancelled" for w in replicas if w["spec"]["revision"] == 2)

    await until_async(canary_gone, "the rolled-back canary's replica to be cancelled")  # the figures hold still

    report = await api("report", as_user="root", since="1h")
    unmet = [(c["task_type"], i["name"], i["evidence"]) for c in report["checkpoints"] for i in c["items"]
             if not i["met"]]
    assert not unmet, unmet
    assert {c["task_type"]: [i["name"] for i in c["items"]] for c in report["checkpoints"]} == {
        "data-preprocessing": ["template", "io", "retries"], "training": ["memory", "checkpoint"],
        "online-inference": ["latency", "throughput", "rollback"],
        "batch-inference": ["queueing", "cost", "archived-results"]}

    # Per task type, the same figures the API gives of the same workloads.
    workloads = await api("workloads", as_user="root")
    tasks = {t["task_type"]: t for t in report["task_types"]}
    templates = {t["name"]: t["task_type"] for t in await api("templates")}
    for task, figures in tasks.items():
        mine = [w for w in workloads if templates[w["template"]] == task]
        assert figures["submissions"] == len(mine), task
        assert figures["states"] == {state: sum(w["state"] == state for w in mine)
                                     for state in {w["state"] for w in mine}}, task
        assert figures["retries"] == sum(max(0, w["attempt_count"] - 1) for w in mine), task
        assert {n["name"] for n in figures["nodes"]} == {a["node"] for w in mine
                                                        for a in (await api(f"workloads/{w['id']}", as_user="root"))
                                                        ["attempts"]}, task
    preprocessing = tasks["data-preprocessing"]
    assert preprocessing["retries"] == 1 and preprocessing["errors"][0]["exit_code"] == 3
    assert preprocessing["images"] and all(node["chip"] is None for node in preprocessing["nodes"])  # CPU nodes
    nodes = {n["name"]: n for n in await api("nodes", as_user="root")}
    for node in tasks["training"]["nodes"]:  # the chip, driver and runtime the inventory knows
        accelerator = nodes[node["name"]]["accelerator"]
        assert (node["chip"], node["driver"], node["runtime"]) == \
            (accelerator["model"], accelerator["driver_version"], accelerator["runtime"])
        assert node["chip"].startswith("A100")
    assert tasks["training"]["memory_peak_mib"] > 0 and tasks["training"]["device_util_pct_mean"] is None
    # Queues, usage and releases.
    batch = next(q for q in report["queues"] if q["queue"] == "batch")
    in_batch = [w for w in workloads if w["queue"] == "batch" and w["kind"] == "job"]
    assert batch["workloads"] == len(in_batch) and batch["histogram"][-1] == ["+Inf", len(in_batch)]
    usage = await api("usage", as_user="root", since="1h")
    assert [row["key"] for row in report["usage"]["rows"]] == [row["key"] for row in usage["rows"]] == ["vision"]
    # The capacity advice, as GET /capacity gives it over the same period.
    advice = await api("capacity", as_user="root", since="1h")
    assert report["capacity"]["add"] == advice["add"]  # none: nothing waited past its max wait
    assert [(r["flavor"], r["node"]) for r in report["capacity"]["release"]] == \
        [(r["flavor"], r["node"]) for r in advice["release"]]  # the shares move on with the clock
    [release] = [r for r in report["releases"] if r["outcome"] == "rolled-back"]
    assert release["service"] == "report-demo" and release["canary"]["error_rate"] == 1.0

    page = await jp_fetch("hetero", "api", "v1", "report", params={"since": "1h", "format": "html"},
                          headers={"Authorization": "token root-token"})
    assert page.headers["Content-Type"].startswith("text/html")
    body = page.body.decode()
    for section in ("checkpoints", "task-types", "queues", "utilisation", "usage", "alerts", "releases", "capacity"):
        assert f'id="{section}"' in body, section
    assert body.count("<svg") >= 3 and not re.search(r"<script|src=\"http|href=\"http", body)  # self-contained
    chinese = await jp_fetch("hetero", "api", "v1", "report", params={"since": "1h", "format": "html", "lang": "zh"},
                             headers={"Authorization": "token root-token"})
    assert "验收报告" in chinese.body.decode()
    await api("services/report-demo", "DELETE", as_user="alice")
