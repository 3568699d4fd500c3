"""The acceptance report through a real server over a scripted stretch of real work: training that holds both A100s
while another training job waits past its queue's max wait (an alert fires, and resolves when it runs), training that
writes a checkpoint, preprocessing (one job succeeds, one fails and is retried), batch inference that archives its
results, and an online service whose bad canary is rolled back. Each checkpoint is judged by its own evidence (no
device memory or communication is measured here); every section's figures
agree with what the API says of the same workloads, alerts and usage; the HTML is one self-contained file, which
Chromium renders (the screenshot is kept as docs/images/acceptance-report.png)."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest

from ..harness import CHROMIUM, CHROMIUM_ARGS, until_async
from ..serving.test_rollouts import CANARY, _load_until_decided, _serve

pytestmark = [pytest.mark.usefixtures("team", "fast_alerts"),
              pytest.mark.team(vision_a100=4, templates=CANARY, queues={"batch": {"failure": {"backoff_s": 1}},
                                                                      "training": {"max_wait_s": 2}})]
SCREENSHOT = Path(__file__).resolve().parents[2] / "test-output" / "acceptance-report.png"

OUTPUT = "import os, pathlib; pathlib.Path(os.environ['HETERO_OUTPUT_DIR'], '{name}').write_text('done')"
FLAKY = ("import os, pathlib, sys\n"
         "if os.environ['HETERO_ATTEMPT'] == '1': sys.exit(3)\n"
         "pathlib.Path(os.environ['HETERO_OUTPUT_DIR'], 'clean.csv').write_text('a,b')")
CHECKPOINT = "import os, pathlib; pathlib.Path(os.environ['HETERO_CHECKPOINT_DIR'], 'step-1.pt').write_text('w')\n" \
             "import time; time.sleep(2.5)"  # long enough for the scheduler to see the checkpoint while it runs
GATE = "import os, time\nwhile not os.path.exists({path!r}): time.sleep(0.05)"
FINAL = ("succeeded", "failed", "cancelled", "lost")


@pytest.fixture
def fast_alerts(hetero_config):
    hetero_config["alert_interval"] = 0.2


def job(template: str, code: str, **parameters) -> dict:
    return {"kind": "job", "template": template, "parameters": parameters, "command": [sys.executable, "-c", code]}


def nearest_rank(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)], 3) if ordered else None


async def test_the_acceptance_report_meets_every_checkpoint_and_agrees_with_the_api(api, jp_fetch, wait_for,
                                                                                     jp_root_dir):
    # Both A100s held: the checkpointing training job waits past the training queue's 2 s, and an alert fires.
    gate = jp_root_dir / "open"
    holder = await api("workloads", "POST", job("training", GATE.format(path=str(gate)), devices=2), as_user="alice")
    await wait_for(holder["id"], lambda w: w["state"] == "running", as_user="alice", timeout=60)
    submitted = [holder, await api("workloads", "POST", job("training", CHECKPOINT, devices=1), as_user="alice")]

    async def queue_wait_alert() -> list[dict]:
        return [a for a in await api("alerts", as_user="root") if a["rule"] == "queue-wait"]

    [fired] = await until_async(queue_wait_alert, "the training queue's wait alert", timeout=30)
    assert fired["subject"] == "queue/training" and fired["figures"]["workload"] == submitted[1]["id"]
    gate.touch()
    submitted += [
        await api("workloads", "POST", job("data-preprocessing", OUTPUT.format(name="rows.csv")), as_user="alice"),
        await api("workloads", "POST", job("data-preprocessing", FLAKY), as_user="alice"),
        await api("workloads", "POST", job("batch-inference", OUTPUT.format(name="predictions.json"), devices=1),
                  as_user="alice"),
    ]
    for workload in submitted:
        await wait_for(workload["id"], lambda w: w["state"] == "succeeded", as_user="alice", timeout=90)
    await _serve(api, "report-demo")
    await api("services/report-demo/rollouts", "POST", {"env": {"MODEL_ERROR_RATE": "1"}}, as_user="alice")
    service, _answers = await _load_until_decided(api, jp_fetch, "report-demo")
    assert service["revisions"][-1]["outcome"] == "rolled-back"
    # The service ends, so that every figure holds still: nothing runs, every alert has resolved.
    await api("services/report-demo", "DELETE", as_user="alice")

    async def all_still() -> bool:
        ended = all(w["state"] in FINAL for w in await api("workloads", as_user="root"))
        return ended and not await api("alerts", as_user="root", state="firing")

    await until_async(all_still, "every workload to end and every alert to resolve", timeout=60)

    report = await api("report", as_user="root", since="10m")
    assert {c["task_type"]: [i["name"] for i in c["items"]] for c in report["checkpoints"]} == {
        "data-preprocessing": ["template", "io", "retries"],
        "training": ["device-memory", "communication", "checkpoint"],
        "online-inference": ["latency", "throughput", "rollback"],
        "batch-inference": ["queueing", "cost", "archived-results"]}
    # Each item by its own evidence. The A100s are emulated and no job reports a figure, so nothing measured the
    # training jobs' device memory or their communication: a stand-in (the host's memory) never meets an item.
    items = {(c["task_type"], i["name"]): i for c in report["checkpoints"] for i in c["items"]}
    assert {key: item["status"] for key, item in items.items()} == {
        **{key: "met" for key in items},
        ("training", "device-memory"): "not-measured", ("training", "communication"): "not-measured"}, items
    assert "nvidia-smi" in items["training", "device-memory"]["needs"]
    assert "collective_bandwidth_gbps" in items["training", "communication"]["needs"]
    assert all(item["needs"] is None for item in items.values() if item["status"] == "met")
    # Preprocessing's IO is the bytes its attempts read and wrote, as procfs measured them, never its archive.
    io = items["data-preprocessing", "io"]
    preprocessed = sorted(w["id"] for w in submitted[2:4])
    assert re.fullmatch(rf"read [\d.]+ (B|kB|MB|GB), wrote [\d.]+ (B|kB|MB|GB) \(procfs\) in workloads "
                        rf"{preprocessed[0]}, {preprocessed[1]}", io["evidence"]), io

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
    # Queues: each one's waits (submitted to admitted) as the API's workloads give them.
    for queue in report["queues"]:
        waits = [w["admitted_at"] - w["created_at"] for w in workloads
                 if w["queue"] == queue["queue"] and w["kind"] in ("job", "service")]
        assert queue["workloads"] == len(waits), queue
        assert (queue["p50_s"], queue["p95_s"]) == (nearest_rank(waits, 50), nearest_rank(waits, 95)), queue
        assert queue["histogram"] == [[bound, sum(wait <= bound for wait in waits)] if bound != "+Inf"
                                      else [bound, len(waits)] for bound, _count in queue["histogram"]], queue
        assert queue["over_max_wait"] == (bool(waits) and nearest_rank(waits, 95) > queue["max_wait_s"]), queue
    training = next(q for q in report["queues"] if q["queue"] == "training")
    assert training["over_max_wait"] and training["p95_s"] > 2
    # Devices allocated over time, per flavor: the device-seconds under each step line are the attempts'.
    attempts = [a for w in workloads for a in (await api(f"workloads/{w['id']}", as_user="root"))["attempts"]
                if a["placement"]]
    for flavor in report["utilisation"]:
        timeline = flavor["timeline"]
        area = sum(level * (timeline[i + 1][0] - at) for i, (at, level) in enumerate(timeline[:-1]))
        held = sum(sum(d["milli"] for slot in a["placement"]["slots"] for d in slot["devices"]) / 1000
                   * (a["ended_at"] - max(a["started_at"], report["since"]))
                   for a in attempts if a["placement"]["flavor"] == flavor["flavor"])
        assert area == pytest.approx(held, abs=0.01), flavor["flavor"]
        assert timeline[-1][1] == 0 and flavor["devices"] == sum(
            n["accelerator"]["count"] for n in nodes.values() if n["flavor"] == flavor["flavor"])
    a100 = next(f for f in report["utilisation"] if f["flavor"] == "a100-80g")
    assert max(level for _at, level in a100["timeline"]) == 2  # the holder's two devices
    # Usage and cost: the same rows GET /usage gives over the same hour, figure for figure.
    usage = await api("usage", as_user="root", since="10m")
    assert [row["key"] for row in usage["rows"]] == ["vision"]
    assert report["usage"]["rows"] == usage["rows"]  # nothing runs: the figures hold still
    # Alerts: every one fired in the period, as GET /alerts has it, the training queue's among them.
    alerts = {a["id"]: a for a in await api("alerts", as_user="root") if a["fired_at"] >= report["since"]}
    assert {a["id"]: (a["rule"], a["state"], a["subject"]) for a in report["alerts"]} == \
        {i: (a["rule"], a["state"], a["subject"]) for i, a in alerts.items()}
    assert (fired["id"], "resolved") in {(a["id"], a["state"]) for a in report["alerts"]}
    # The capacity advice, as GET /capacity gives it over the same period: more A100s for the training queue.
    advice = await api("capacity", as_user="root", since="10m")
    assert report["capacity"]["add"] == advice["add"]
    print("ADVICE", advice); assert any(add["queue"] == "training" and add["flavor"] == "a100-80g" for add in advice["add"]), advice
    assert [(r["flavor"], r["node"]) for r in report["capacity"]["release"]] == \
        [(r["flavor"], r["node"]) for r in advice["release"]]  # the shares move on with the clock
    [release] = [r for r in report["releases"] if r["outcome"] == "rolled-back"]
    assert release["service"] == "report-demo" and release["canary"]["error_rate"] == 1.0

    page = await jp_fetch("hetero", "api", "v1", "report", params={"since": "10m", "format": "html"},
                          headers={"Authorization": "token root-token"})
    assert page.headers["Content-Type"].startswith("text/html")
    body = page.body.decode()
    for section in ("checkpoints", "task-types", "queues", "utilisation", "usage", "alerts", "releases", "capacity"):
        assert f'id="{section}"' in body, section
    assert body.count("<svg") >= 3 and not re.search(r"<script|src=\"http|href=\"http", body)  # self-contained
    # Each workload id it names links to that workload's evidence chain, relative to the report's address.
    failed = preprocessing["errors"][0]["workload"]
    assert f'<a href="workloads/{failed}/evidence?format=html&amp;lang=en">{failed}</a>' in body
    followed = await jp_fetch("hetero", "api", "v1", "workloads", str(failed), "evidence", params={"format": "html"},
                              headers={"Authorization": "token root-token"})
    assert f"Evidence of workload {failed}" in followed.body.decode()
    chinese = await jp_fetch("hetero", "api", "v1", "report", params={"since": "10m", "format": "html", "lang": "zh"},
                             headers={"Authorization": "token root-token"})
    assert "验收报告" in chinese.body.decode()
    # The checkpoints in the report's language (each sentence's Chinese: tests/platform/governance/test_checkpoints.py),
    # the workloads they name still linked to their evidence.
    zh = await api("report", as_user="root", since="10m", lang="zh")
    assert [(c["task_type"], i["name"]) for c in zh["checkpoints"] for i in c["items"]] == \
        [(c["task_type"], i["name"]) for c in report["checkpoints"] for i in c["items"]]
    assert all(re.search(r"[\u4e00-\u9fff]", i["needs"]) for c in zh["checkpoints"] for i in c["items"] if i["needs"])
    assert f'<a href="workloads/{failed}/evidence?format=html&amp;lang=zh">{failed}</a>' in chinese.body.decode()
    await _render_in_chromium(body)


async def _render_in_chromium(html: str) -> None:
    """The HTML as Chromium lays it out, each section and chart shown; a full-page screenshot of it kept."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 900})
            await page.set_content(html)
            for section in ("checkpoints", "task-types", "queues", "utilisation", "usage", "alerts", "releases",
                            "capacity"):
                assert await page.locator(f"h2#{section}").is_visible(), section
            charts = page.locator("svg.chart")
            assert await charts.count() >= 3 and await charts.first.is_visible()
            assert await page.locator("#checkpoints + table").inner_text()  # the checkpoints, laid out
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            await page.screenshot(path=str(SCREENSHOT), full_page=True)
        finally:
            await browser.close()
