"""What a pod's status says, in the scheduler's terms: alive or ended, how it ended, why it is stuck.

    state = pod_state(pod)        # PodState(alive=True, started=True, ready=True, ip="10.0.3.7", ...)
    pod_problem(pod, events, now_wall=time.time(), unschedulable_s=120, image_pull_s=60)
    # "kube-scheduler could not bind the pod to node gpu-7: 0/3 nodes are available: ..." | None

Pure functions over the raw JSON the API server sends (as the reflector keeps it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

__all__ = ["PodState", "pod_problem", "pod_state"]

# Waiting reasons that mean the container's image will not come without someone changing something.
IMAGE_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})
# Waiting reasons that no amount of waiting fixes (a missing secret or config map, a bad command).
CONFIG_REASONS = frozenset({"CreateContainerConfigError", "CreateContainerError", "RunContainerError"})

# Pod-level reasons for an end the work did not cause (node pressure, node shutdown, kube-scheduler's own
# preemption): the replica is lost, not failed, and its queue's node-loss rule applies.
DISRUPTIONS = frozenset({"Evicted", "Preempting", "NodeLost", "NodeShutdown", "Shutdown", "Terminated"})

# How an ended pod's reason reads to the person whose work it was.
_ENDED = {
    "OOMKilled": "out of memory: the container went past its memory limit (OOMKilled)",
    "Evicted": "evicted by the kubelet",
    "Preempting": "preempted by kube-scheduler for a pod of higher priority",
    "NodeLost": "its node stopped answering",
    "NodeShutdown": "its node shut down",
    "Shutdown": "its node shut down",
    "Terminated": "its node shut down",
    "DeadlineExceeded": "its active deadline was exceeded",
    "ContainerCannotRun": "its container could not run",
    "StartError": "its container could not start",
}


@dataclass(frozen=True)
class PodState:
    """A pod's life as the scheduler needs it."""

    alive: bool  # Pending or Running: it holds (or will hold) its node's resources
    started: bool  # its container has started at least once (its log exists)
    ready: bool
    ip: str | None
    exit_code: int | None  # the container's, once terminated; None while alive or when it never ran
    reason: str | None  # why it ended, in words, when that was more than an exit code


def pod_state(pod: dict) -> PodState:
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    container = _container_status(status)
    state = container.get("state") or {}
    terminated = state.get("terminated") or (container.get("lastState") or {}).get("terminated")
    started = bool(state.get("running") or state.get("terminated"))
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
    alive = phase in ("Pending", "Running", "Unknown")
    exit_code = terminated.get("exitCode") if terminated and not alive else None
    reason = None
    if not alive:
        why = status.get("reason") or (terminated or {}).get("reason")
        message = status.get("message") or (terminated or {}).get("message")
        disrupted = why in DISRUPTIONS or any(c.get("type") == "DisruptionTarget" and c.get("status") == "True"
                                              for c in status.get("conditions") or ())
        if disrupted:
            exit_code = None  # not the work's own ending: lost, as with its node
        if why in _ENDED:
            reason = _ENDED[why] + (f": {message}" if message else "")
    return PodState(alive=alive, started=started, ready=ready and alive, ip=status.get("podIP"),
                    exit_code=exit_code, reason=reason)


def pod_problem(pod: dict, events: Iterable[dict], *, now_wall: float, unschedulable_s: float,
                image_pull_s: float) -> str | None:
    """Why a live pod cannot make progress, once it has been so long enough; None when all is well."""
    status = pod.get("status") or {}
    if status.get("phase") not in (None, "Pending"):
        return None
    events = sorted(events, key=lambda event: _event_time(event) or 0.0)
    created = _time(pod.get("metadata", {}).get("creationTimestamp")) or now_wall
    if not (pod.get("spec") or {}).get("nodeName"):
        condition = next((c for c in status.get("conditions") or () if c.get("type") == "PodScheduled"), None)
        if condition is None:
            # No scheduler has looked at it (a schedulerName none serves, a scheduler that is down): it would
            # wait for ever, holding what the engine placed there. A gated pod waits for its gate instead.
            if (pod.get("spec") or {}).get("schedulingGates") or now_wall - created < unschedulable_s:
                return None
            scheduler = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
            return (f"no scheduler acted on the pod in {now_wall - created:.0f} s (its schedulerName is {scheduler}): "
                    f"it was never bound to node {_wanted_node(pod) or '?'}")
        if condition.get("status") != "False" or condition.get("reason") == "SchedulingGated":
            return None  # not refused: waiting for a gate to be lifted (Kueue admitting it, say)
        since = _time(condition.get("lastTransitionTime")) or created
        if now_wall - since < unschedulable_s:
            return None
        failed = [e for e in events if e.get("reason") == "FailedScheduling"]
        message = (failed[-1].get("message") if failed else None) or condition.get("message") or "no reason given"
        return f"kube-scheduler could not bind the pod to node {_wanted_node(pod) or '?'}: {message}"
    waiting = (_container_status(status).get("state") or {}).get("waiting") or {}
    reason = waiting.get("reason")
    if reason in CONFIG_REASONS:
        return f"its container could not be created ({reason}): {waiting.get('message') or 'no reason given'}"
    if reason in IMAGE_REASONS:
        pulls = [e for e in events if e.get("reason") in ("Failed", "BackOff")]
        since = (_time(pulls[0].get("firstTimestamp")) or _event_time(pulls[0]) if pulls else None) or created
        if now_wall - since < image_pull_s:
            return None
        image = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("image", "?")
        return f"image {image} cannot be pulled ({reason}): {waiting.get('message') or 'no reason given'}"
    return None


def _container_status(status: dict) -> dict:
    statuses = status.get("containerStatuses") or ()
    return statuses[0] if statuses else {}


def _wanted_node(pod: dict) -> str | None:
    """The node the pod's required node affinity names."""
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or ():
        for requirement in (term.get("matchFields") or []) + (term.get("matchExpressions") or []):
            if requirement.get("values"):
                return requirement["values"][0]
    return None


def _event_time(event: dict) -> float | None:
    return _time(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
                 or event.get("metadata", {}).get("creationTimestamp"))


def _time(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
