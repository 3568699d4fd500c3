"""The fake API server, driven through the official kubernetes client as the backend drives a cluster."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request

import kubernetes
import pytest
from kubernetes.client import ApiException, CoreV1Api

from tests.harness import until
from tests.kube.apiserver import FakeApiServer

pytest_plugins = ("tests.kube.fixtures",)
from tests.kube.nodes import ready_node

NS = "default"


def pod_manifest(name: str | None = None, *, node: str | None = "node-a", labels=None, **spec) -> dict:
    """A pod whose required affinity names ``node`` (as the backend's pods do)."""
    metadata = {"name": name} if name else {"generateName": "job-"}
    metadata["labels"] = labels or {}
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": [{"name": "main", "image": "python:3.11"}], "restartPolicy": "Never", **spec}}
    if node:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        body["spec"]["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    return body


@pytest.fixture
def v1(kube_api) -> CoreV1Api:
    kube_api.put(ready_node("node-a"))
    return CoreV1Api(kube_api.api_client())


def raw(response) -> dict:
    return json.loads(response.data)


def stream(v1: CoreV1Api, **kwargs) -> list[dict]:
    """Every event of one watch of the default namespace's pods, until it closes."""
    events = []
    for event in kubernetes.watch.Watch().stream(v1.list_namespaced_pod, NS, **kwargs):
        obj = event["object"]
        name = obj["metadata"].get("name") if isinstance(obj, dict) else obj.metadata.name
        events.append({"type": event["type"], "name": name, "raw": event["raw_object"]})
    return events


def take(v1: CoreV1Api, count: int, **kwargs) -> list[dict]:
    """The first ``count`` events (bookmarks aside) of a watch of the default namespace's pods."""
    watch, events = kubernetes.watch.Watch(), []
    for event in watch.stream(v1.list_namespaced_pod, NS, timeout_seconds=10, **kwargs):
        if event["type"] != "BOOKMARK":
            events.append({"type": event["type"], "name": event["raw_object"]["metadata"]["name"],
                           "raw": event["raw_object"]})
        if len(events) == count:
            watch.stop()
    return events


def get(server: FakeApiServer, path: str, *, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(server.url + path)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


# --- list and watch -------------------------------------------------------------------------------


def test_watch_from_a_lists_version_sees_only_later_changes(kube_api, v1):
    v1.create_namespaced_pod(NS, pod_manifest("before"))
    listing = raw(v1.list_namespaced_pod(NS, _preload_content=False))
    assert listing["kind"] == "PodList"
    assert [p["metadata"]["name"] for p in listing["items"]] == ["before"]
    version = listing["metadata"]["resourceVersion"]

    v1.create_namespaced_pod(NS, pod_manifest("after"))
    kube_api.patch_labels("Pod", "before", {"touched": "yes"}, NS)
    v1.delete_namespaced_pod("after", NS, grace_period_seconds=0)

    events = take(v1, 4, resource_version=version)
    seen = [(e["type"], e["name"]) for e in events]
    # "after" is created, bound by the scheduler, then deleted; "before" only gets its label.
    assert seen == [("ADDED", "after"), ("MODIFIED", "after"), ("MODIFIED", "before"), ("DELETED", "after")]
    versions = [int(e["raw"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(version)


def test_a_watch_without_a_version_starts_with_the_current_objects(v1):
    v1.create_namespaced_pod(NS, pod_manifest("one"))
    events = take(v1, 1)
    assert [(e["type"], e["name"]) for e in events] == [("ADDED", "one")]
    assert events[0]["raw"]["spec"]["nodeName"] == "node-a"


def test_bookmarks_carry_the_current_version(kube_api, v1):
    kube_api.bookmark_interval = 0.2
    v1.create_namespaced_pod(NS, pod_manifest("one"))
    version = raw(v1.list_namespaced_pod(NS, _preload_content=False))["metadata"]["resourceVersion"]
    kube_api.put(ready_node("node-b"))  # a change the pod watch does not show, but its bookmarks count
    events = stream(v1, resource_version=version, timeout_seconds=1, allow_watch_bookmarks=True)
    bookmarks = [e["raw"] for e in events if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 3
    assert bookmarks[-1] == {"kind": "Pod", "apiVersion": "v1",
                             "metadata": {"resourceVersion": str(kube_api.store.version)}}
    assert [e for e in events if e["type"] != "BOOKMARK"] == []


def test_bookmarks_come_within_a_second_by_default(kube_api, v1):
    start = time.monotonic()
    response = v1.list_namespaced_pod(NS, watch=True, allow_watch_bookmarks=True, timeout_seconds=5,
                                      _preload_content=False)
    line = next(response.stream(amt=None))
    assert json.loads(line)["type"] == "BOOKMARK"
    assert time.monotonic() - start < 1.5
    response.release_conn()


def test_a_watch_closes_at_its_timeout(v1):
    start = time.monotonic()
    assert stream(v1, resource_version=raw(v1.list_namespaced_pod(NS, _preload_content=False))[
        "metadata"]["resourceVersion"], timeout_seconds=1) == []
    assert 0.9 < time.monotonic() - start < 2.5


def test_a_compacted_version_is_410_expired(kube_api, v1):
    old = raw(v1.list_namespaced_pod(NS, _preload_content=False))["metadata"]["resourceVersion"]
    v1.create_namespaced_pod(NS, pod_manifest("one"))
    kube_api.compact()
    with pytest.raises(ApiException) as raised:
        stream(v1, resource_version=old, timeout_seconds=1)
    assert raised.value.status == 410

    response = v1.list_namespaced_pod(NS, watch=True, resource_version=old, timeout_seconds=5,
                                      _preload_content=False)
    lines = [json.loads(line) for line in response.data.splitlines()]
    assert lines == [{"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"too old resource version: {old} ({kube_api.store.version})", "reason": "Expired", "code": 410}}]

    # A version at or after the compaction still watches.
    now = raw(v1.list_namespaced_pod(NS, _preload_content=False))["metadata"]["resourceVersion"]
    assert stream(v1, resource_version=now, timeout_seconds=1) == []


def test_a_short_history_expires_old_versions_by_itself():
    with FakeApiServer(history=3) as server:
        v1 = CoreV1Api(server.api_client())
        start = raw(v1.list_node(_preload_content=False))["metadata"]["resourceVersion"]
        for index in range(5):
            server.put(ready_node(f"node-{index}"))
        with pytest.raises(ApiException) as raised:
            list(kubernetes.watch.Watch().stream(v1.list_node, resource_version=start, timeout_seconds=1))
        assert raised.value.status == 410


def test_watch_flag_spellings(kube_api, v1):
    v1.create_namespaced_pod(NS, pod_manifest("one"))
    for flag in ("true", "True", "1"):
        connection = http.client.HTTPConnection("127.0.0.1", int(kube_api.url.rsplit(":", 1)[1]), timeout=10)
        connection.request("GET", f"/api/v1/namespaces/{NS}/pods?watch={flag}",
                           headers={"Authorization": f"Bearer {kube_api.token}"})
        response = connection.getresponse()
        assert (response.status, response.getheader("Transfer-Encoding")) == (200, "chunked")
        assert json.loads(response.readline())["type"] == "ADDED", flag
        connection.close()


def test_drop_watches_ends_open_watches(kube_api, v1):
    done = threading.Event()

    def watch():
        stream(v1, timeout_seconds=30)
        done.set()

    threading.Thread(target=watch, daemon=True).start()
    until(lambda: ("watch", "pods", "") in kube_api.requests, "the watch to be open")
    time.sleep(0.1)  # not a wait for state: gives the watch time to be parked, so dropping it is tested
    kube_api.drop_watches()
    assert done.wait(5)


def test_a_selector_watch_sees_objects_move_in_and_out(kube_api, v1):
    v1.create_namespaced_pod(NS, pod_manifest("one", labels={"team": "a"}))
    version = raw(v1.list_namespaced_pod(NS, _preload_content=False))["metadata"]["resourceVersion"]
    kube_api.patch_labels("Pod", "one", {"team": "b"}, NS)
    kube_api.patch_labels("Pod", "one", {"team": "a"}, NS)
    events = take(v1, 2, resource_version=version, label_selector="team=a")
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]


# --- selectors ------------------------------------------------------------------------------------

LABELLED = {"a": {"tier": "gpu", "team": "x"}, "b": {"tier": "cpu"}, "c": {"tier": "gpu", "legacy": "true"}}


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        pytest.param("tier=gpu", ["a", "c"], id="equals"),
        pytest.param("tier==gpu", ["a", "c"], id="double equals"),
        pytest.param("tier!=gpu", ["b"], id="not equals"),
        pytest.param("tier in (gpu, tpu)", ["a", "c"], id="in"),
        pytest.param("tier notin (gpu)", ["b"], id="notin"),
        pytest.param("team", ["a"], id="exists"),
        pytest.param("!legacy", ["a", "b"], id="does not exist"),
        pytest.param("tier in (gpu,cpu),!team,legacy", ["c"], id="several requirements"),
    ],
)
def test_label_selectors(v1, selector, names):
    for name, labels in LABELLED.items():
        v1.create_namespaced_pod(NS, pod_manifest(name, labels=labels))
    listing = raw(v1.list_namespaced_pod(NS, label_selector=selector, _preload_content=False))
    assert [p["metadata"]["name"] for p in listing["items"]] == names


def test_field_selectors(kube_api, v1):
    kube_api.put(ready_node("node-b"))
    v1.create_namespaced_pod(NS, pod_manifest("on-a"))
    v1.create_namespaced_pod(NS, pod_manifest("on-b", node="node-b"))
    v1.create_namespaced_pod("other", pod_manifest("elsewhere"))

    def names(**kwargs):
        return sorted(p.metadata.name for p in v1.list_pod_for_all_namespaces(**kwargs).items)

    assert names(field_selector="spec.nodeName=node-b") == ["on-b"]
    assert names(field_selector="spec.nodeName!=node-b") == ["elsewhere", "on-a"]
    assert names(field_selector="metadata.namespace=other") == ["elsewhere"]
    assert names(field_selector="metadata.name=on-a,spec.nodeName=node-a") == ["on-a"]
    events = v1.list_namespaced_event(NS, field_selector="involvedObject.name=on-b,involvedObject.kind=Pod")
    assert [(e.reason, e.message) for e in events.items] == [("Scheduled", "Successfully assigned default/on-b to node-b")]
    with pytest.raises(ApiException) as raised:
        v1.list_namespaced_pod(NS, label_selector="tier in (gpu")
    assert raised.value.status == 400


def test_lists_page_with_limit_and_continue(kube_api, v1):
    for index in range(5):
        kube_api.put(ready_node(f"node-{index}"))
    first = raw(v1.list_node(limit=2, _preload_content=False))
    assert [n["metadata"]["name"] for n in first["items"]] == ["node-0", "node-1"]
    assert first["metadata"]["remainingItemCount"] == 4
    kube_api.remove("Node", "node-1")  # a removal between pages shifts nothing out of the next page
    second = raw(v1.list_node(limit=2, _continue=first["metadata"]["continue"], _preload_content=False))
    assert [n["metadata"]["name"] for n in second["items"]] == ["node-2", "node-3"]
    third = raw(v1.list_node(limit=2, _continue=second["metadata"]["continue"], _preload_content=False))
    assert [n["metadata"]["name"] for n in third["items"]] == ["node-4", "node-a"]
    assert "continue" not in third["metadata"]
    assert first["metadata"]["resourceVersion"] == third["metadata"]["resourceVersion"]


# --- create, read, update, delete ------------------------------------------------------------------


def test_create_fills_in_identity_and_refuses_duplicates(v1):
    created = raw(v1.create_namespaced_pod(NS, pod_manifest(), _preload_content=False))
    assert created["metadata"]["name"].startswith("job-") and len(created["metadata"]["name"]) == 9
    assert created["metadata"]["uid"] and created["metadata"]["creationTimestamp"].endswith("Z")
    assert created["status"]["phase"] == "Pending"
    v1.create_namespaced_pod(NS, pod_manifest("fixed"))
    with pytest.raises(ApiException) as raised:
        v1.create_namespaced_pod(NS, pod_manifest("fixed"))
    assert raised.value.status == 409
    assert json.loads(raised.value.body)["reason"] == "AlreadyExists"


@pytest.mark.parametrize(
    ("metadata", "needle"),
    [
        pytest.param({}, "name or generateName is required", id="no name"),
        pytest.param({"name": "Upper_Case"}, "RFC 1123", id="not a DNS name"),
        pytest.param({"name": "ok", "labels": {"x": "not a label value"}}, "label value", id="bad label"),
    ],
)
def test_invalid_objects_are_422(v1, metadata, needle):
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": {}}
    with pytest.raises(ApiException) as raised:
        v1.create_namespaced_secret(NS, body)
    status = json.loads(raised.value.body)
    assert (raised.value.status, status["kind"], status["reason"]) == (422, "Status", "Invalid")
    assert needle in status["message"]


def test_a_stale_replace_is_a_409_conflict(v1):
    v1.create_namespaced_secret(NS, {"metadata": {"name": "s"}, "data": {"k": "dg=="}})
    first = v1.read_namespaced_secret("s", NS)
    second = v1.read_namespaced_secret("s", NS)
    first.data = {"k": "MQ=="}
    v1.replace_namespaced_secret("s", NS, first)
    second.data = {"k": "Mg=="}
    with pytest.raises(ApiException) as raised:
        v1.replace_namespaced_secret("s", NS, second)
    assert raised.value.status == 409
    assert json.loads(raised.value.body)["reason"] == "Conflict"
    assert v1.read_namespaced_secret("s", NS).data == {"k": "MQ=="}


def test_patches_merge_and_the_status_subresource_owns_status(kube_api, v1):
    v1.create_namespaced_pod(NS, pod_manifest("one", labels={"keep": "1", "drop": "1"}))
    patched = v1.patch_namespaced_pod("one", NS, {"metadata": {"labels": {"drop": None, "new": "2"}},
                                                  "status": {"phase": "Running"}})
    assert patched.metadata.labels == {"keep": "1", "new": "2"}
    assert patched.status.phase == "Pending"  # the main resource ignores status, as the API does
    patched = v1.patch_namespaced_pod("one", NS, [{"op": "add", "path": "/metadata/labels/json", "value": "3"}])
    assert patched.metadata.labels["json"] == "3"
    version = patched.metadata.resource_version
    v1.patch_namespaced_pod_status("one", NS, {"status": {"phase": "Running", "podIP": "127.0.0.1"}})
    events = take(v1, 1, resource_version=version)
    assert [e["type"] for e in events] == ["MODIFIED"]
    assert events[0]["raw"]["status"]["phase"] == "Running"
    with pytest.raises(ApiException) as raised:
        v1.patch_namespaced_pod("one", NS, {"spec": {"nodeName": "node-b"}})
    assert raised.value.status == 422


def test_errors_are_kubernetes_status_objects(kube_api, v1):
    with pytest.raises(ApiException) as raised:
        v1.read_namespaced_pod("missing", NS)
    assert raised.value.status == 404
    assert json.loads(raised.value.body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods "missing" not found', "reason": "NotFound", "code": 404,
        "details": {"name": "missing", "kind": "pods"}}
    code, body = get(kube_api, "/api/v1/nodes")
    assert (code, json.loads(body)["reason"]) == (401, "Unauthorized")
    code, body = get(kube_api, "/api/v1/nodes", token="wrong")
    assert code == 401
    code, body = get(kube_api, "/apis/batch/v1/jobs", token=kube_api.token)
    assert (code, json.loads(body)["kind"], json.loads(body)["reason"]) == (404, "Status", "NotFound")


def test_deleting_a_bound_pod_waits_for_its_kubelet(kube_api, v1):
    v1.create_namespaced_pod(NS, pod_manifest("bound"))
    v1.create_namespaced_pod(NS, pod_manifest("nowhere", node="node-zz"))
    assert v1.delete_namespaced_pod("nowhere", NS).metadata.name == "nowhere"
    assert kube_api.get("Pod", "nowhere", NS) is None  # never bound: gone at once

    terminating = v1.delete_namespaced_pod("bound", NS)
    assert terminating.metadata.deletion_timestamp is not None
    assert terminating.metadata.deletion_grace_period_seconds == 30
    assert kube_api.get("Pod", "bound", NS)["metadata"]["deletionTimestamp"]
    v1.delete_namespaced_pod("bound", NS, grace_period_seconds=0)  # a forced delete
    assert kube_api.get("Pod", "bound", NS) is None

    v1.create_namespaced_secret(NS, {"metadata": {"name": "s"}})
    assert v1.delete_namespaced_secret("s", NS)["status"] == "Success"  # the client returns a plain dict here


def test_requests_are_recorded_as_rbac_verbs(kube_api, v1):
    v1.create_namespaced_pod(NS, pod_manifest("one"))
    v1.read_namespaced_pod("one", NS)
    v1.list_namespaced_pod(NS)
    take(v1, 1)
    v1.patch_namespaced_pod_status("one", NS, {"status": {"phase": "Running"}})
    v1.delete_namespaced_pod("one", NS)
    v1.list_node()
    assert kube_api.requests == [("create", "pods", ""), ("get", "pods", ""), ("list", "pods", ""),
                                 ("watch", "pods", ""), ("patch", "pods", "status"), ("delete", "pods", ""),
                                 ("list", "nodes", "")]


def test_a_kubeconfig_reaches_the_server(kube_api, tmp_path):
    kube_api.put(ready_node("node-a"))
    client = kubernetes.config.new_client_from_config(config_file=str(kube_api.kubeconfig(tmp_path / "config")))
    assert [n.metadata.name for n in CoreV1Api(client).list_node().items] == ["node-a"]


# --- the scheduler ---------------------------------------------------------------------------------


def by_hostname(node: str) -> dict:
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def test_a_pod_is_bound_to_the_node_its_affinity_names(kube_api, v1):
    kube_api.put(ready_node("node-b"))
    v1.create_namespaced_pod(NS, pod_manifest("by-field", node="node-b"))
    v1.create_namespaced_pod(NS, pod_manifest("by-label", node=None, affinity=by_hostname("node-b")))
    for name in ("by-field", "by-label"):
        pod = v1.read_namespaced_pod(name, NS)
        assert pod.spec.node_name == "node-b"
        assert [(c.type, c.status) for c in pod.status.conditions] == [("PodScheduled", "True")]


@pytest.mark.parametrize(
    ("node", "why"),
    [
        pytest.param(ready_node("node-b", unschedulable=True), "1 node(s) were unschedulable", id="cordoned"),
        pytest.param(ready_node("node-b", ready="False"), "1 node(s) were not ready", id="not ready"),
        pytest.param(ready_node("node-b", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
                     "1 node(s) had untolerated taint {gpu: yes}", id="tainted"),
        pytest.param(None, "2 node(s) didn't match Pod's node affinity/selector", id="no such node"),
    ],
)
def test_an_unschedulable_pod_stays_pending_with_an_event(kube_api, v1, node, why):
    kube_api.put(node or ready_node("node-c"))
    v1.create_namespaced_pod(NS, pod_manifest("stuck", node="node-b"))
    pod = v1.read_namespaced_pod("stuck", NS)
    assert pod.spec.node_name is None and pod.status.phase == "Pending"
    [condition] = pod.status.conditions
    assert (condition.type, condition.status, condition.reason) == ("PodScheduled", "False", "Unschedulable")
    [event] = v1.list_namespaced_event(NS, field_selector="involvedObject.name=stuck").items
    assert (event.type, event.reason, event.source.component) == ("Warning", "FailedScheduling", "default-scheduler")
    assert event.message.startswith("0/2 nodes are available: ")
    assert why in event.message


def test_a_tolerated_taint_and_a_node_that_becomes_ready_let_pods_through(kube_api, v1):
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    kube_api.put(ready_node("node-b", taints=[taint]))
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    v1.create_namespaced_pod(NS, pod_manifest("tolerant", node="node-b", tolerations=[toleration]))
    assert v1.read_namespaced_pod("tolerant", NS).spec.node_name == "node-b"

    kube_api.put(ready_node("node-c", ready="False"))
    v1.create_namespaced_pod(NS, pod_manifest("waits", node="node-c"))
    assert v1.read_namespaced_pod("waits", NS).spec.node_name is None
    kube_api.put(ready_node("node-c"))
    assert v1.read_namespaced_pod("waits", NS).spec.node_name == "node-c"


def test_a_pod_created_with_a_node_name_is_taken_as_is(kube_api, v1):
    v1.create_namespaced_pod(NS, pod_manifest("pinned", node=None, nodeName="node-q"))
    assert v1.read_namespaced_pod("pinned", NS).spec.node_name == "node-q"
    assert v1.list_namespaced_event(NS).items == []


# --- logs ------------------------------------------------------------------------------------------


def test_logs_are_served_whole_tailed_and_followed(kube_api, v1, tmp_path):
    v1.create_namespaced_pod(NS, pod_manifest("talker"))
    with pytest.raises(ApiException) as raised:
        v1.read_namespaced_pod_log("talker", NS)
    assert raised.value.status == 400 and "is waiting to start: ContainerCreating" in json.loads(raised.value.body)["message"]
    log = tmp_path / "main.log"
    log.write_text("一\n二\n三\n", encoding="utf-8")
    kube_api.serve_logs(NS, "talker", log)
    assert v1.read_namespaced_pod_log("talker", NS) == "一\n二\n三\n"
    assert v1.read_namespaced_pod_log("talker", NS, tail_lines=1) == "三\n"

    def finish():
        with log.open("a", encoding="utf-8") as out:
            out.write("四\n")
        pod = kube_api.get("Pod", "talker", NS)
        kube_api.update_status("Pod", "talker", {**pod["status"], "containerStatuses": [
            {"name": "main", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}, NS)

    threading.Timer(0.3, finish).start()
    response = v1.read_namespaced_pod_log("talker", NS, follow=True, tail_lines=2, _preload_content=False)
    assert response.data.decode() == "二\n三\n四\n"


def test_services_get_a_cluster_ip_and_pods_a_qos_class(v1):
    plain = v1.create_namespaced_service(NS, {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    headless = v1.create_namespaced_service(NS, {"metadata": {"name": "peers"},
                                                 "spec": {"clusterIP": "None", "selector": {"job": "1"}}})
    assert plain.spec.cluster_ip.startswith("10.96.") and headless.spec.cluster_ip == "None"
    exact = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    guaranteed = pod_manifest("exact")
    guaranteed["spec"]["containers"][0]["resources"] = exact
    burstable = pod_manifest("loose")
    burstable["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    classes = [v1.create_namespaced_pod(NS, body).status.qos_class
               for body in (guaranteed, burstable, pod_manifest("none"))]
    assert classes == ["Guaranteed", "Burstable", "BestEffort"]


def test_a_watch_sees_every_concurrent_change_once_and_in_order(kube_api, v1):
    for index in range(4):
        kube_api.put(ready_node(f"node-{index}"))
    version = raw(v1.list_node(_preload_content=False))["metadata"]["resourceVersion"]

    def churn(index: int) -> None:
        for step in range(100):
            kube_api.patch_labels("Node", f"node-{index}", {"step": str(step)})

    writers = [threading.Thread(target=churn, args=(index,)) for index in range(4)]
    for writer in writers:
        writer.start()
    seen = []
    watch = kubernetes.watch.Watch()
    for event in watch.stream(v1.list_node, resource_version=version, timeout_seconds=10):
        seen.append((int(event["raw_object"]["metadata"]["resourceVersion"]), event["raw_object"]["metadata"]["name"],
                     event["raw_object"]["metadata"]["labels"]["step"]))
        if len(seen) == 400:
            watch.stop()
    for writer in writers:
        writer.join()
    assert [v for v, _n, _s in seen] == list(range(int(version) + 1, int(version) + 401))
    for index in range(4):
        assert [s for _v, n, s in seen if n == f"node-{index}"] == [str(step) for step in range(100)]
