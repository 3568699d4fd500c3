"""Reflector figures at fleet size: list, watch burst, cache memory and 410 re-list over real HTTP.

    python -m tests.kube.bench_reflector --nodes 5000 --burst 20000 --out reflector.json

The test API server runs in a child process (so its memory and CPU are not the reflector's) and
serves GPU/NPU nodes built from the label sets the NVIDIA GPU operator (GPU feature discovery + NFD),
the AMD and Intel device plugins and Huawei's Ascend device plugin put on real nodes, with the
image lists and managed fields real nodes carry. The figures come from the shipped `Reflector`.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import random
import threading
import time
import tracemalloc
from pathlib import Path

import psutil
from kubernetes.client import CoreV1Api

from jupyter_hetero.backends.kubernetes.cluster import trim_node
from jupyter_hetero.backends.kubernetes.reflector import Reflector

_NFD = {f"feature.node.kubernetes.io/cpu-cpuid.{flag}": "true"
        for flag in ("AVX", "AVX2", "AVX512F", "AVX512BW", "AVX512VNNI", "AMXBF16", "AMXTILE", "FMA3", "VAES")}
_NFD.update({
    "feature.node.kubernetes.io/cpu-hardware_multithreading": "true",
    "feature.node.kubernetes.io/cpu-model.family": "6", "feature.node.kubernetes.io/cpu-model.id": "143",
    "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel",
    "feature.node.kubernetes.io/kernel-version.full": "5.15.0-105-generic",
    "feature.node.kubernetes.io/kernel-version.major": "5", "feature.node.kubernetes.io/kernel-version.minor": "15",
    "feature.node.kubernetes.io/memory-numa": "true", "feature.node.kubernetes.io/network-sriov.capable": "true",
    "feature.node.kubernetes.io/rdma.available": "true", "feature.node.kubernetes.io/rdma.capable": "true",
    "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
    "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
    "feature.node.kubernetes.io/pci-0200_15b3.present": "true",
})
_BASE = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
         "beta.kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "bare-metal"}

# (share of the fleet, labels, extended resources in allocatable, cores, memory GiB)
_PROFILES = [
    (0.35, {**_NFD, "feature.node.kubernetes.io/pci-0302_10de.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559",
            "nvidia.com/gpu.count": "8", "nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.machine": "DGX-H100",
            "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0",
            "nvidia.com/cuda.driver-version.full": "550.54.15", "nvidia.com/cuda.driver-version.major": "550",
            "nvidia.com/cuda.runtime-version.full": "12.4", "nvidia.com/cuda.runtime-version.major": "12",
            "nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "single",
            "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/gpu.deploy.device-plugin": "true",
            "nvidia.com/gpu.deploy.dcgm-exporter": "true", "nvidia.com/gpu.deploy.driver": "true",
            "nvidia.com/gpu.present": "true", "nvidia.com/gfd.timestamp": "1717000000"},
     {"nvidia.com/gpu": "8", "rdma/rdma_shared_device_a": "1k"}, 224, 2048),
    (0.15, {**_NFD, "feature.node.kubernetes.io/pci-0302_10de.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/gpu.memory": "4864",
            "nvidia.com/gpu.count": "56", "nvidia.com/mig.strategy": "single", "nvidia.com/mig.config": "all-1g.5gb",
            "nvidia.com/mig.config.state": "success", "nvidia.com/gpu.replicas": "1",
            "nvidia.com/cuda.driver-version.full": "535.161.08", "nvidia.com/cuda.runtime-version.full": "12.2",
            "nvidia.com/gpu.present": "true"},
     {"nvidia.com/gpu": "56"}, 128, 1024),
    (0.15, {**_NFD, "nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.memory": "46068",
            "nvidia.com/gpu.count": "4", "nvidia.com/cuda.driver.major": "535", "nvidia.com/cuda.driver.minor": "104",
            "nvidia.com/cuda.runtime.major": "12", "nvidia.com/gpu.sharing-strategy": "time-slicing",
            "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.present": "true"},
     {"nvidia.com/gpu": "16", "nvidia.com/gpumem": "184272", "nvidia.com/gpucores": "400"}, 64, 512),
    (0.15, {**_BASE, "accelerator": "huawei-Ascend910", "node.kubernetes.io/npu.chip.name": "910B3",
            "accelerator-type": "module-910b-8", "servertype": "Ascend910B-20", "nodeDEnable": "on",
            "host-arch": "huawei-arm", "kubernetes.io/arch": "arm64", "workerselector": "dls-worker-node"},
     {"huawei.com/Ascend910": "8"}, 192, 1536),
    (0.05, {**_BASE, "accelerator": "huawei-Ascend310P", "node.kubernetes.io/npu.chip.name": "310P3",
            "accelerator-type": "card-310p-1usoc", "host-arch": "huawei-arm", "kubernetes.io/arch": "arm64"},
     {"huawei.com/Ascend310P": "4"}, 96, 256),
    (0.05, {**_NFD, "feature.node.kubernetes.io/pci-0380_1002.present": "true",
            "amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM", "amd.com/gpu.vram": "192G",
            "amd.com/gpu.driver-version": "6.7.0", "amd.com/gpu.family": "AI", "amd.com/gpu.device-id": "74a1"},
     {"amd.com/gpu": "8"}, 192, 2048),
    (0.10, {**_NFD}, {}, 64, 256),
]


def make_node(index: int, rng: random.Random) -> dict:
    """One realistic Node: labels of its profile, capacity, conditions, node info, images, managed fields."""
    draw, total = rng.random(), 0.0
    for share, labels, extended, cores, memory_gib in _PROFILES:
        total += share
        if draw <= total:
            break
    name = f"node-{index:05d}"
    labels = {**_BASE, **labels, "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"zone-{index % 3}",
              "topology.kubernetes.io/region": "region-1"}
    allocatable = {"cpu": f"{cores * 1000 - 500}m", "memory": f"{memory_gib * 1024 * 1024 - 2_000_000}Ki",
                   "ephemeral-storage": "1800Gi", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "pods": "110",
                   **extended}
    conditions = [{"type": kind, "status": status, "reason": reason, "message": f"kubelet has {reason}",
                   "lastHeartbeatTime": "2026-12-01T10:00:00Z", "lastTransitionTime": "2026-11-01T10:00:00Z"}
                  for kind, status, reason in (("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                                               ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                                               ("PIDPressure", "False", "KubeletHasSufficientPID"),
                                               ("Ready", "True", "KubeletReady"))]
    images = [{"names": [f"registry.example.com/team-{i % 7}/image-{i}@sha256:{rng.getrandbits(256):064x}",
                         f"registry.example.com/team-{i % 7}/image-{i}:v{i}"], "sizeBytes": rng.randint(10**7, 10**10)}
              for i in range(40)]
    managed = [{"manager": manager, "operation": "Update", "apiVersion": "v1", "time": "2026-12-01T10:00:00Z",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {f"f:{k}": {} for k in labels}}}}
               for manager in ("kubelet", "nfd-master", "gpu-feature-discovery")]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "managedFields": managed,
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                         "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {"podCIDR": f"10.{index // 256 % 256}.{index % 256}.0/24"},
            "status": {"capacity": dict(allocatable), "allocatable": allocatable, "conditions": conditions,
                       "addresses": [{"type": "InternalIP", "address": f"10.0.{index // 256}.{index % 256}"},
                                     {"type": "Hostname", "address": name}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                       "nodeInfo": {"kubeletVersion": "v1.30.2", "containerRuntimeVersion": "containerd://1.7.18",
                                    "kernelVersion": "5.15.0-105-generic", "osImage": "Ubuntu 22.04.4 LTS",
                                    "architecture": labels["kubernetes.io/arch"], "operatingSystem": "linux",
                                    "machineID": f"{rng.getrandbits(128):032x}", "bootID": "b",
                                    "systemUUID": "u", "kubeProxyVersion": "v1.30.2"},
                       "images": images}}


def _serve(nodes: int, seed: int, commands, url_out) -> None:
    """The child process: a test API server with the fleet, doing what the parent asks."""
    from tests.kube.apiserver import FakeApiServer

    rng = random.Random(seed)
    server = FakeApiServer().start()
    for index in range(nodes):
        server.put(make_node(index, rng))
    url_out.send((server.url, len(json.dumps(server.list("Node")))))
    while True:
        command, argument = commands.recv()
        if command == "burst":
            started = time.monotonic()
            for n in range(argument):
                server.patch_labels("Node", f"node-{rng.randrange(nodes):05d}", {"bench/burst": str(n)})
            commands.send(time.monotonic() - started)
        elif command == "drop":
            server.drop_watches()
            commands.send(None)
        elif command == "compact":
            server.compact()
            commands.send(None)
        elif command == "foreign":
            server.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "someone-else", "namespace": "other"},
                        "spec": {"nodeName": argument, "containers": [{"name": "c", "image": "x", "resources": {
                            "requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
                            "limits": {"nvidia.com/gpu": "1"}}}]}})
            commands.send(None)
        elif command == "kubeconfig":
            commands.send(str(server.kubeconfig(Path(argument))))
        else:
            server.stop()
            commands.send(None)
            return


def _rss_mib() -> float:
    return psutil.Process().memory_info().rss / 2**20


def _thread_cpu_s(reflector: Reflector) -> float:
    """CPU seconds the reflector's own thread has used (JSON parsing and applying, not the server)."""
    native = reflector._thread.native_id
    return next(t.user_time + t.system_time for t in psutil.Process().threads() if t.id == native)


def _wait(predicate, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the reflector did not get there in time")
        time.sleep(0.002)


def _traced_cache_mib(list_node, trim) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    reflector = Reflector(list_call=list_node, kind="Node", trim=trim, timeout_s=300, resync_s=3600)
    reflector.start()
    assert reflector.wait_synced(600)
    reflector.stop()
    gc.collect()
    size = (tracemalloc.get_traced_memory()[0] - before) / 2**20
    tracemalloc.stop()
    return size


def _disconnect(reflector: Reflector, gate: threading.Event, commands) -> None:
    """Hold the reflector's next watch at the gate and end the open one."""
    gate.clear()
    watches = reflector.stats["watches"]
    commands.send(("drop", None))
    commands.recv()
    _wait(lambda: reflector.stats["reconnects"] > 0 and reflector._response is None and reflector.stats["watches"] == watches)


def _inventory(commands, workdir: Path) -> dict:
    """What a scheduler tick pays to bring the inventory in line with the cluster: the backend's
    `poll_nodes` (every node read into a capability record) and `Inventory.refresh`, as the server runs
    them, at start, after one node's labels changed, and after another pod took a GPU somewhere."""
    from jupyter_hetero.backends.kubernetes.backend import KubernetesBackend
    from jupyter_hetero.backends.kubernetes.config import KubernetesConfig
    from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
    from jupyter_hetero.platform.scheduling.inventory import Inventory
    from jupyter_hetero.store import Repository

    commands.send(("kubeconfig", str(workdir / "kubeconfig")))
    backend = KubernetesBackend(config=KubernetesConfig(kubeconfig=commands.recv(), watch_timeout=300))
    inventory = Inventory(load_catalog(DEFAULT_CATALOG_PATH), Repository(f"sqlite:///{workdir / 'bench.sqlite'}",
                                                                         clock=time.time))
    started = time.monotonic()
    backend.start(timeout=600)
    synced_s = time.monotonic() - started

    def refresh() -> float:
        began = time.monotonic()
        seen = backend.poll_nodes()
        inventory.refresh(seen.capabilities, seen.states, seen.held)
        return time.monotonic() - began

    first_s = refresh()
    mapped = sum(1 for view in inventory.nodes() if view.flavor)
    version = backend.reflector.nodes.version
    commands.send(("burst", 1))
    commands.recv()
    _wait(lambda: backend.reflector.nodes.version != version)
    label_s = refresh()
    version = backend.reflector.foreign.version
    commands.send(("foreign", "node-00000"))
    commands.recv()
    _wait(lambda: backend.reflector.foreign.version != version)
    foreign_s = refresh()
    backend.close()
    return {"inventory_synced_s": round(synced_s, 3), "inventory_first_refresh_s": round(first_s, 3),
            "inventory_nodes_with_flavor": mapped, "inventory_nodes_with_findings": len(backend.findings),
            "inventory_refresh_after_label_change_s": round(label_s, 4),
            "inventory_refresh_after_foreign_pod_s": round(foreign_s, 4)}


def run(nodes: int, burst: int, seed: int, workdir: Path) -> dict:
    import kubernetes

    parent, child = multiprocessing.Pipe()
    url_parent, url_child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=_serve, args=(nodes, seed, child, url_child), daemon=True)
    server.start()
    _url, wire_bytes = url_parent.recv()
    parent.send(("kubeconfig", str(workdir / "kubeconfig")))
    config = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=parent.recv(), client_configuration=config)
    client = kubernetes.client.ApiClient(config)
    core = CoreV1Api(client)

    # A gate in front of the watch, so the 410 phase can keep the reflector away while history goes.
    gate = threading.Event()
    gate.set()

    def list_node(**kwargs):
        if kwargs.get("watch"):
            gate.wait()
        return core.list_node(**kwargs)

    gc.collect()
    rss_before = _rss_mib()
    reflector = Reflector(list_call=list_node, kind="Node", trim=trim_node, timeout_s=300, resync_s=3600)
    started = time.monotonic()
    reflector.start()
    assert reflector.wait_synced(600)
    list_s = time.monotonic() - started
    gc.collect()
    rss_delta = _rss_mib() - rss_before
    _wait(lambda: reflector.stats["watches"] >= 1)

    # Live: the server changes labels as fast as it can while the reflector watches.
    started = time.monotonic()
    parent.send(("burst", burst))
    live_server_s = parent.recv()
    _wait(lambda: reflector.stats["events"] >= burst)
    live_s = time.monotonic() - started

    # Backlog: the same kind of burst while the reflector is away, then replayed to it at once, which
    # measures what the reflector can apply rather than what the test server can produce.
    backlog = min(burst, 15_000)
    _disconnect(reflector, gate, parent)
    parent.send(("burst", backlog))
    parent.recv()
    applied = reflector.stats["events"]
    started, cpu_before = time.monotonic(), _thread_cpu_s(reflector)
    gate.set()
    _wait(lambda: reflector.stats["events"] >= applied + backlog)
    backlog_s = time.monotonic() - started
    backlog_cpu_s = _thread_cpu_s(reflector) - cpu_before

    # 410: history compacted while the reflector is away, so its watch is refused and it re-lists.
    _disconnect(reflector, gate, parent)
    parent.send(("burst", max(1, nodes // 50)))
    parent.recv()
    parent.send(("compact", None))
    parent.recv()
    lists = reflector.stats["lists"]
    started = time.monotonic()
    gate.set()
    _wait(lambda: reflector.stats["lists"] > lists)
    relist_s = time.monotonic() - started
    stats = dict(reflector.stats)
    reflector.stop()
    gc.collect()

    # The cache's own size, on fresh reflectors under tracemalloc (which slows the list down), with
    # and without dropping what the backend never reads.
    cache_traced_mib = _traced_cache_mib(list_node, trim_node)
    untrimmed_traced_mib = _traced_cache_mib(list_node, None)
    inventory = _inventory(parent, workdir)
    result = {
        "nodes": nodes,
        "list_wire_mib": round(wire_bytes / 2**20, 1),
        "initial_list_s": round(list_s, 3),
        "cache_tracemalloc_mib": round(cache_traced_mib, 1),
        "cache_untrimmed_tracemalloc_mib": round(untrimmed_traced_mib, 1),
        "cache_rss_delta_mib": round(rss_delta, 1),
        "live_burst_events": burst,
        "live_burst_server_s": round(live_server_s, 3),
        "live_burst_applied_s": round(live_s, 3),
        "live_events_per_s": round(burst / live_s),
        "backlog_events": backlog,
        "backlog_applied_s": round(backlog_s, 3),
        "backlog_events_per_s": round(backlog / backlog_s),
        "backlog_reflector_cpu_s": round(backlog_cpu_s, 3),
        "events_per_reflector_cpu_s": round(backlog / backlog_cpu_s),
        "relist_after_410_s": round(relist_s, 3),
        "stats": stats,
        **inventory,
        "cpus": os.cpu_count(),
    }
    parent.send(("stop", None))
    parent.recv()
    server.join(10)
    client.close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kube.bench_reflector", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000, help="Nodes the test API server holds.")
    parser.add_argument("--burst", type=int, default=20000, help="Label changes in the watch burst.")
    parser.add_argument("--seed", type=int, default=1, help="Seed of the fleet's mix and the burst's nodes.")
    parser.add_argument("--out", type=Path, help="Also write the figures as JSON to this file.")
    args = parser.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory() as workdir:
        result = run(args.nodes, args.burst, args.seed, Path(workdir))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
