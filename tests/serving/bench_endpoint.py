"""Endpoint overhead and canary decision time, on a real `jupyter server` with the extension.

    python -m tests.serving.bench_endpoint --clients 8 --requests 300 --out endpoint.json

A two-replica service of the tests' model server runs on emulated nodes. The same bounded load (``clients``
threads on 127.0.0.1, each sending ``requests`` predictions) goes once through the endpoint
(/hetero/endpoints/<tenant>/<name>/, with the server's token) and once straight to a replica's port, in the same run;
then a healthy revision and a failing one are rolled out under load, and the time from the canary's first
ready replica to its verdict is measured against the window it is judged over.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH
from jupyter_hetero.notebook.client import HeteroClient

from ..conftest import DEMO_NODES
from ..harness import ServerLayout, kill_runners_under, start_hetero_server, until

MODEL = [sys.executable, str(Path(__file__).with_name("model_server.py"))]
WINDOW_S, MIN_REQUESTS = 5, 50


def _catalog(folder: Path) -> Path:
    """The default catalog, its canary judged over WINDOW_S seconds and MIN_REQUESTS requests."""
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    for template in data["templates"]:
        if template["name"] == "online-inference":
            template["canary"] = {"replicas": 1, "traffic": 0.2, "window_s": WINDOW_S, "min_requests": MIN_REQUESTS}
    path = folder / "catalog.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _load(url: str, token: str | None, clients: int, requests: int) -> dict:
    """``clients`` threads each sending ``requests`` predictions to ``url``: latencies (ms), errors, throughput."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    body = json.dumps({"inputs": [1, 2, 3]}).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"token {token}"} if token else {})}

    def client() -> None:
        for _ in range(requests):
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=30) as response:
                    response.read()
                    ok = response.status == 200
            except OSError:
                ok = False
            with lock:
                latencies.append((time.perf_counter() - started) * 1000)
                errors[0] += not ok

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {"requests": len(ordered), "errors": errors[0], "seconds": round(elapsed, 3),
            "requests_per_s": round(len(ordered) / elapsed, 1),
            "p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(ordered[int(0.95 * len(ordered)) - 1], 2),
            "p99_ms": round(ordered[int(0.99 * len(ordered)) - 1], 2)}


def _decision(client: HeteroClient, endpoint: str, token: str, name: str, env: dict) -> dict:
    """Roll out ``env`` under a steady load; the verdict and how long after the window it came."""
    stop = threading.Event()

    def steady() -> None:
        while not stop.is_set():
            _load(endpoint, token, 2, 10)

    loader = threading.Thread(target=steady)
    loader.start()
    try:
        rolled = client.roll_out(name, env=env)
        revision = rolled["rollout"]["revision"]
        decided = until(lambda: (s := client.service(name))["rollout"] is None and s, "the canary's verdict",
                        timeout=120)
    finally:
        stop.set()
        loader.join()
    entry = next(e for e in decided["revisions"] if e["revision"] == revision)
    return {"outcome": entry["outcome"], "violations": entry.get("violations"), "window_s": WINDOW_S,
            "canary_requests": entry["canary"]["requests"],
            "ready_to_verdict_s": round(entry["at"] - entry["ready_at"], 2),
            "after_window_s": round(entry["at"] - entry["ready_at"] - WINDOW_S, 2),
            "rollout_to_verdict_s": round(entry["at"] - entry["started_at"], 2)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=300, help="per client")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        layout = ServerLayout.create(Path(folder))
        catalog = _catalog(Path(folder))
        with start_hetero_server(layout, "bench", DEMO_NODES, f"--HeteroApp.catalog_file={catalog}") as server:
            client = HeteroClient(server.base_url, server.token)
            client.serve(name="bench", command=MODEL, replicas=2, parameters={"devices": 1})
            service = until(lambda: (s := client.service("bench"))["ready_replicas"] == 2 and s,
                            "two ready replicas", timeout=120)
            endpoint = f"{server.base_url}hetero/endpoints/default/bench/predict"
            replica = f"http://127.0.0.1:{service['replica_workloads'][0]['port']}/predict"
            _load(endpoint, server.token, 2, 20)  # warm both paths
            _load(replica, None, 2, 20)
            result = {"clients": args.clients, "requests_per_client": args.requests}
            for label, clients in (("one_client", 1), ("concurrent", args.clients)):
                through = _load(endpoint, server.token, clients, args.requests)
                direct = _load(replica, None, clients, args.requests)
                result[label] = {"clients": clients, "through_endpoint": through, "direct_to_replica": direct,
                                 "overhead_ms": {q: round(through[f"{q}_ms"] - direct[f"{q}_ms"], 2)
                                                 for q in ("p50", "p95", "p99")}}
            result.update({
                "healthy_canary": _decision(client, endpoint, server.token, "bench", {"MODEL_VERSION": "2"}),
                "failing_canary": _decision(client, endpoint, server.token, "bench", {"MODEL_ERROR_RATE": "1"}),
            })
        kill_runners_under(Path(folder))  # the replicas outlive the server that started them
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
