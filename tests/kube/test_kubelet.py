"""The local kubelet: pods bound to its nodes run as real processes, seen through the official client."""

from __future__ import annotations

import base64
import json
import textwrap
import threading
import urllib.request

import kubernetes
import psutil
import pytest
from kubernetes.client import CoreV1Api

from tests.harness import free_port, until
from tests.kube.kubelet import LocalKubelet, leftover_processes

pytest_plugins = ("tests.kube.fixtures",)

NS = "default"


def pod_manifest(name: str, code: str, *, node: str = "node-a", image: str = "python:3.11", **extra) -> dict:
    """A pod on ``node`` (required affinity, as the backend writes it) running ``python -c code``."""
    container = {"name": "main", "image": image, "command": ["python", "-c", textwrap.dedent(code)]}
    container.update(extra.pop("container", {}))
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    spec = {"containers": [container], "restartPolicy": "Never",
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}},
            **extra}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


@pytest.fixture
def v1(kube_api) -> CoreV1Api:
    return CoreV1Api(kube_api.api_client())


def pod(kube_api, name: str) -> dict:
    return kube_api.get("Pod", name, NS) or {}


def phase(kube_api, name: str) -> str | None:
    return pod(kube_api, name).get("status", {}).get("phase")


def state(kube_api, name: str) -> dict:
    statuses = pod(kube_api, name).get("status", {}).get("containerStatuses") or [{}]
    return statuses[0].get("state") or {}


def condition(kube_api, name: str, kind: str) -> str | None:
    conditions = pod(kube_api, name).get("status", {}).get("conditions") or []
    return next((c["status"] for c in conditions if c["type"] == kind), None)


def events(v1: CoreV1Api, name: str) -> list[tuple[str, str, str]]:
    found = v1.list_namespaced_event(NS, field_selector=f"involvedObject.name={name}").items
    return [(e.type, e.reason, e.message) for e in found]


def pids_in_log(kube_api, name: str) -> list[int]:
    """The ``pid=N`` words the pod has logged so far."""
    path = kube_api.log_path(NS, name)
    words = path.read_text().split() if path is not None and path.exists() else []
    return [int(word.split("=")[1]) for word in words if word.startswith("pid=")]


def test_a_pod_runs_to_completion_with_its_env_secret_and_files(kube_api, kubelet, v1, tmp_path):
    v1.create_namespaced_secret(NS, {"metadata": {"name": "creds"}, "stringData": {"token": "s3cret", "ca.pem": "PEM"}})
    shared = tmp_path / "shared"
    shared.mkdir()
    code = """
        import os, pathlib
        print("token", os.environ["TOKEN"])
        print("ip", os.environ["POD_IP"], "name", os.environ["POD_NAME"], "node", os.environ["NODE"])
        print("plain", os.environ["PLAIN"])
        print("file", pathlib.Path(os.environ["CA"]).read_text())
        pathlib.Path("/mnt/shared/out.txt").write_text("written")
        print("中文输出")
    """
    env = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
           {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
           {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
           {"name": "PLAIN", "value": "value"},
           {"name": "CA", "value": "/etc/creds/ca.pem"}]
    mounts = [{"name": "creds", "mountPath": "/etc/creds", "readOnly": True},
              {"name": "shared", "mountPath": "/mnt/shared"}]
    volumes = [{"name": "creds", "secret": {"secretName": "creds"}},
               {"name": "shared", "hostPath": {"path": str(shared)}}]
    start = v1.list_namespaced_pod(NS, _preload_content=False)
    version = json.loads(start.data)["metadata"]["resourceVersion"]
    v1.create_namespaced_pod(NS, pod_manifest("job-1", code, container={"env": env, "volumeMounts": mounts},
                                              volumes=volumes))

    until(lambda: phase(kube_api, "job-1") == "Succeeded", "the pod to succeed", timeout=15)
    terminated = state(kube_api, "job-1")["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    observed = v1.read_namespaced_pod("job-1", NS)  # the client's models accept every field reported
    ip = observed.status.pod_ip
    assert ip.startswith("127.42.") and observed.status.host_ip == "127.0.0.1"  # its own address on the node's
    assert v1.read_namespaced_pod_log("job-1", NS).splitlines() == [
        "token s3cret", f"ip {ip} name job-1 node node-a", "plain value", "file PEM", "中文输出"]
    assert (shared / "out.txt").read_text() == "written"  # the hostPath is used in place
    assert (kubelet.root / "job-1" / "creds" / "ca.pem").read_text() == "PEM"
    assert observed.status.container_statuses[0].state.terminated

    # Watchers saw the whole life: bound, Running and Ready, then Succeeded, each a new version.
    seen = []
    for event in kubernetes.watch.Watch().stream(v1.list_namespaced_pod, NS, resource_version=version,
                                                 timeout_seconds=1):
        status = event["raw_object"].get("status") or {}
        ready = next((c["status"] for c in status.get("conditions") or [] if c["type"] == "Ready"), None)
        entry = (event["type"], status.get("phase"), ready)
        if not seen or seen[-1] != entry:
            seen.append(entry)
    assert seen == [("ADDED", "Pending", None), ("MODIFIED", "Pending", None), ("MODIFIED", "Running", "True"),
                    ("MODIFIED", "Succeeded", "False")]
    assert [reason for _t, reason, _m in events(v1, "job-1")] == ["Scheduled", "Pulled", "Created", "Started"]


def test_followed_logs_stream_whole_characters_until_the_container_ends(kube_api, kubelet, v1):
    code = """
        import sys, time
        for i in range(3):
            print(f"第{i}行 汉字", flush=True)
            time.sleep(0.1)
        sys.stdout.write("长" * 40000)   # one line longer than a chunk, no newline until the end
        sys.stdout.flush()
        time.sleep(0.2)
        half = "完".encode()
        sys.stdout.buffer.write(half[:1])   # a character's bytes written apart, as a pipe may pass them
        sys.stdout.flush()
        time.sleep(0.2)
        sys.stdout.buffer.write(half[1:] + b"\\n")
    """
    v1.create_namespaced_pod(NS, pod_manifest("talker", code))
    until(lambda: phase(kube_api, "talker") == "Running", "the pod to run")
    response = v1.read_namespaced_pod_log("talker", NS, follow=True, _preload_content=False)
    chunks = list(response.stream(amt=None, decode_content=False))
    text = "".join(chunk.decode("utf-8") for chunk in chunks)  # strict: a split character would raise
    assert text == "第0行 汉字\n第1行 汉字\n第2行 汉字\n" + "长" * 40000 + "完\n"
    assert len(chunks) > 2
    assert phase(kube_api, "talker") == "Succeeded"
    assert v1.read_namespaced_pod_log("talker", NS, tail_lines=1) == "长" * 40000 + "完\n"


def test_a_failing_pod_reports_its_exit_code(kube_api, kubelet, v1):
    v1.create_namespaced_pod(NS, pod_manifest("fails", "import sys; print('bad'); sys.exit(3)", node="node-b"))
    until(lambda: phase(kube_api, "fails") == "Failed", "the pod to fail")
    terminated = state(kube_api, "fails")["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert v1.read_namespaced_pod_log("fails", NS) == "bad\n"


def gone(pid: int) -> bool:
    """The process has ended (a zombie not yet reaped counts)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


SLEEPER = "import os, time\nprint(f'pid={os.getpid()}', flush=True)\ntime.sleep(60)"


def test_oom_kill(kube_api, kubelet):
    kube_api.put(pod_manifest("hungry", SLEEPER))
    until(lambda: pids_in_log(kube_api, "hungry"), "the pod to start")
    kubelet.oom_kill(NS, "hungry")
    until(lambda: phase(kube_api, "hungry") == "Failed", "the pod to fail")
    terminated = state(kube_api, "hungry")["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "OOMKilled")
    with pytest.raises(LookupError, match="not running"):
        kubelet.oom_kill(NS, "hungry")


def test_eviction(kube_api, kubelet, v1):
    kube_api.put(pod_manifest("evictee", SLEEPER))
    until(lambda: pids_in_log(kube_api, "evictee"), "the pod to start")
    kubelet.evict(NS, "evictee", "The node was low on resource: memory.")
    until(lambda: phase(kube_api, "evictee") == "Failed", "the pod to fail")
    status = pod(kube_api, "evictee")["status"]
    assert (status["reason"], status["message"]) == ("Evicted", "The node was low on resource: memory.")
    assert condition(kube_api, "evictee", "DisruptionTarget") == "True"
    assert ("Warning", "Evicted", "The node was low on resource: memory.") in events(v1, "evictee")


def test_node_loss(kube_api, kubelet, v1):
    kube_api.put(pod_manifest("stranded", SLEEPER))
    until(lambda: pids_in_log(kube_api, "stranded"), "the pod to start")
    [pid] = pids_in_log(kube_api, "stranded")
    kubelet.lose_node("node-a")
    until(lambda: gone(pid), "the pod's process to die")
    node = v1.read_node("node-a")
    assert [(c.type, c.status) for c in node.status.conditions if c.type == "Ready"] == [("Ready", "Unknown")]
    assert {(t.key, t.effect) for t in node.spec.taints} == {("node.kubernetes.io/unreachable", "NoSchedule"),
                                                             ("node.kubernetes.io/unreachable", "NoExecute")}
    # Nobody reports the pod's end: it stays Running, but not Ready, as the node controller marks it.
    assert phase(kube_api, "stranded") == "Running"
    assert condition(kube_api, "stranded", "Ready") == "False"
    # A deletion stays pending on a silent node until it is forced.
    v1.delete_namespaced_pod("stranded", NS)
    assert pod(kube_api, "stranded")["metadata"]["deletionTimestamp"]
    v1.delete_namespaced_pod("stranded", NS, grace_period_seconds=0)
    assert kube_api.get("Pod", "stranded", NS) is None
    # New pods for the lost node are not scheduled there.
    kube_api.put(pod_manifest("next", SLEEPER))
    assert "untolerated taint {node.kubernetes.io/unreachable: }" in events(v1, "next")[0][2]


def test_an_image_that_cannot_be_pulled_backs_off(kube_api, kubelet, v1):
    kube_api.put(pod_manifest("no-image", "print(1)", image="registry.example/does-not-exist:1"))
    until(lambda: state(kube_api, "no-image").get("waiting", {}).get("reason") == "ImagePullBackOff", "a back-off")
    assert phase(kube_api, "no-image") == "Pending"
    reasons = [(kind, reason) for kind, reason, _m in events(v1, "no-image")]
    assert reasons == [("Normal", "Scheduled"), ("Warning", "Failed"), ("Warning", "Failed"),
                       ("Warning", "BackOff"), ("Warning", "Failed")]
    assert 'Failed to pull image "registry.example/does-not-exist:1"' in events(v1, "no-image")[1][2]
    with pytest.raises(kubernetes.client.ApiException) as raised:
        v1.read_namespaced_pod_log("no-image", NS)
    assert "is waiting to start: ImagePullBackOff" in raised.value.body
    v1.delete_namespaced_pod("no-image", NS)
    until(lambda: kube_api.get("Pod", "no-image", NS) is None, "the pod to go")


def test_an_unschedulable_pod_gets_a_failed_scheduling_event(kube_api, kubelet, v1):
    kube_api.put(pod_manifest("nowhere", "print(1)", node="node-z"))
    [(kind, reason, message)] = events(v1, "nowhere")
    assert (kind, reason) == ("Warning", "FailedScheduling")
    assert message.startswith("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.")
    assert phase(kube_api, "nowhere") == "Pending" and kubelet.root.joinpath("nowhere").exists() is False


def test_deletion_sends_sigterm_then_sigkill_after_the_grace_period(kube_api, kubelet, v1):
    polite = "import os, signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n" \
             "print(f'pid={os.getpid()}', flush=True)\ntime.sleep(60)"
    stubborn = "import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" \
               "print(f'pid={os.getpid()}', flush=True)\ntime.sleep(60)"
    kube_api.put(pod_manifest("polite", polite))
    kube_api.put(pod_manifest("stubborn", stubborn, terminationGracePeriodSeconds=1))
    until(lambda: pids_in_log(kube_api, "polite") and pids_in_log(kube_api, "stubborn"), "the pods to start")

    watched: list[tuple[str, bool]] = []
    done = threading.Event()

    def watch():
        for event in kubernetes.watch.Watch().stream(v1.list_namespaced_pod, NS, field_selector="metadata.name=polite",
                                                     resource_version=pod(kube_api, "polite")["metadata"]["resourceVersion"],
                                                     timeout_seconds=10):
            watched.append((event["type"], bool(event["raw_object"]["metadata"].get("deletionTimestamp"))))
            if event["type"] == "DELETED":
                done.set()
                return

    threading.Thread(target=watch, daemon=True).start()
    until(lambda: ("watch", "pods", "") in kube_api.requests, "the watch")
    v1.delete_namespaced_pod("polite", NS)
    v1.delete_namespaced_pod("stubborn", NS)
    assert done.wait(10)
    assert watched == [("MODIFIED", True), ("DELETED", True)]
    assert pod(kube_api, "stubborn")["metadata"]["deletionTimestamp"]  # still within its 1 s grace
    until(lambda: kube_api.get("Pod", "stubborn", NS) is None, "the stubborn pod to be killed", timeout=5)
    assert ("Normal", "Killing", "Stopping container main") in events(v1, "stubborn")


def test_readiness_waits_for_the_http_probe_at_each_pods_own_address(kube_api, kubelet):
    """Two pods listen on the same port, each at its own address (the downward API's status.podIP), as pods
    with network namespaces of their own do; each is Ready once its probe answers there."""
    port = free_port()
    code = f"""
        import http.server, os, time
        time.sleep(0.5)
        class Name(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200); self.end_headers(); self.wfile.write(os.environ["HOSTNAME"].encode())
        http.server.HTTPServer((os.environ["POD_IP"], {port}), Name).serve_forever()
    """
    probe = {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1}
    address = {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    for name in ("web-1", "web-2"):
        kube_api.put(pod_manifest(name, code, container={"readinessProbe": probe, "env": [address],
                                                         "ports": [{"name": "http", "containerPort": port}]}))
    until(lambda: phase(kube_api, "web-1") == "Running", "the pod to run")
    assert condition(kube_api, "web-1", "Ready") == "False"
    for name in ("web-1", "web-2"):
        until(lambda name=name: condition(kube_api, name, "Ready") == "True", f"{name}'s probe to pass")
        assert state(kube_api, name)["running"]
        ip = pod(kube_api, name)["status"]["podIP"]
        with urllib.request.urlopen(f"http://{ip}:{port}/", timeout=5) as answer:
            assert answer.read().decode() == name
    assert pod(kube_api, "web-1")["status"]["podIP"] != pod(kube_api, "web-2")["status"]["podIP"]


def test_a_missing_secret_holds_the_pod_until_it_exists(kube_api, kubelet, v1):
    env = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "later", "key": "token"}}}]
    kube_api.put(pod_manifest("patient", "import os; print(os.environ['TOKEN'])", container={"env": env}))
    until(lambda: state(kube_api, "patient").get("waiting", {}).get("reason") == "CreateContainerConfigError",
          "the pod to wait for its secret")
    assert [reason for _t, reason, _m in events(v1, "patient")] == ["Scheduled", "Failed"]  # reported once
    kube_api.put({"kind": "Secret", "metadata": {"name": "later", "namespace": NS},
                  "data": {"token": base64.b64encode(b"now").decode()}})
    until(lambda: phase(kube_api, "patient") == "Succeeded", "the pod to run once the secret exists")
    assert v1.read_namespaced_pod_log("patient", NS) == "now\n"


def test_stop_leaves_nothing_running(kube_api, tmp_path):
    parent = """
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print(f"pid={os.getpid()} pid={child.pid}", flush=True)
        time.sleep(60)
    """
    with LocalKubelet(kube_api, ["node-a"], tmp_path / "kubelet") as kubelet:
        assert kube_api.get("Node", "node-a")["status"]["conditions"][-1]["status"] == "True"  # it registered
        kube_api.put(pod_manifest("parent", parent))
        pids = until(lambda: len(pids_in_log(kube_api, "parent")) == 2 and pids_in_log(kube_api, "parent"),
                     "the pod and its child to start")
        assert all(psutil.pid_exists(pid) for pid in pids)
        assert len(leftover_processes(kubelet.root)) == 2  # the check below can see them

    until(lambda: all(gone(pid) for pid in pids), "every process the kubelet started to end", timeout=5)
    assert leftover_processes(kubelet.root) == []


def kernel_info_reply(client) -> bool:
    from queue import Empty

    client.kernel_info()
    try:
        if client.get_shell_msg(timeout=1)["msg_type"] != "kernel_info_reply":
            return False
        client.get_iopub_msg(timeout=1)  # IOPub is connected too: the cell's output will not be missed
        return True
    except Empty:
        return False


def test_a_kernel_runs_in_a_pod_from_its_mounted_connection_file(kube_api, kubelet, v1):
    from jupyter_client import BlockingKernelClient

    connection = {"ip": "127.0.0.1", "transport": "tcp", "signature_scheme": "hmac-sha256", "key": "k" * 32,
                  **{name: free_port() for name in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")}}
    v1.create_namespaced_secret(NS, {"metadata": {"name": "kernel-1"}, "stringData": {"connection.json": json.dumps(connection)}})
    container = {"command": ["python", "-m", "ipykernel_launcher", "-f", "/var/run/hetero/kernel/connection.json"],
                 "volumeMounts": [{"name": "connection", "mountPath": "/var/run/hetero/kernel", "readOnly": True}]}
    body = pod_manifest("kernel-1", "", container=container,
                        volumes=[{"name": "connection", "secret": {"secretName": "kernel-1"}}])
    v1.create_namespaced_pod(NS, body)
    until(lambda: phase(kube_api, "kernel-1") == "Running", "the kernel pod to run")
    client = BlockingKernelClient()
    client.load_connection_info(connection)
    client.start_channels()
    try:
        # Asked on the shell channel until it answers: wait_for_ready also reads a missed heartbeat (a busy
        # machine misses one now and then) as a dead kernel.
        until(lambda: kernel_info_reply(client), "the kernel in the pod to answer kernel_info", timeout=60)
        printed = []

        def output(message):
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])

        reply = client.execute_interactive("import os; print(os.environ['HOSTNAME'])", timeout=10, output_hook=output)
        assert reply["content"]["status"] == "ok"
        assert "".join(printed) == "kernel-1\n"
    finally:
        client.stop_channels()
    v1.delete_namespaced_pod("kernel-1", NS)
    until(lambda: kube_api.get("Pod", "kernel-1", NS) is None, "the kernel pod to stop on SIGTERM", timeout=10)
