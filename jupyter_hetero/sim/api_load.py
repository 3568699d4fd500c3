"""API latency and submissions per second on a real server while its scheduler ticks at scale.

    result = run_api_load(Path("/work/base"), nodes=5000, workloads=5000, duration_s=30)
    result["endpoints"]["GET /queues"]["p99_ms"], result["submissions_per_s"], result["tick"]

Each run starts a private ``jupyter server`` with the extension of the checkout under test (its
folder first on ``PYTHONPATH``), an emulated inventory of ``nodes`` nodes and a store seeded with
``workloads`` queued jobs (long ``sleep`` commands), as that many earlier submissions would have
left it. The catalog's quota lets 136 of them run at once (128 four-core jobs and 8 one-GPU ones),
so every tick watches real processes and explains thousands of waiting workloads. Once they run,
concurrent clients call ``GET /queues``, ``GET /workloads/{id}`` and ``POST /workloads`` for a
fixed time (the mixed phase); each POST is one more queued job and wakes the scheduler. Then, on
the same server, only the POST clients submit for ``submit_s`` seconds (the submissions phase):
how many submissions per second the server takes while its ticks keep up with them. The server's
own tick timings come from ``GET /version`` where the checkout reports them (``scheduler``), else
none. Everything the run started (server, jobs) is killed at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil
import yaml
from tornado.httpclient import AsyncHTTPClient, HTTPRequest

__all__ = ["ENDPOINTS", "TARGETS", "drive", "endpoint_figures", "run_api_load"]

_TOKEN = "api-load-bench"
_OWNER = "bench"
ENDPOINTS = ("GET /queues", "GET /workloads/{id}", "POST /workloads")
# The targets on a 2-core machine at 5,000 nodes and 5,000 workloads.
TARGETS = {"api_p99_ms": 100.0, "submissions_per_s": 200.0, "tick_s": 0.5}

# (flavor, share of the nodes, node entry without name) of the emulated fleet.
_FLEET = [
    ("cpu", 0.50, {"cpu": 64, "memory": "256Gi", "frameworks": ["pandas", "pyarrow", "ray"]}),
    ("a100", 0.20, {"cpu": 128, "memory": "1Ti", "accelerator": {
        "vendor": "nvidia", "model": "A100-SXM4-80GB", "count": 8, "memory_mib": "80Gi",
        "driver_version": "550.54.15", "runtime": "cuda 12.4", "interconnect": "nvlink", "sharing": "milli",
        "frameworks": ["pytorch", "deepspeed", "megatron", "transformers"]}}),
    ("h100", 0.10, {"cpu": 192, "memory": "2Ti", "accelerator": {
        "vendor": "nvidia", "model": "H100-SXM5-80GB", "count": 8, "memory_mib": "80Gi",
        "driver_version": "550.54.15", "runtime": "cuda 12.4", "interconnect": "nvlink",
        "frameworks": ["pytorch", "deepspeed", "megatron"]}}),
    ("t4", 0.10, {"cpu": 32, "memory": "128Gi", "accelerator": {
        "vendor": "nvidia", "model": "Tesla T4", "count": 4, "memory_mib": "16Gi", "driver_version": "535.161.08",
        "runtime": "cuda 12.2", "sharing": "milli", "frameworks": ["pytorch", "onnxruntime"]}}),
    ("npu", 0.06, {"arch": "aarch64", "cpu": 192, "memory": "1536Gi", "accelerator": {
        "vendor": "ascend", "model": "910B3", "count": 8, "memory_mib": "64Gi", "driver_version": "24.1.0",
        "runtime": "cann 8.0", "interconnect": "hccs", "frameworks": ["pytorch", "torch_npu", "mindspore"]}}),
    ("mi300", 0.04, {"cpu": 128, "memory": "1Ti", "accelerator": {
        "vendor": "amd", "model": "MI300X", "count": 8, "memory_mib": "192Gi", "driver_version": "6.7.0",
        "runtime": "rocm 6.2", "interconnect": "xgmi", "frameworks": ["pytorch", "deepspeed"]}}),
]

# The one tenant's quota: 512 cores of CPU nodes (128 four-core preprocessing jobs) and 8 A100s
# (8 one-GPU training jobs): 136 run at once, the rest wait on quota, as in the issue.
_QUOTAS = {
    "cpu-standard": {"nominal": {"cpu": 512, "memory": "4Ti"}},
    "a100-80g": {"nominal": {"devices": 8, "cpu": 256, "memory": "2Ti"}},
}
EXPECTED_RUNNING = 136

# Runs inside the checkout under test: its own store and resolver write the queued jobs, in one
# transaction, exactly as its submissions would (a workload row and its `submitted` event). The checkout
# may be an older one, so the script names the modules by the paths every checkout has, and the resolver
# by its older paths (before platform/ was named so, and before services/ was split by world) where the
# current one is missing; nothing of them is imported here.
_SEED = r"""
import json, sys, time
from jupyter_hetero.catalog import load_catalog
try:
    from jupyter_hetero.platform.workloads.resolve import resolve
except ImportError:  # a checkout from before platform/ was named so
    try:
        from jupyter_hetero.services.workloads.resolve import resolve
    except ImportError:  # a checkout from before services/ was split by world
        from jupyter_hetero.services.resolve import resolve
from jupyter_hetero.store import Repository
from jupyter_hetero.store.tables import EventRow, WorkloadRow

db_url, catalog_file, cwd, owner, count = sys.argv[1:6]
catalog = load_catalog(catalog_file)
repository = Repository(db_url, clock=time.time)
mix = [("data-preprocessing", {})] * 4 + [("training", {"flavor": "a100-80g"})]
resolved = {name: resolve(catalog.template(name), params, catalog) for name, params in mix}
now = time.time()
with repository.session(write=True) as session:
    rows = []
    for i in range(int(count)):
        name, _params = mix[i % len(mix)]
        template = catalog.template(name)
        rows.append(WorkloadRow(
            kind="job", name=f"bench-{i}", tenant="default", user=owner, template=name, queue=template.queue,
            request=resolved[name].to_json(),
            spec={"payload": "command", "env": {}, "cwd": cwd, "command": ["sleep", "3600"]},
            state="queued", held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, attempts=0,
            time_limit_s=resolved[name].time_limit_s, created_at=now + i * 1e-3, updated_at=now + i * 1e-3,
        ))
    session.add_all(rows)
    session.flush()
    session.add_all([EventRow(workload_id=row.id, at=row.created_at, type="submitted",
                              reason="seeded by the api benchmark", data={}) for row in rows])
print(json.dumps({"first": rows[0].id, "last": rows[-1].id}))
"""


def _fleet(nodes: int) -> dict:
    entries = []
    left = nodes
    for index, (name, share, entry) in enumerate(_FLEET):
        replicas = left if index == len(_FLEET) - 1 else round(nodes * share)
        left -= replicas
        entries.append({"name": f"bench-{name}", "replicas": replicas, **entry})
    return {"nodes": entries}


def _catalog(repo: Path, target: Path) -> Path:
    data = yaml.safe_load((repo / "jupyter_hetero" / "catalog" / "default_catalog.yaml").read_text(encoding="utf-8"))
    data["tenants"] = [{"name": "default", "display": {"en": "Benchmark", "zh": "基准测试"}, "users": [_OWNER],
                        "cost_centre": "CC-BENCH", "quotas": _QUOTAS}]
    data["default_tenant"] = "default"
    target.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return target


def _environment(repo: Path, root: Path) -> dict[str, str]:
    env = dict(os.environ)
    for leaked in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTER_TOKEN"):
        env.pop(leaked, None)
    env.update(
        PYTHONPATH=os.pathsep.join([str(repo), *filter(None, [os.environ.get("PYTHONPATH")])]),
        JUPYTER_CONFIG_DIR=str(root / "config"), JUPYTER_DATA_DIR=str(root / "data"),
        JUPYTER_RUNTIME_DIR=str(root / "runtime"), JUPYTER_PLATFORM_DIRS="0", PYTHONUNBUFFERED="1",
    )
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Server:
    """A ``jupyter server`` subprocess of the checkout under test, in its own process group."""

    def __init__(self, repo: Path, root: Path, *, nodes_file: Path, catalog_file: Path, db_url: str,
                 work_dir: Path, startup_timeout: float = 180.0):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = root / "server.log"
        args = [sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root", "--ip=127.0.0.1",
                f"--port={self.port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={_TOKEN}",
                f"--ServerApp.root_dir={root / 'notebooks'}", f"--HeteroApp.db_url={db_url}",
                f"--HeteroApp.catalog_file={catalog_file}", f"--HeteroApp.emulated_nodes_file={nodes_file}",
                "--HeteroApp.discover_local=False", f"--HeteroApp.work_dir={work_dir}",
                f"--HeteroApp.owner_name={_OWNER}"]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(args, cwd=root / "notebooks", env=_environment(repo, root),
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)  # teardown reaches the whole group
        deadline = time.monotonic() + startup_timeout
        while True:
            try:
                self.call("GET", "hetero/api/v1/version", timeout=5)
                return
            except (OSError, ValueError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the benchmark's jupyter server did not start; log {self.log_path}:\n"
                                       + self.log_tail()) from None
                time.sleep(0.25)  # poll interval, bounded by the deadline above

    def call(self, method: str, path: str, body: dict | None = None, timeout: float = 120):
        request = urllib.request.Request(self.url + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Authorization": f"token {_TOKEN}"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no log>"

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(30)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)


def _scheduler_ticks(server) -> dict | None:
    """The loop's figures: ``GET /scheduler/ticks``, or ``scheduler`` on ``GET /version`` for a commit before it."""
    try:
        return server.call("GET", "hetero/api/v1/scheduler/ticks")
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise
        return server.call("GET", "hetero/api/v1/version").get("scheduler")


def _kill_jobs(work_dir: Path) -> int:
    """Kill the job process groups this run started: jobs outlive their server by design."""
    killed = 0
    marker = str(work_dir)
    for process in psutil.process_iter(["pid", "cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "jupyter_hetero.kernel.runner" in cmdline and any(marker in part for part in cmdline):
            try:
                os.killpg(process.info["pid"], signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
    return killed


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


async def drive(url: str, ids: Sequence[int], duration_s: float, clients: int,
                endpoints: tuple[str, ...] = ENDPOINTS, *, pollers: int = 0, poll_interval_s: float = 2.0,
                submissions: int = 0, api: str = "hetero/api/v1/", body: dict | None = None,
                token: Callable[[str, int | None], str] | None = None) -> dict:
    """Latencies in ms and errors per endpoint, and the ids of the acknowledged submissions. Closed-loop:
    ``clients`` per endpoint, each calling again as soon as it is answered, for ``duration_s``. Polling
    (``pollers`` > 0): that many readers, half on each GET endpoint, each calling every ``poll_interval_s``
    (jittered) as the panel does, while ``clients`` submitters POST until ``submissions`` are acknowledged (or
    ``duration_s`` passes). Requests go to ``url + api + route``; each one's token is ``token(endpoint, id)``
    (``id``: the workload a GET /workloads/{id} reads, else None), this module's server's by default.

        asyncio.run(drive(hub_url, ids, 300, 4, pollers=200, submissions=2000,
                          api="services/hetero/hetero/api/v1/", token=lambda endpoint, wid: owner_token[wid]))
    """
    readers = [name for name in endpoints if name.startswith("GET")]
    counts = {name: clients for name in endpoints}
    if pollers:
        counts.update({name: pollers // len(readers) + (i < pollers % len(readers)) for i, name in enumerate(readers)})
    http = AsyncHTTPClient(force_instance=True, max_clients=sum(counts.values()))
    token = token or (lambda endpoint, workload_id: _TOKEN)
    payload = json.dumps(body or {"kind": "job", "template": "data-preprocessing", "command": ["sleep", "3600"]})
    latencies: dict[str, list[float]] = {name: [] for name in endpoints}
    errors: dict[str, list[str]] = {name: [] for name in endpoints}
    acknowledged: list[int] = []
    deadline = time.monotonic() + duration_s
    chooser = random.Random(7)
    submitted = [0]

    def request(endpoint: str) -> HTTPRequest:
        workload_id = chooser.choice(ids) if endpoint == "GET /workloads/{id}" else None
        headers = {"Authorization": f"token {token(endpoint, workload_id)}", "Content-Type": "application/json"}
        if endpoint == "GET /queues":
            return HTTPRequest(url + api + "queues", headers=headers, request_timeout=60)
        if endpoint == "GET /workloads/{id}":
            return HTTPRequest(url + api + f"workloads/{workload_id}", headers=headers, request_timeout=60)
        return HTTPRequest(url + api + "workloads", method="POST", body=payload, headers=headers, request_timeout=60)

    def done() -> bool:  # the time is up, or (polling) every submission went out
        return time.monotonic() >= deadline or bool(pollers and submissions and submitted[0] >= submissions)

    async def client(endpoint: str) -> None:
        polling = bool(pollers) and endpoint in readers
        if polling:  # the panels opened at different moments
            await asyncio.sleep(chooser.uniform(0, poll_interval_s))
        while not done():
            if endpoint == "POST /workloads":
                submitted[0] += 1
            started = time.perf_counter()
            response = await http.fetch(request(endpoint), raise_error=False)
            elapsed = (time.perf_counter() - started) * 1000
            if response.code in (200, 201):
                latencies[endpoint].append(elapsed)
                if endpoint == "POST /workloads":
                    acknowledged.append(json.loads(response.body)["id"])
            else:
                errors[endpoint].append(f"{response.code} {response.reason}")
            if polling:
                await asyncio.sleep(poll_interval_s * chooser.uniform(0.5, 1.5))

    started = time.monotonic()
    await asyncio.gather(*(client(endpoint) for endpoint in endpoints for _ in range(counts[endpoint])))
    elapsed = time.monotonic() - started
    http.close()
    return {"elapsed_s": elapsed, "latencies": latencies, "errors": errors, "clients": counts,
            "acknowledged": acknowledged}


def endpoint_figures(driven: dict) -> dict:
    """Per endpoint of a :func:`drive` result: requests answered, errors (and the first kinds), p50, p99, max ms."""
    return {
        name: {
            "ok": len(values),
            "errors": len(driven["errors"][name]),
            "first_errors": sorted(set(driven["errors"][name]))[:3],
            "p50_ms": _round(_percentile(values, 50)),
            "p99_ms": _round(_percentile(values, 99)),
            "max_ms": _round(max(values) if values else None),
        }
        for name, values in driven["latencies"].items()
    }


def _wait_running(server: _Server, expected: int, timeout: float) -> tuple[int, float]:
    """Poll until ``expected`` jobs run (or the count stops growing for 20 s); (running, seconds waited)."""
    started = time.monotonic()
    best, best_at = 0, started
    while True:
        running = len(server.call("GET", "hetero/api/v1/workloads?state=running&limit=5000"))
        now = time.monotonic()
        if running > best:
            best, best_at = running, now
        if running >= expected or now - started > timeout or (best and now - best_at > 20):
            return running, now - started
        time.sleep(1.0)  # poll interval, bounded by the timeout above


def run_api_load(repo: Path, *, nodes: int = 5000, workloads: int = 5000, duration_s: float = 30.0,
                 clients: int = 4, submit_s: float = 15.0, settle_s: float = 3.0, keep: bool = False,
                 pollers: int = 0, poll_interval_s: float = 2.0, submissions: int = 0) -> dict:
    """One benchmark run against the checkout at ``repo``: figures per endpoint and the server's tick
    timings in the mixed phase, then submissions per second in the submissions phase (``submit_s``
    seconds, the same number of POST clients alone; 0 skips it). With ``pollers``, the mixed phase is the
    polling one (see :func:`drive`): readers every ``poll_interval_s`` while ``submissions`` are made."""
    repo = repo.resolve()
    root = Path(tempfile.mkdtemp(prefix="hetero-bench-api-"))
    for folder in ("notebooks", "config", "data", "runtime"):
        (root / folder).mkdir()
    work_dir = root / "work"
    db_url = f"sqlite:///{root / 'hetero.sqlite'}"
    nodes_file = root / "nodes.yaml"
    nodes_file.write_text(yaml.safe_dump(_fleet(nodes)), encoding="utf-8")
    catalog_file = _catalog(repo, root / "catalog.yaml")
    env = _environment(repo, root)
    imported = subprocess.run([sys.executable, "-c", "import jupyter_hetero; print(jupyter_hetero.__file__)"],
                              cwd=root, env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not Path(imported).resolve().is_relative_to(repo):
        raise RuntimeError(f"{repo} is not what the server would run: jupyter_hetero comes from {imported}")
    seeded_at = time.monotonic()
    seeded = json.loads(subprocess.run(
        [sys.executable, "-c", _SEED, db_url, str(catalog_file), str(root / "notebooks"), _OWNER, str(workloads)],
        cwd=root, env=env, capture_output=True, text=True, check=True).stdout)
    seed_s = time.monotonic() - seeded_at
    load_before = os.getloadavg()
    server = None
    try:
        started_at = time.monotonic()
        server = _Server(repo, root, nodes_file=nodes_file, catalog_file=catalog_file, db_url=db_url,
                         work_dir=work_dir)
        start_s = time.monotonic() - started_at
        running, waited_s = _wait_running(server, EXPECTED_RUNNING, timeout=240)
        time.sleep(settle_s)  # let the launch burst's tick finish before measuring steady state
        ticks_before = (_scheduler_ticks(server) or {}).get("ticks")
        load_started = time.time()
        driven = asyncio.run(drive(server.url, range(seeded["first"], seeded["last"] + 1), duration_s, clients,
                                    pollers=pollers, poll_interval_s=poll_interval_s, submissions=submissions))
        version = {"scheduler": _scheduler_ticks(server)}
        submitted = None
        if submit_s > 0:
            submit_started = time.time()
            posted = asyncio.run(drive(server.url, range(seeded["first"], seeded["last"] + 1), submit_s, clients,
                                        endpoints=("POST /workloads",)))
            after = {"scheduler": _scheduler_ticks(server)}
            submitted = _submissions(posted, clients, (version.get("scheduler") or {}).get("ticks"),
                                     after.get("scheduler"), submit_started)
    finally:
        if server is not None:
            server.stop()
        killed = _kill_jobs(work_dir)
    endpoints = endpoint_figures(driven)
    scheduler = version.get("scheduler")
    result = {
        "repo": str(repo),
        "imported_from": imported,
        "nodes": nodes,
        "workloads": workloads,
        "running": running,
        "seconds_to_running": round(waited_s, 1),
        "seed_s": round(seed_s, 1),
        "server_start_s": round(start_s, 1),
        "duration_s": round(driven["elapsed_s"], 1),
        "clients_per_endpoint": clients,
        "clients": driven["clients"],
        "poll_interval_s": poll_interval_s if pollers else None,
        "endpoints": endpoints,
        "submissions_per_s": round(endpoints["POST /workloads"]["ok"] / driven["elapsed_s"], 1),
        "tick": _tick_summary(scheduler, ticks_before, load_started),
        "submissions_phase": submitted,
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "cpus": os.cpu_count(),
        "jobs_killed": killed,
        "targets": TARGETS,
    }
    if keep:
        result["kept"] = str(root)
    else:
        shutil.rmtree(root, ignore_errors=True)
    return result


def _submissions(posted: dict, clients: int, ticks_before: int | None, scheduler: dict | None,
                 since: float) -> dict:
    """The submissions phase: POST clients alone, submissions per second, latencies, and the ticks."""
    values = posted["latencies"]["POST /workloads"]
    return {
        "clients": clients,
        "duration_s": round(posted["elapsed_s"], 1),
        "ok": len(values),
        "errors": len(posted["errors"]["POST /workloads"]),
        "submissions_per_s": round(len(values) / posted["elapsed_s"], 1),
        "p50_ms": _round(_percentile(values, 50)),
        "p99_ms": _round(_percentile(values, 99)),
        "max_ms": _round(max(values) if values else None),
        "tick": _tick_summary(scheduler, ticks_before, since),
    }


def _tick_summary(scheduler: dict | None, ticks_before: int | None, since: float) -> dict | None:
    """p50/p99/max of the server's ticks that started during the load (the launch burst before it is
    left out) and their mean per phase; None where the checkout reports no timings."""
    if not scheduler:
        return None
    recent = [tick for tick in scheduler.get("recent") or [] if tick["at"] >= since]
    totals = [tick["total_s"] for tick in recent]
    phases = sorted({key for tick in recent for key in tick if key.endswith("_s") and key != "total_s"})
    return {
        "ticks_during_load": scheduler.get("ticks", 0) - (ticks_before or 0),
        "wakes": scheduler.get("wakes"),
        "recent": len(recent),
        "p50_s": _round(_percentile(totals, 50), 3),
        "p99_s": _round(_percentile(totals, 99), 3),
        "max_s": _round(max(totals) if totals else None, 3),
        "mean_s_per_phase": {phase: _round(sum(t.get(phase, 0) for t in recent) / len(recent), 3) for phase in phases}
        if recent else {},
    }


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)
