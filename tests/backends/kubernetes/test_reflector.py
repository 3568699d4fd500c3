"""The reflector against the wire-level test API server: list, watch, bookmarks, 410, reconnects, stop."""

from __future__ import annotations

import copy
import json
import threading
import time
from dataclasses import dataclass, field

import pytest
import urllib3
from kubernetes.client import CoreV1Api

from jupyter_hetero.backends.kubernetes.cluster import ClusterReflector, trim_foreign_pod, trim_node
from jupyter_hetero.backends.kubernetes.reflector import Backoff, Reflector
from tests.harness import until
from tests.kube.apiserver import FakeApiServer


def node(name: str, labels: dict | None = None, **status) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": {}, "status": {"allocatable": {"cpu": "8", "memory": "32Gi"},
                                   "conditions": [{"type": "Ready", "status": "True"}],
                                   "images": [{"names": ["registry/huge:1"], "sizeBytes": 1}], **status}}


def pod(name: str, namespace: str = "hetero", *, node_name: str | None = None, ours: bool = True,
        cpu: str = "1", phase: str = "Running") -> dict:
    labels = {"app.kubernetes.io/managed-by": "jupyter-hetero"} if ours else {"app": "other"}
    spec: dict = {"containers": [{"name": "main", "image": "python:3.12",
                                  "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec, "status": {"phase": phase}}


@dataclass
class Recorder:
    """The changes a reflector reports, and the threads it reports them from."""

    changes: list = field(default_factory=list)
    threads: set = field(default_factory=set)

    def __call__(self, kind: str, obj: dict) -> None:
        self.threads.add(threading.get_ident())
        self.changes.append((kind, obj["metadata"]["name"]))


@pytest.fixture
def server():
    api = FakeApiServer().start()
    yield api
    api.stop()


@pytest.fixture
def core(server):
    client = server.api_client()
    yield CoreV1Api(client)
    client.close()


@pytest.fixture
def reflectors():
    started: list = []
    yield started
    for reflector in started:
        reflector.stop()


def node_reflector(core, reflectors, **kwargs) -> Reflector:
    kwargs.setdefault("list_call", core.list_node)
    kwargs.setdefault("backoff", Backoff(base_s=0.01, cap_s=0.05))
    reflector = Reflector(kind="Node", **kwargs)
    reflector.start()
    reflectors.append(reflector)
    assert reflector.wait_synced(10)
    return reflector


def test_list_then_watch_reports_each_later_change_once(server, core, reflectors):
    for name in ("gpu-a", "gpu-b", "gpu-c"):
        server.put(node(name))
    seen = Recorder()
    reflector = node_reflector(core, reflectors, on_change=seen)
    assert seen.changes == [("ADDED", "gpu-a"), ("ADDED", "gpu-b"), ("ADDED", "gpu-c")]
    listed_version = reflector.version

    server.patch_labels("Node", "gpu-b", {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    server.put(node("gpu-d"))
    server.remove("Node", "gpu-a")
    until(lambda: len(seen.changes) == 6, "the three changes")
    assert seen.changes[3:] == [("MODIFIED", "gpu-b"), ("ADDED", "gpu-d"), ("DELETED", "gpu-a")]
    assert sorted(reflector.items()) == ["gpu-b", "gpu-c", "gpu-d"]
    assert reflector.items()["gpu-b"]["metadata"]["labels"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert reflector.version == listed_version + 3
    # The deletion came last, under a version newer than gpu-d's.
    assert int(reflector.resource_version) > int(server.get("Node", "gpu-d")["metadata"]["resourceVersion"])
    assert seen.threads == {reflector._thread.ident}
    assert {k: reflector.stats[k] for k in ("lists", "relists_410", "events", "errors", "callback_errors")} == {
        "lists": 1, "relists_410": 0, "events": 3, "errors": 0, "callback_errors": 0}


def test_a_watch_replaying_history_the_cache_holds_changes_nothing(server, core, reflectors):
    server.put(node("gpu-a"))
    first = server.get("Node", "gpu-a")["metadata"]["resourceVersion"]
    server.patch_labels("Node", "gpu-a", {"zone": "a"})
    server.put(node("gpu-b"))

    def replaying(**kwargs):
        # Every watch starts from the first version: the server replays two changes the list already has.
        if kwargs.get("watch"):
            kwargs["resource_version"] = first
        return core.list_node(**kwargs)

    seen = Recorder()
    reflector = node_reflector(core, reflectors, list_call=replaying, on_change=seen)
    until(lambda: reflector.stats["ignored"] >= 2, "the replayed events to arrive")
    server.patch_labels("Node", "gpu-b", {"zone": "b"})
    until(lambda: len(seen.changes) == 3, "the one new change")
    assert seen.changes == [("ADDED", "gpu-a"), ("ADDED", "gpu-b"), ("MODIFIED", "gpu-b")]


def test_bookmarks_move_the_resource_version(server, core, reflectors):
    server.put(node("gpu-a"))
    reflector = node_reflector(core, reflectors, timeout_s=30)
    before = int(reflector.resource_version)
    # Changes of another kind move the server's version; only a bookmark tells the node watch.
    server.put(pod("p-1"))
    server.put(pod("p-2"))
    until(lambda: reflector.stats["bookmarks"] > 0 and int(reflector.resource_version) > before,
          "a bookmark past the pods' versions")
    assert reflector.items().keys() == {"gpu-a"}
    assert reflector.stats["events"] == 0


class Gate:
    """A list_call that holds every watch while closed (the reflector is 'disconnected')."""

    def __init__(self, call):
        self.call, self.open = call, threading.Event()
        self.open.set()
        self.watch_calls = 0

    def __call__(self, **kwargs):
        if kwargs.get("watch"):
            self.watch_calls += 1
            self.open.wait(30)
        return self.call(**kwargs)


def test_a_410_relists_and_reports_what_changed_meanwhile(server, core, reflectors):
    for name in ("gpu-a", "gpu-b", "gpu-c"):
        server.put(node(name))
    gate, seen = Gate(core.list_node), Recorder()
    reflector = node_reflector(core, reflectors, list_call=gate, on_change=seen)
    until(lambda: reflector.stats["watches"] == 1, "the first watch")

    gate.open.clear()
    server.drop_watches()
    until(lambda: gate.watch_calls == 2, "the reconnect to wait at the gate")
    server.remove("Node", "gpu-a")
    server.patch_labels("Node", "gpu-b", {"cordoned-by": "ops"})
    server.put(node("gpu-d"))
    server.compact()
    gate.open.set()

    until(lambda: reflector.stats["relists_410"] == 1 and len(seen.changes) == 6, "the re-list after the 410")
    assert sorted(seen.changes[3:]) == [("ADDED", "gpu-d"), ("DELETED", "gpu-a"), ("MODIFIED", "gpu-b")]
    assert sorted(reflector.items()) == ["gpu-b", "gpu-c", "gpu-d"]
    assert reflector.stats["lists"] == 2
    server.put(node("gpu-e"))
    until(lambda: "gpu-e" in reflector.items(), "watching again after the re-list")


def test_dropped_watches_reconnect_after_a_backoff(server, core, reflectors):
    server.put(node("gpu-a"))
    slept: list[float] = []
    backoff = Backoff(base_s=0.2, cap_s=2, sleep=slept.append, rand=lambda: 0.0)
    reflector = node_reflector(core, reflectors, backoff=backoff)
    until(lambda: reflector.stats["watches"] == 1, "the first watch")
    server.drop_watches()
    until(lambda: reflector.stats["watches"] == 2, "the second watch")
    assert slept == [0.2] and reflector.stats["reconnects"] == 1
    server.patch_labels("Node", "gpu-a", {"zone": "b"})
    until(lambda: reflector.items()["gpu-a"]["metadata"]["labels"] == {"zone": "b"}, "the change after reconnecting")


def test_failing_connections_back_off_exponentially_and_reset_once_healthy(server, core, reflectors):
    server.put(node("gpu-a"))
    failures = {"left": 4}

    def flaky(**kwargs):
        if kwargs.get("watch") and failures["left"]:
            failures["left"] -= 1
            raise urllib3.exceptions.MaxRetryError(None, "/api/v1/nodes", "connection refused")
        return core.list_node(**kwargs)

    slept: list[float] = []
    backoff = Backoff(base_s=0.5, cap_s=3, sleep=slept.append, rand=lambda: 0.0)
    reflector = node_reflector(core, reflectors, list_call=flaky, backoff=backoff)
    until(lambda: reflector.stats["watches"] == 1, "a watch once the connection works")
    assert slept == [0.5, 1.0, 2.0, 3.0]
    server.patch_labels("Node", "gpu-a", {"zone": "b"})
    until(lambda: reflector.stats["events"] == 1, "an event on the healthy watch")
    until(lambda: backoff.failures == 0, "the backoff reset by a healthy watch", timeout=5)
    assert reflector.stats["reconnects"] == 4 and reflector.stats["errors"] == 4


def test_backoff_is_jittered_and_capped():
    draws = iter([0.0, 1.0, 0.5] * 10)
    backoff = Backoff(base_s=1, cap_s=4, jitter=0.5, rand=lambda: next(draws))
    assert [backoff.next_delay() for _ in range(6)] == [1.0, 1.0, 3.0, 4.0, 2.0, 3.0]
    backoff.reset()
    assert backoff.next_delay() == 1.0


def test_stop_is_prompt_with_a_watch_open(server, core, reflectors):
    server.put(node("gpu-a"))
    reflector = node_reflector(core, reflectors, timeout_s=300)
    until(lambda: reflector.stats["watches"] == 1, "the watch to open")
    started = time.monotonic()
    reflector.stop()
    assert time.monotonic() - started < 1.0
    assert not reflector._thread.is_alive()


def test_a_strange_node_never_stops_the_thread(server, core, reflectors):
    seen = Recorder()

    def fragile(kind: str, obj: dict) -> None:
        # A reader that breaks on an odd label, as a careless capability parser would.
        int(obj["metadata"]["labels"].get("nvidia.com/gpu.count", "0"))
        seen(kind, obj)

    reflector = node_reflector(core, reflectors, on_change=fragile, trim=trim_node)
    strange = node("odd", {"nvidia.com/gpu.count": "eight", "nvidia.com/gpu.memory": "lots", "x" * 63: ""})
    del strange["status"]
    server.put(strange)
    server.put(node("gpu-a", {"nvidia.com/gpu.count": "8"}))
    until(lambda: seen.changes == [("ADDED", "gpu-a")], "the node after the strange one")
    assert reflector.stats["callback_errors"] == 1 and reflector._thread.is_alive()
    assert "odd" in reflector.items()


def test_the_cache_keeps_no_managed_fields_or_image_lists(server, core, reflectors):
    server.put(node("gpu-a"))
    reflector = node_reflector(core, reflectors, trim=trim_node)
    cached = reflector.items()["gpu-a"]
    assert "images" not in cached["status"] and "managedFields" not in cached["metadata"]
    assert cached["status"]["allocatable"] == {"cpu": "8", "memory": "32Gi"}


@pytest.fixture
def cluster(server):
    started: list = []

    def make(**kwargs) -> ClusterReflector:
        client = server.api_client()
        kwargs.setdefault("namespace", "hetero")
        reflector = ClusterReflector(client, backoff=lambda: Backoff(base_s=0.01, cap_s=0.05), **kwargs)
        started.append((reflector, client))
        reflector.start()
        assert reflector.wait_synced(10)
        return reflector

    yield make
    for reflector, client in started:
        reflector.stop()
        client.close()


def test_the_cluster_keeps_our_pods_in_our_namespace_and_their_latest_events(server, cluster):
    server.put(node("gpu-a"))
    ours = server.put(pod("job-1"))
    server.put(pod("other", ours=False))
    server.put(pod("job-2", namespace="elsewhere"))
    reflector = cluster(events_per_pod=2)
    assert sorted(reflector.pods.items()) == ["hetero/job-1"]
    for n in range(4):
        server.record_event(pod=ours, reason=f"Reason{n}", message=f"event {n}")
    until(lambda: [e["reason"] for e in reflector.events_of("hetero", "job-1")] == ["Reason2", "Reason3"],
          "only the two newest events of the pod")
    cached = [e for e in reflector.events.items().values() if e["involvedObject"]["name"] == "job-1"]
    assert len(cached) == 2


def test_the_wake_callback_is_coalesced_and_runs_on_the_wake_thread(server, cluster):
    server.put(node("gpu-a"))
    calls: list[int] = []
    reflector = cluster()
    reflector.wake(lambda: calls.append(threading.get_ident()))
    for n in range(50):
        server.patch_labels("Node", "gpu-a", {"burst": str(n)})
    until(lambda: reflector.nodes.items()["gpu-a"]["metadata"]["labels"] == {"burst": "49"}, "the whole burst")
    until(lambda: calls, "a wake after the burst")
    time.sleep(0.2)   # let any trailing coalesced call land before counting (it may not come: that is fine)
    assert 1 <= len(calls) < 25
    assert set(calls) == {reflector._waker.ident} and threading.get_ident() not in calls


def test_foreign_pods_are_summed_per_node(server, cluster):
    for name in ("gpu-a", "gpu-b"):
        server.put(node(name))
    server.put(pod("web", "default", node_name="gpu-a", ours=False, cpu="2"))
    server.put(pod("db", "default", node_name="gpu-a", ours=False, cpu="500m"))
    server.put(pod("done", "default", node_name="gpu-b", ours=False, phase="Succeeded"))
    server.put(pod("job-1", node_name="gpu-b"))

    def millicores(pod: dict) -> int:
        cpu = pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        return int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000

    reflector = cluster(track_foreign=True, requests_of=millicores)
    assert reflector.requests_by_node() == {"gpu-a": 2500}
    server.remove("Pod", "web", "default")
    server.put(pod("batch", "team", node_name="gpu-b", ours=False, cpu="1"))
    until(lambda: reflector.requests_by_node() == {"gpu-a": 500, "gpu-b": 1000}, "the sums to follow the pods")


def test_without_a_namespace_the_cluster_keeps_our_pods_everywhere(server, cluster):
    server.put(pod("job-1"))
    server.put(pod("job-2", namespace="elsewhere"))
    server.put(pod("other", ours=False))
    reflector = cluster(namespace=None)
    assert sorted(reflector.pods.items()) == ["elsewhere/job-2", "hetero/job-1"]


def test_a_trimmed_foreign_pod_asks_what_the_whole_pod_asks():
    nodes = pytest.importorskip("jupyter_hetero.backends.kubernetes.nodes")
    if not hasattr(nodes, "pod_requests"):
        pytest.skip("nodes.pod_requests is not on this branch yet")
    whole = {"metadata": {"name": "trainer", "namespace": "team", "labels": {"app": "x"}, "managedFields": [{}]},
             "spec": {"nodeName": "gpu-a", "overhead": {"cpu": "100m"}, "volumes": [{"name": "data"}],
                      "containers": [{"name": "main", "image": "x", "env": [{"name": "A", "value": "1"}],
                                      "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                    "limits": {"nvidia.com/gpu": "2"}}}],
                      "initContainers": [{"name": "setup", "resources": {"requests": {"cpu": "3"}}},
                                         {"name": "proxy", "restartPolicy": "Always",
                                          "resources": {"requests": {"memory": "512Mi"}}}]},
             "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    trimmed = trim_foreign_pod(copy.deepcopy(whole))
    assert len(json.dumps(trimmed)) < len(json.dumps(whole))
    assert nodes.pod_requests(trimmed) == nodes.pod_requests(whole)


def test_a_periodic_resync_relists_without_reporting_unchanged_objects(server, core, reflectors):
    server.put(node("gpu-a"))
    seen = Recorder()
    reflector = node_reflector(core, reflectors, on_change=seen, resync_s=1.5)
    until(lambda: reflector.stats["resyncs"] >= 1 and reflector.stats["lists"] >= 2, "a resync", timeout=15)
    assert seen.changes == [("ADDED", "gpu-a")]
    assert reflector.stats["relists_410"] == 0 and reflector.stats["reconnects"] == 0
