"""A workload's figures through a real server: measured from its real processes (CPU, memory, storage IO), reported
by its own code through ``jupyter_hetero.report()``, bounded, and confined to the workload and its owner."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from sqlalchemy import event

from ..conftest import _token
from .test_credentials import as_credential
from .test_kernels import kernelspecs  # noqa: F401 - the kernelspecs fixture
from .test_lifecycle import gate  # noqa: F401 - the gate fixture

pytestmark = pytest.mark.usefixtures("team")

MIB = 1024 * 1024
WRITTEN_MIB, READ_MIB = 8, 4

# Writes WRITTEN_MIB to storage, drops the file from the page cache so that reading READ_MIB of it back reaches the
# disk, burns some CPU, then waits (alive, so that it is sampled) until the test opens its gate.
IO_JOB = '''
import os, sys, time
gate = sys.argv[1] if len(sys.argv) > 1 else GATE
path = os.path.join(os.environ["HETERO_OUTPUT_DIR"], "data.bin")
with open(path, "wb") as out:
    out.write(os.urandom(WRITTEN_MIB << 20))
    out.flush()
    os.fsync(out.fileno())
source = os.open(path, os.O_RDONLY)
os.posix_fadvise(source, 0, 0, os.POSIX_FADV_DONTNEED)
left = READ_MIB << 20
while left > 0:
    chunk = os.read(source, min(left, 1 << 20))
    if not chunk:
        break
    left -= len(chunk)
os.close(source)
busy = time.process_time() + 0.3
while time.process_time() < busy:
    pass
print("io done", flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(gate) and time.monotonic() < deadline:
    time.sleep(0.05)
'''

# Reports loss three times (the fourth, in the third's second, replaces it), then tries what it may not.
REPORTING_JOB = '''
import json, math, os, time
from jupyter_hetero import report
from jupyter_hetero.notebook.report import ReportRefused, NotInWorkload
start = math.floor(time.time())  # whole seconds: the fourth report lands in the third's second
for seconds_ago, loss in ((2, 0.9), (1, 0.5), (0, 0.3)):
    report(loss=loss, step=int(10 * (3 - seconds_ago)), at=start - seconds_ago)
report({"loss": 0.25}, at=start + 0.5)
tried = {}
for name, attempt in (("nan", lambda: report(loss=math.nan)), ("measured", lambda: report(cpu_util=5.0)),
                      ("other", lambda: report(environ={**os.environ, "HETERO_WORKLOAD_ID": str(OTHER)}, loss=1.0)),
                      ("outside", lambda: report(environ={}, loss=1.0))):
    try:
        attempt()
        tried[name] = "stored"
    except ReportRefused as refused:
        tried[name] = [refused.status, refused.field, refused.body.get("reason")]
    except NotInWorkload as outside:
        tried[name] = ["outside", str(outside)]
print("TRIED " + json.dumps(tried), flush=True)
'''


def _series(answer: dict) -> dict[str, dict]:
    return {one["name"]: one for one in answer["series"]}


async def _metrics_until(api, workload_id: int, predicate, *, as_user: str, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        answer = await api(f"workloads/{workload_id}/metrics", as_user=as_user)
        if predicate(_series(answer)):
            return answer
        assert time.monotonic() < deadline, f"the figures never came: {answer}"
        await asyncio.sleep(0.2)


def _code(template: str, **names) -> str:
    return "".join(f"{name} = {value!r}\n" for name, value in names.items()) + template


@pytest.fixture
def quick_samples(hetero_config):
    hetero_config["metric_interval_s"] = 1.0


async def test_a_jobs_cpu_memory_and_storage_io_are_measured_from_its_processes(
        quick_samples, api, wait_for, jp_root_dir, jp_serverapp):
    platform = jp_serverapp.web_app.settings["hetero_platform"]
    inserts: list[set[int]] = []

    def count(_conn, _cursor, statement, parameters, _context, executemany):
        if statement.lstrip().upper().startswith("INSERT INTO METRIC_SAMPLES"):
            rows = parameters if executemany else [parameters]
            inserts.append({row[0] if isinstance(row, (tuple, list)) else row["workload_id"] for row in rows})

    event.listen(platform.repository.engine, "before_cursor_execute", count)
    gate = jp_root_dir / "io-gate"
    code = _code(IO_JOB, GATE=str(gate), WRITTEN_MIB=WRITTEN_MIB, READ_MIB=READ_MIB)
    first = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing", "code": code},
                      as_user="alice")
    second = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing", "code": code},
                       as_user="alice")

    def most(series, name):
        return max((v for _at, v, _a in series.get(name, {}).get("points", [])), default=0)

    def measured(series):  # the job writes, then reads back: wait for both (a sample may fall between them)
        return (most(series, "io_write_bytes") >= WRITTEN_MIB * MIB and most(series, "io_read_bytes") >= READ_MIB * MIB
                and "memory_rss" in series and "cpu_seconds" in series)

    answers = [await _metrics_until(api, job["id"], measured, as_user="alice") for job in (first, second)]
    gate.write_text("open")
    answer = answers[0]
    series = _series(answer)
    assert answer["declared"] == ["cpu_util", "memory_rss", "io_read_bytes"]
    assert max(v for _at, v, _a in series["io_read_bytes"]["points"]) >= READ_MIB * MIB
    assert max(v for _at, v, _a in series["cpu_seconds"]["points"]) > 0
    assert all(v > 0 for _at, v, _a in series["memory_rss"]["points"])
    assert (series["memory_rss"]["unit"], series["memory_rss"]["source"]) == ("MiB", "procfs")
    assert series["io_write_bytes"]["unit"] == "bytes" and series["cpu_seconds"]["unit"] == "s"
    assert {point[2] for point in series["memory_rss"]["points"]} == {1}  # the attempt each point belongs to
    not_measured = {entry["name"]: entry["why"] for entry in answer["not_measured"]}
    assert "host's network namespace" in not_measured["net_rx_bytes"]

    done = await wait_for(first["id"], lambda w: w["state"] in ("succeeded", "failed"), as_user="alice")
    assert done["state"] == "succeeded", await api.text(f"workloads/{first['id']}/logs", as_user="alice")
    summary = done["attempts"][0]["metrics"]
    assert summary["io_write_bytes"] >= WRITTEN_MIB * MIB and summary["cpu_seconds"] > 0 and summary["peak_rss_mib"] > 0
    assert "net_tx_bytes" in summary["not_measured"]
    # Every tick wrote its samples in one statement: one that held both running jobs' shows they were batched.
    assert any({first["id"], second["id"]} <= ids for ids in inserts), inserts
    zh = await api(f"workloads/{first['id']}/metrics", as_user="alice", lang="zh")
    assert zh["not_measured"] == [] or all(entry["why"] for entry in zh["not_measured"])


async def test_a_job_reports_its_loss_and_may_report_nothing_else_nor_for_another(api, wait_for, gate):  # noqa: F811
    other = (await api("workloads", "POST", gate.job("others-gate", template="training"), as_user="bob"))["id"]
    job = await api("workloads", "POST", {"kind": "job", "template": "training",
                                          "code": _code(REPORTING_JOB, OTHER=other)}, as_user="alice")
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), as_user="alice", timeout=60)
    log = await api.text(f"workloads/{job['id']}/logs", as_user="alice")
    assert done["state"] == "succeeded", log
    tried = json.loads(next(line for line in log.splitlines() if line.startswith("TRIED ")).removeprefix("TRIED "))
    assert tried["nan"][:2] == [400, "metrics.loss"]
    assert tried["measured"][:2] == [400, "metrics.cpu_util"]
    assert tried["other"][0] == 403
    assert tried["outside"][0] == "outside" and "HETERO_WORKLOAD_ID" in tried["outside"][1]

    answer = await api(f"workloads/{job['id']}/metrics", as_user="alice")
    series = _series(answer)
    loss = series["loss"]
    assert (loss["source"], loss["unit"]) == ("reported", None)
    assert [value for _at, value, _attempt in loss["points"]] == [0.9, 0.5, 0.25]
    assert [value for _at, value, _attempt in series["step"]["points"]] == [10.0, 20.0, 30.0]
    assert "loss" in answer["declared"]
    why = {entry["name"]: entry["why"] for entry in answer["not_measured"]}
    assert "emulated node's devices are never measured" in why["device_util"]  # it ran on an emulated A100
    assert "throughput_samples_per_s" in why and "jupyter_hetero.report()" in why["throughput_samples_per_s"]
    await api(f"workloads/{other}", "DELETE", as_user="bob")


@pytest.mark.parametrize(("body", "field"), [
    pytest.param({"metrics": {"loss": "low"}}, "metrics.loss", id="a value that is not a number"),
    pytest.param({"metrics": {"loss": True}}, "metrics.loss", id="a boolean is not a figure"),
    pytest.param({"metrics": {"Loss": 1}}, "metrics.Loss.[key]", id="a name outside the rule"),
    pytest.param({"metrics": {f"m{i}": 1 for i in range(51)}}, "metrics", id="more than 50 names"),
    pytest.param({"metrics": {}}, "metrics", id="no figure"),
    pytest.param({"metrics": {"loss": 1}, "at": 4e9}, "at", id="a time far in the future"),
    pytest.param({"metrics": {"memory_rss": 1}}, "metrics.memory_rss", id="a measured name"),
    pytest.param({"metrics": {"loss": 1}, "extra": 1}, "extra", id="an unknown field"),
])
async def test_a_bad_report_is_a_400_naming_the_field(api, api_error, gate, wait_for, body, field):  # noqa: F811
    job = (await api("workloads", "POST", gate.job("bad-gate", template="data-preprocessing"), as_user="alice"))["id"]
    await wait_for(job, lambda w: w["state"] == "running", as_user="alice")
    status, error = await api_error(f"workloads/{job}/metrics", "POST", body, as_user="alice")
    assert (status, error["field"]) == (400, field), error
    await api(f"workloads/{job}", "DELETE", as_user="alice")


async def test_only_the_owner_or_the_workload_reports_and_only_its_tenant_reads(
        api, api_error, gate, wait_for, jp_serverapp, jp_fetch):  # noqa: F811
    job = (await api("workloads", "POST", gate.job("owner-gate", template="data-preprocessing"), as_user="alice"))["id"]
    await wait_for(job, lambda w: w["state"] == "running", as_user="alice")
    stored = await api(f"workloads/{job}/metrics", "POST", {"metrics": {"accuracy": 0.5}}, as_user="alice")
    assert (stored["stored"], stored["attempt"]) == (["accuracy"], 1)

    status, error = await api_error(f"workloads/{job}/metrics", "POST", {"metrics": {"accuracy": 1}}, as_user="bob")
    assert status == 403 and "owner alice" in error["message"]
    # Carol administers alice's tenant: she may read the figures, not make them up.
    status, error = await api_error(f"workloads/{job}/metrics", "POST", {"metrics": {"accuracy": 1}}, as_user="carol")
    assert status == 403
    assert "accuracy" in _series(await api(f"workloads/{job}/metrics", as_user="carol"))
    status, error = await api_error(f"workloads/{job}/metrics", as_user="bob")
    assert status == 403 and "belongs to tenant vision" in error["message"]

    # Another workload's credential, even of the same user, reaches only its own figures.
    sibling = (await api("workloads", "POST", gate.job("sibling-gate", template="data-preprocessing"),
                         as_user="alice"))["id"]
    await wait_for(sibling, lambda w: w["state"] == "running", as_user="alice")
    credential = jp_serverapp.web_app.settings["hetero_platform"].credentials.issue(sibling)
    status, error = await as_credential(jp_fetch, credential, "workloads", str(job), "metrics")
    assert status == 403 and f"workload {job} is not alice's own" in error["reason"]
    status, _ = await as_credential(jp_fetch, credential, "workloads", str(sibling), "metrics")
    assert status == 200
    assert (await api_error("workloads/999999/metrics", as_user="alice"))[0] == 404
    for workload in (job, sibling):
        await api(f"workloads/{workload}", "DELETE", as_user="alice")
    await wait_for(job, lambda w: w["state"] == "cancelled", as_user="alice")
    status, error = await api_error(f"workloads/{job}/metrics", "POST", {"metrics": {"accuracy": 1}}, as_user="alice")
    assert (status, error.get("reason")) == (409, "not-running")


async def test_a_kernels_figures_say_why_they_are_not_measured(kernelspecs, api, jp_fetch):  # noqa: F811
    started = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "hetero-cpu"}),
                             headers={"Authorization": f"token {_token('alice')}"})
    kernel_id = json.loads(started.body)["id"]
    workload = next(w for w in await api("workloads", kind="kernel", as_user="alice")
                    if w["spec"]["kernel_id"] == kernel_id)
    answer = await api(f"workloads/{workload['id']}/metrics", as_user="alice")
    why = {entry["name"]: entry["why"] for entry in answer["not_measured"]}
    assert answer["declared"] and answer["series"] == []
    assert all("not measured for a kernel" in why[name] for name in answer["declared"]
               if name in ("cpu_util", "memory_rss", "device_util")), why
    await jp_fetch("api", "kernels", kernel_id, method="DELETE", headers={"Authorization": f"token {_token('alice')}"})


@pytest.fixture
def slow_reports(hetero_config):
    """Three reports at once, then one every hundred seconds: the bucket does not refill during the test."""
    hetero_config["metric_reports_per_s"] = 0.01
    hetero_config["metric_report_burst"] = 3


async def test_reports_past_a_workloads_bucket_are_a_429_before_any_write_and_other_workloads_are_unaffected(
        slow_reports, api, gate, wait_for, jp_serverapp, jp_fetch):  # noqa: F811
    from tornado.httpclient import HTTPClientError

    first, second = [(await api("workloads", "POST", gate.job(f"rate-gate-{n}", template="data-preprocessing"),
                                as_user="alice"))["id"] for n in (1, 2)]
    for job in (first, second):
        await wait_for(job, lambda w: w["state"] == "running", as_user="alice")
    repository = jp_serverapp.web_app.settings["hetero_platform"].repository

    async def post(job: int, user: str, loss: float):
        try:
            answer = await jp_fetch("hetero", "api", "v1", "workloads", str(job), "metrics", method="POST",
                                    body=json.dumps({"metrics": {"loss": loss}, "at": time.time() - 10 + loss}),
                                    headers={"Authorization": f"token {_token(user)}"})
        except HTTPClientError as refusal:
            return refusal.code, json.loads(refusal.response.body), refusal.response.headers
        return answer.code, json.loads(answer.body), answer.headers

    # Someone who may not report is refused first, and takes nothing from the workload's bucket.
    for n in range(5):
        assert (await post(first, "bob", n))[0] == 403
    assert [(await post(first, "alice", n))[0] for n in range(3)] == [200, 200, 200]

    statements: list[str] = []

    def seen(_conn, _cursor, statement, *_rest):
        if "metric_samples" in statement.lower() and not statement.lstrip().upper().startswith("SELECT"):
            statements.append(statement)

    event.listen(repository.engine, "before_cursor_execute", seen)
    status, error, headers = await post(first, "alice", 4)
    event.remove(repository.engine, "before_cursor_execute", seen)
    assert status == 429 and error["reason"] == "rate-limited", error
    assert int(headers["Retry-After"]) >= 1
    assert f"workload {first} reported its figures more than 3 times at once" in error["message"]
    assert statements == []  # refused before any write
    assert len(repository.metric_series(first)["loss"].points) == 3

    # Another workload of the same user has its own bucket.
    assert [(await post(second, "alice", n))[0] for n in range(3)] == [200, 200, 200]
    assert len(repository.metric_series(second)["loss"].points) == 3
    for job in (first, second):
        await api(f"workloads/{job}", "DELETE", as_user="alice")


@pytest.fixture
def brisk_reports(hetero_config):
    hetero_config["metric_reports_per_s"] = 2.0
    hetero_config["metric_report_burst"] = 2


async def test_report_waits_out_a_429_so_a_tight_loop_slows_down_and_is_not_broken(
        brisk_reports, api, wait_for):
    code = ("import time\nfrom jupyter_hetero import report\nstart = time.time()\n"
            "for step in range(5):\n    report(loss=1.0 / (step + 1), at=start - 10 + step)\n"
            "print('REPORTED in', round(time.time() - start, 1), flush=True)\n")
    job = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing", "code": code},
                    as_user="alice")
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), as_user="alice", timeout=60)
    log = await api.text(f"workloads/{job['id']}/logs", as_user="alice")
    assert done["state"] == "succeeded", log
    took = float(next(line for line in log.splitlines() if line.startswith("REPORTED in")).split()[-1])
    assert took >= 1.0, log  # two at once, then it waited for the bucket at least once
    series = _series(await api(f"workloads/{job['id']}/metrics", as_user="alice"))
    assert len(series["loss"]["points"]) == 5
