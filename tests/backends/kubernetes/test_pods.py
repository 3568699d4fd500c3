"""A pod's status read in the scheduler's terms: alive or ended, how it ended, why it is stuck."""

from __future__ import annotations

from datetime import datetime, timezone

from jupyter_hetero.backends.kubernetes.pods import PodState, pod_problem, pod_state

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc).timestamp()


def _at(seconds_ago: float) -> str:
    return datetime.fromtimestamp(NOW - seconds_ago, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod(phase="Pending", *, node="gpu-1", container=None, conditions=(), reason=None, message=None, created=300):
    status = {"phase": phase, "conditions": list(conditions)}
    if container is not None:
        status["containerStatuses"] = [{"name": "main", **container}]
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    spec = {"containers": [{"name": "main", "image": "registry.example/train:1"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}]}]}}}}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "p", "namespace": "hetero", "creationTimestamp": _at(created)}, "spec": spec,
            "status": status}


def test_a_running_ready_pod_is_alive_started_and_ready_with_its_ip():
    pod = _pod("Running", container={"state": {"running": {"startedAt": _at(5)}}},
               conditions=[{"type": "Ready", "status": "True"}])
    pod["status"]["podIP"] = "10.0.3.7"
    assert pod_state(pod) == PodState(alive=True, started=True, ready=True, ip="10.0.3.7", exit_code=None,
                                      reason=None)


def test_a_pending_pod_is_alive_but_not_started():
    assert pod_state(_pod(node=None)) == PodState(alive=True, started=False, ready=False, ip=None, exit_code=None,
                                                  reason=None)


def test_an_ended_pod_gives_its_exit_code_and_only_telling_reasons():
    failed = _pod("Failed", container={"state": {"terminated": {"exitCode": 3, "reason": "Error"}}})
    assert (pod_state(failed).alive, pod_state(failed).exit_code, pod_state(failed).reason) == (False, 3, None)
    done = _pod("Succeeded", container={"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}})
    assert (pod_state(done).exit_code, pod_state(done).reason) == (0, None)


def test_out_of_memory_eviction_and_deadlines_are_named():
    oom = pod_state(_pod("Failed", container={"state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}))
    assert oom.exit_code == 137 and oom.reason.startswith("out of memory") and "OOMKilled" in oom.reason
    evicted = pod_state(_pod("Failed", reason="Evicted", message="The node was low on resource: memory.",
                             container={"state": {"terminated": {"exitCode": 137, "reason": "Error"}}}))
    assert evicted.exit_code is None  # a disruption, not the work's own end: lost rather than failed
    assert evicted.reason == "evicted by the kubelet: The node was low on resource: memory."
    deadline = pod_state(_pod("Failed", reason="DeadlineExceeded", message="Pod was active on the node longer"))
    assert deadline.reason.startswith("its active deadline was exceeded")


def test_an_unbound_pod_is_a_problem_only_after_the_patience_and_says_what_kube_scheduler_said():
    pending = _pod(node=None, conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                           "lastTransitionTime": _at(30), "message": "condition message"}])
    events = [{"reason": "FailedScheduling", "message": "0/3 nodes are available: 1 Insufficient nvidia.com/gpu.",
               "lastTimestamp": _at(10)}]
    assert pod_problem(pending, events, now_wall=NOW, unschedulable_s=60, image_pull_s=60) is None
    assert pod_problem(pending, events, now_wall=NOW, unschedulable_s=20, image_pull_s=60) == (
        "kube-scheduler could not bind the pod to node gpu-1: 0/3 nodes are available: 1 Insufficient nvidia.com/gpu.")
    assert "condition message" in pod_problem(pending, [], now_wall=NOW, unschedulable_s=0, image_pull_s=0)


def test_a_pod_no_scheduler_acts_on_is_a_problem_after_the_same_patience_from_its_creation():
    # No PodScheduled condition at all: the schedulerName it asks for runs nowhere, so nothing will ever say no.
    unserved = _pod(node=None, created=300)
    unserved["spec"]["schedulerName"] = "no-such-scheduler"
    assert pod_problem(unserved, [], now_wall=NOW, unschedulable_s=400, image_pull_s=60) is None
    assert pod_problem(unserved, [], now_wall=NOW, unschedulable_s=200, image_pull_s=60) == (
        "no scheduler acted on the pod in 300 s (its schedulerName is no-such-scheduler): "
        "it was never bound to node gpu-1")
    gated = _pod(node=None, created=300)
    gated["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]  # before a scheduler marks it gated
    assert pod_problem(gated, [], now_wall=NOW, unschedulable_s=200, image_pull_s=60) is None


def test_a_pod_held_at_a_scheduling_gate_is_waiting_not_refused():
    gated = _pod(node=None, conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                                         "lastTransitionTime": _at(600), "message": "Scheduling is blocked"}])
    assert pod_problem(gated, [], now_wall=NOW, unschedulable_s=60, image_pull_s=60) is None


def test_an_image_that_cannot_be_pulled_is_a_problem_from_the_first_failed_pull():
    pod = _pod(container={"state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}})
    events = [{"reason": "Failed", "message": "ErrImagePull", "firstTimestamp": _at(50), "lastTimestamp": _at(5)},
              {"reason": "BackOff", "message": "Back-off", "firstTimestamp": _at(40), "lastTimestamp": _at(2)}]
    assert pod_problem(pod, events, now_wall=NOW, unschedulable_s=0, image_pull_s=60) is None
    assert pod_problem(pod, events, now_wall=NOW, unschedulable_s=0, image_pull_s=45) == (
        "image registry.example/train:1 cannot be pulled (ImagePullBackOff): Back-off pulling image")


def test_a_container_that_cannot_be_created_is_a_problem_at_once_and_a_running_pod_never_is():
    config = _pod(container={"state": {"waiting": {"reason": "CreateContainerConfigError",
                                                   "message": 'secret "x" not found'}}})
    assert pod_problem(config, [], now_wall=NOW, unschedulable_s=60, image_pull_s=60) == (
        'its container could not be created (CreateContainerConfigError): secret "x" not found')
    running = _pod("Running", container={"state": {"running": {}}})
    assert pod_problem(running, [], now_wall=NOW, unschedulable_s=0, image_pull_s=0) is None
