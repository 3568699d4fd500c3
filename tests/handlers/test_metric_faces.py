"""A workload's metrics where people read them, through a real server and a real job: the job reports its loss (and
a collective bandwidth) through ``jupyter_hetero.report()`` while the server measures its CPU time and the bytes it
writes. The same figures reach ``GET /metrics`` (``hetero_workload_metric`` while it runs), ``jupyter hetero metrics
ID`` and ``jupyter hetero status ID`` (separate processes), and the acceptance report (its task type's declared
metrics, and its checkpoints naming the measured figures). Another tenant's member is refused."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ..harness import until_async

pytestmark = [pytest.mark.usefixtures("team", "fast_sampling"), pytest.mark.team(vision_a100=2)]

# Reports three losses a second apart (at= keeps one point per second without sleeping), writes 8 MB to disk with
# fsync (counted as write_bytes), burns some CPU, then waits for its gate.
TRAIN = """
import os, sys, time
from jupyter_hetero import report
now = time.time()
for i, loss in enumerate((0.9, 0.5, 0.31)):
    report(loss=loss, at=now - 2 + i)
report(collective_bandwidth_gbps=12.5)
with open(os.path.join(os.environ['HETERO_OUTPUT_DIR'], 'weights.bin'), 'wb') as f:
    f.write(os.urandom(8 * 1024 * 1024)); f.flush(); os.fsync(f.fileno())
end = time.time() + 1.0
while time.time() < end: sum(range(1000))
print('reported', flush=True)
while not os.path.exists(sys.argv[1]): time.sleep(0.05)
"""


@pytest.fixture
def fast_sampling(hetero_config):
    hetero_config["metric_interval_s"] = 1.0


async def hetero_cli(*args: str, port: int, base_url: str, token: str) -> tuple[int, str, str]:
    """``jupyter hetero ARGS`` as its own process; off the event loop, which serves its requests."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jupyter_hetero.cli", *args, "--url", f"http://127.0.0.1:{port}{base_url}",
        "--token", token, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    return process.returncode, out.decode(), err.decode()


def workload_samples(exposition: str, workload: int) -> dict[str, tuple[float, dict]]:
    families = {family.name: family for family in text_string_to_metric_families(exposition)}
    return {sample.labels["name"]: (sample.value, sample.labels)
            for sample in families["hetero_workload_metric"].samples if sample.labels["workload"] == str(workload)}


async def test_a_jobs_reported_and_measured_figures_reach_prometheus_the_cli_and_the_report(
        api, api_error, wait_for, jp_root_dir, jp_http_port, jp_base_url):
    gate = jp_root_dir / "open"
    job = await api("workloads", "POST", {"kind": "job", "template": "training", "parameters": {"devices": 1},
                                          "command": [sys.executable, "-c", TRAIN, str(gate)]}, as_user="alice")
    wid = job["id"]

    async def figures() -> dict | None:
        answer = await api(f"workloads/{wid}/metrics", as_user="alice")
        series = {one["name"]: one for one in answer["series"]}
        ready = len(series.get("loss", {}).get("points", ())) == 3 and "collective_bandwidth_gbps" in series
        written = [value for _at, value, _attempt in series.get("io_write_bytes", {}).get("points", ())]
        return answer if ready and written and max(written) >= 8e6 and "cpu_seconds" in series else None

    answer = await until_async(figures, "the job's reported loss and its measured bytes and CPU time", timeout=60)
    series = {one["name"]: one for one in answer["series"]}
    assert [value for _at, value, _attempt in series["loss"]["points"]] == [0.9, 0.5, 0.31]
    assert series["loss"]["source"] == "reported" and series["io_write_bytes"]["source"] == "procfs"

    # Prometheus, while it runs: its latest loss (declared by the training template) and its measured figures.
    scraped = await api.text("metrics", as_user="root")
    samples = workload_samples(scraped, wid)
    assert samples["loss"][0] == 0.31 and samples["loss"][1] == {
        "workload": str(wid), "tenant": "vision", "template": "training", "name": "loss", "source": "reported"}
    assert samples["io_write_bytes"][0] >= 8e6 and samples["io_write_bytes"][1]["source"] == "procfs"
    assert samples["cpu_seconds"][0] > 0
    # A reported name the template does not declare stays off the exposition: its label values stay bounded.
    assert "collective_bandwidth_gbps" not in samples

    # The command line, as its own process: a row per metric, then what is not measured and why.
    cli = {"port": jp_http_port, "base_url": jp_base_url}
    code, out, err = await hetero_cli("metrics", str(wid), **cli, token="alice-token")
    assert code == 0, err
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line and not line.startswith("not ")}
    assert rows["loss"][1:] == ["0.31", "-", "reported", "3"], out
    assert rows["io_write_bytes"][2:4] == ["bytes", "procfs"] and float(rows["io_write_bytes"][1]) >= 8e6, out
    assert out.splitlines()[0].split() == ["NAME", "LATEST", "UNIT", "SOURCE", "POINTS"]
    assert any(line.startswith("not measured: device_util") for line in out.splitlines()), out  # emulated A100s
    code, out, _err = await hetero_cli("metrics", str(wid), "--format", "json", **cli, token="alice-token")
    assert json.loads(out)["workload"] == wid and "loss" in json.loads(out)["declared"]
    code, out, err = await hetero_cli("status", str(wid), **cli, token="alice-token")
    assert code == 0 and "  metrics:" in out and any(line.split()[:2] == ["loss", "0.31"] for line in out.splitlines())
    # Another tenant's member is refused, by the server, with the reason.
    code, out, err = await hetero_cli("metrics", str(wid), **cli, token="bob-token")
    assert code == 1 and err.startswith("error: ") and not out, (out, err)
    status, error = await api_error(f"workloads/{wid}/metrics", as_user="bob")
    assert status in (403, 404), error

    gate.touch()
    await wait_for(wid, lambda w: w["state"] == "succeeded", as_user="alice", timeout=60)
    assert not workload_samples(await api.text("metrics", as_user="root"), wid)  # only running workloads are exposed

    # The report: training's declared metrics from the samples, and its checkpoints naming what was measured.
    report = await api("report", as_user="root", since="10m")
    training = next(task for task in report["task_types"] if task["task_type"] == "training")
    declared = {m["name"]: m for m in training["metrics"]}
    assert list(declared) == ["device_util", "device_memory", "throughput_samples_per_s", "loss"]
    assert declared["loss"] == {"name": "loss", "unit": None, "workloads": 1, "min": 0.31, "mean": 0.31,
                                "max": 0.31, "sources": ["reported"]}
    assert declared["device_util"]["workloads"] == 0 and declared["device_util"]["sources"] == []
    items = {i["name"]: i for c in report["checkpoints"] if c["task_type"] == "training" for i in c["items"]}
    assert items["communication"]["status"] == "met"
    assert items["communication"]["evidence"] == f"collective_bandwidth_gbps 12.5 (reported) in workload {wid}"
    assert items["device-memory"]["status"] == "not-measured"  # emulated devices: no vendor tool measured them
    html = await api.text("report", as_user="root", since="10m", format="html")
    assert "Declared metric" in html and "collective_bandwidth_gbps 12.5 (reported) in workload <a " in html
