"""The Kubernetes backend at fleet size through a real API server: list, watch, memory, pods bound per second.

    python -m tests.kube.bench_real_cluster --nodes 1000 5000 --pods 500 -o docs/results/kube-real.json

For each node count: a fresh test control plane (:class:`tests.kube.control_plane.ControlPlane`: etcd,
kube-apiserver, kube-scheduler, kube-controller-manager) and kwok, with that many GPU/NPU nodes of the label
schemes of :func:`tests.kube.bench_reflector.make_node` created in parallel and heartbeated by kwok. Every
figure is read through the shipped ``KubernetesBackend``: ``start()`` (its four caches' first lists),
``poll_nodes()`` (every node read into the inventory), a node's label change seen by ``poll_nodes``, the
backend's memory (tracemalloc of a second start, and the process's RSS growth over the first), and
``--pods`` job pods made by ``launch()`` and bound by kube-scheduler, each timed from its create to its
``nodeName`` and to Running as the backend's own pod cache sees them. The engine-only figure beside it is
:func:`jupyter_hetero.sim.throughput.run_throughput` (``Engine.cycle`` with the server's scorer) on a
synthetic cluster of as many nodes, placing as many workloads.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import platform
import random
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
from kubernetes import client

from jupyter_hetero.backends.base import Launch, Placed
from jupyter_hetero.backends.kubernetes.backend import KubernetesBackend
from jupyter_hetero.backends.kubernetes.config import KubernetesConfig
from jupyter_hetero.sim.throughput import run_throughput
from tests.kube.bench_reflector import make_node
from tests.kube.cluster_fixtures import _binaries
from tests.kube.control_plane import ControlPlane, Kwok
from tests.kube.nodes import kwok_node

NAMESPACE = "bench"
CREATE_THREADS = 16
PROBES = 20  # label changes timed per node count


def _rss_mib() -> float:
    return psutil.Process().memory_info().rss / 2**20


def _admin(plane: ControlPlane, pool: int) -> client.CoreV1Api:
    api_client = plane.api_client()
    # One connection per creating thread: the default pool of 4 would serialise the parallel creates.
    api_client.rest_client.pool_manager.connection_pool_kw["maxsize"] = pool
    return client.CoreV1Api(api_client)


def _create_nodes(core: client.CoreV1Api, count: int, seed: int) -> float:
    rng = random.Random(seed)
    bodies = [kwok_node(make_node(i, rng)) for i in range(count)]
    began = time.perf_counter()
    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        # Raw answers, read to the end: building a V1Node model of each would cost the creating threads more.
        list(pool.map(lambda body: core.create_node(body, _preload_content=False).data, bodies))
    return time.perf_counter() - began


def _wait_ready(core: client.CoreV1Api, count: int, timeout: float = 900) -> float:
    began = time.perf_counter()
    while True:
        answer = json.loads(core.list_node(_preload_content=False).data)
        # Ready, and the not-ready taint the node lifecycle controller puts on a new node taken off again.
        ready = sum(any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (n.get("status") or {}).get("conditions") or ())
                    and not (n.get("spec") or {}).get("taints") for n in answer["items"])
        # kwok renews 5,000 leases on a shared 2-core machine late now and then, and the node lifecycle controller
        # taints such a node unreachable for a moment: 99% is the fleet at rest here.
        if ready >= 0.99 * count:
            return time.perf_counter() - began
        if time.perf_counter() - began > timeout:
            raise TimeoutError(f"only {ready} of {count} kwok nodes Ready after {timeout:.0f} s")
        time.sleep(2)


def _backend(kubeconfig: Path) -> KubernetesBackend:
    return KubernetesBackend(config=KubernetesConfig(kubeconfig=str(kubeconfig), namespace=NAMESPACE,
                                                     watch_timeout=300, unschedulable_timeout=600))


def _list_figures(kubeconfig: Path) -> tuple[KubernetesBackend, dict, object]:
    rss_before = _rss_mib()
    backend = _backend(kubeconfig)
    began = time.perf_counter()
    backend.start(timeout=600)
    synced = time.perf_counter() - began
    began = time.perf_counter()
    seen = backend.poll_nodes()
    read = time.perf_counter() - began
    gc.collect()
    return backend, {"start_to_synced_s": round(synced, 2), "first_poll_nodes_s": round(read, 2),
                     "nodes_in_inventory": len(seen.capabilities), "rss_growth_mib": round(_rss_mib() - rss_before, 1)}, seen


def _traced_mib(kubeconfig: Path) -> float:
    """What a started, synced backend (its caches and the nodes' readings) keeps allocated."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    backend = _backend(kubeconfig)
    backend.start(timeout=900)
    backend.poll_nodes()
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    backend.close()
    return round(kept / 2**20, 1)


def _watch_latency(backend: KubernetesBackend, core: client.CoreV1Api, seen) -> tuple[dict, object]:
    """Seconds from a node's label patch (answered) to the change in ``poll_nodes``' capability of it."""
    last = {c.name: c for c in seen.capabilities}
    delays = []
    for probe, name in enumerate(random.Random(7).sample(sorted(last), PROBES)):
        value = f"p{probe}"
        core.patch_node(name, {"metadata": {"labels": {"bench.hetero/probe": value}}})
        began = time.perf_counter()
        while True:
            now_seen = backend.poll_nodes()
            if now_seen is not None:
                seen, last = now_seen, {c.name: c for c in now_seen.capabilities}
            if name in last and last[name].labels.get("bench.hetero/probe") == value:
                delays.append(time.perf_counter() - began)
                break
            if time.perf_counter() - began > 60:
                raise TimeoutError(f"the label change of {name} did not reach poll_nodes in 60 s")
            time.sleep(0.002)
    delays.sort()
    return {"probes": PROBES, "p50_ms": round(1000 * statistics.median(delays), 1),
            "max_ms": round(1000 * delays[-1], 1)}, seen


def _pods(backend: KubernetesBackend, seen, count: int, workdir: Path) -> dict:
    """``count`` one-device job pods: made by ``launch()`` one after another, bound by kube-scheduler."""
    gpu_nodes = sorted((c for c in seen.capabilities if seen.states.get(c.name) == "ready" and c.accelerator and c.accelerator.resource == "nvidia.com/gpu"
                        and c.accelerator.sharing != "milli"), key=lambda c: c.name)
    created: dict[str, float] = {}
    bound: dict[str, float] = {}
    running: dict[str, float] = {}
    changed = threading.Event()
    backend.reflector.wake(changed.set)
    began = time.perf_counter()
    for index in range(count):
        # Spread over the GPU nodes, one device each, as the engine spreads a burst of small jobs.
        target = gpu_nodes[index % len(gpu_nodes)]
        accelerator = target.accelerator
        placed = Placed(kind="job", tenant="bench", user="bench", queue="batch", template="bench", flavor="gpu",
                        replicas=1, image="bench", cpu_milli=100, memory_mib=128,
                        devices=((1000, accelerator.memory_mib),), accelerator=accelerator)
        directory = workdir / f"w{index}"
        directory.mkdir(parents=True, exist_ok=True)
        launch = Launch(workload_id=1_000_000 + index, attempt=1, replica=0, node=target.name,
                        argv=["command", "--", "sleep", "infinity"], env={}, cwd=directory,
                        log_path=directory / "job.log", exit_path=directory / "exit.json", placed=placed)
        key = backend.launch(launch).pod
        created[key] = time.perf_counter()
    creates_s = time.perf_counter() - began
    deadline = time.perf_counter() + 600
    while len(running) < count and time.perf_counter() < deadline:
        changed.wait(1)
        changed.clear()
        now = time.perf_counter()
        for key in created:
            if key in running:
                continue
            pod = backend.pod(key)
            if pod is None:
                continue
            if key not in bound and (pod.get("spec") or {}).get("nodeName"):
                bound[key] = now
            if (pod.get("status") or {}).get("phase") == "Running":
                bound.setdefault(key, now)
                running[key] = now
    to_bound = sorted(bound[k] - created[k] for k in bound)
    ended = max(running.values(), default=began)
    return {"pods": count, "bound": len(bound), "running": len(running),
            "creates_per_s": round(count / creates_s, 1),
            "bound_per_s_end_to_end": round(len(bound) / (max(bound.values(), default=began) - began), 1),
            "running_per_s_end_to_end": round(len(running) / (ended - began), 1),
            "create_to_bound_p50_ms": round(1000 * statistics.median(to_bound), 1) if to_bound else None,
            "create_to_bound_p99_ms": round(1000 * to_bound[min(len(to_bound) - 1, int(len(to_bound) * 0.99))], 1)
            if to_bound else None}


def run(nodes: int, pods: int, seed: int, binaries: Path, grace_s: int = 40) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"hetero-bench-{nodes}-"))
    # The node lifecycle controller's grace: its default is 40 s (the tests' 20 s makes a late lease renewal a lost
    # node); a longer one keeps the nodes of a fleet that kwok heartbeats on few cores from flapping unreachable.
    plane = ControlPlane(binaries=binaries, root=root, etcd=shutil.which("etcd") or "/usr/bin/etcd",
                         node_monitor_grace_period=f"{grace_s}s")
    plane.start()
    kwok = Kwok(binaries / "kwok", plane).start()
    result: dict = {"nodes": nodes, "node_monitor_grace_s": grace_s, "control_plane_start_s": round(plane.started_in, 1)}
    try:
        core = _admin(plane, CREATE_THREADS)
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        result["node_creates_s"] = round(_create_nodes(core, nodes, seed), 1)
        result["nodes_ready_after_creates_s"] = round(_wait_ready(core, nodes), 1)
        backend, result["list"], seen = _list_figures(plane.kubeconfig)
        print(json.dumps(result), flush=True)
        try:
            result["watch"], seen = _watch_latency(backend, core, seen)
            print(json.dumps(result["watch"]), flush=True)
            result["pods"] = _pods(backend, seen, pods, root / "work")
            print(json.dumps(result["pods"]), flush=True)
            result["foreign_pods_cached"] = len(backend.reflector.foreign.items())
        finally:
            backend.close()
        result["list"]["traced_mib"] = _traced_mib(plane.kubeconfig)
        engine = run_throughput(nodes=nodes, workloads=pods, seed=seed)
        result["engine_only"] = {k: engine[k] for k in ("admissions", "admissions_per_s", "cycle_mean_ms", "cycles")}
    finally:
        kwok.stop()
        plane.stop()
        shutil.rmtree(root, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--grace", type=int, default=40, help="the node lifecycle controller's grace period, seconds")
    parser.add_argument("-o", "--out", type=Path, default=None)
    args = parser.parse_args(argv)
    # A SIGTERM unwinds through run()'s finally, so the control plane it started stops with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # The backend warns once per node about labels the benchmark's nodes lack; thousands of lines say nothing here.
    logging.basicConfig(level=logging.ERROR)
    binaries = _binaries()
    results = {"machine": {"cpus": psutil.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30),
                           "python": platform.python_version(), "kubernetes": binaries.name},
               "runs": []}
    for nodes in args.nodes:
        results["runs"].append(run(nodes, args.pods, args.seed, binaries, args.grace))
        print(json.dumps(results["runs"][-1], indent=2), flush=True)
        if args.out:
            args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
