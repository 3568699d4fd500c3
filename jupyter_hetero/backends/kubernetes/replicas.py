"""Replicas as pods: launched with their credential and rendezvous Service, scanned from the cache, stopped, and
read once ended (the runner's exit record on the work volume, else the pod's word)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import partial
from pathlib import Path

from ..base import Exit, Launch, LaunchUnavailable, ProcessHandle
from .errors import MalformedResponse
from .factory import PodFactory
from .objects import owned_by_pod
from .pod_lifecycle import PodLifecycle
from .pods import pod_state
from .telemetry import ExporterScraper

__all__ = ["Replicas"]


class Replicas(PodLifecycle):
    """The Backend protocol's replicas: launch, liveness and device use, stop and kill, and how each ended."""

    factory: PodFactory
    telemetry: ExporterScraper | None
    _services: dict[str, str]  # a multi-replica job's replica-0 pod -> its rendezvous Service
    _stopped: set[str]  # pods this server deleted with their grace period (SIGTERM first)

    def launch(self, launch: Launch) -> ProcessHandle:
        pod, service = self.factory.job_objects(launch)
        namespace = pod.metadata.namespace
        key = f"{namespace}/{pod.metadata.name}"
        self._unseen[key] = self.clock()
        try:
            self._create_credential(pod, launch.env)
            uid = self._create(self.core.create_namespaced_pod, namespace, pod)
        except (LaunchUnavailable, MalformedResponse):
            # A create that timed out may yet make the pod: deleted now, and again should it show up later.
            self._unanswered[key] = self.clock()
            self.delete_pod(key, grace_s=0)
            raise
        except BaseException:
            self._delete_credential(key)
            raise
        if service is not None:  # replica 0's: Kubernetes deletes it with that pod, should we not
            self._create(self.core.create_namespaced_service, namespace,
                         owned_by_pod(service, pod, uid) if uid else service)
            self._services[key] = service.metadata.name
        self.follow_log(key, launch.log_path)
        return ProcessHandle(launch.replica, launch.node, 0, 0.0, str(launch.exit_path), launch.devices, False,
                             pod=key)

    def running(self, handle: ProcessHandle) -> bool:
        return self._alive(handle)

    def adopt(self, handles: list[ProcessHandle], log_path: Path) -> list[ProcessHandle]:
        """After a restart: the attempt's log is copied again from the start of each pod's log (the API
        server has all of it), so nothing is lost or doubled whenever the last server stopped."""
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_bytes(b"")
        for handle in handles:
            if self.pod(handle.pod) is not None:
                self.follow_log(handle.pod, log_path)
        return [handle for handle in handles if self._alive(handle)]

    def scan(self, handles: Iterable[ProcessHandle]) -> dict[ProcessHandle, dict]:
        return {handle: self._usage(handle) for handle in handles if self._alive(handle)}

    def sample(self, handle: ProcessHandle) -> dict:
        """Its devices' use (``device_util_pct``, ``device_memory_used_mib``) from the exporters' latest pass; {} when they
        are not measured (no exporter, or it has not reported all of them), with a ``device_note`` when an exporter
        failed."""
        return self._usage(handle)

    def exit(self, handle: ProcessHandle) -> Exit:
        """How the replica's pod ended; the pod (and its job's rendezvous Service) is deleted once read,
        its log having been copied."""
        pod = self.pod(handle.pod)
        state = pod_state(pod) if pod is not None else None
        record = _exit_record(handle.exit_path)
        follower = self._followers.get(handle.pod)
        if follower is not None:
            follower.join(timeout=2.0)  # the last lines of the log, before the pod goes
        self.delete_pod(handle.pod, grace_s=0)
        service = self._services.pop(handle.pod, None)
        if service is not None:
            self._delete(partial(self.core.delete_namespaced_service, service, handle.pod.split("/", 1)[0]),
                         f"service {service}")
        metrics = {"peak_rss_mib": record.get("peak_rss_mib")}
        stopped = handle.pod in self._stopped
        self._stopped.discard(handle.pod)
        if state is None:
            # A pod we stopped is removed by its kubelet as soon as its container has ended, mostly before the
            # cache sees it terminated: the runner's record on the work volume says how the job ended.
            if stopped and "exit_code" in record:
                return Exit(record["exit_code"], metrics)
            return Exit(None, metrics, reason="its pod was deleted")
        # The runner in the pod records the job's own exit code (its container's is only 0 or 1); when the
        # container was ended from outside (out of memory, evicted), the pod's word stands.
        code = record["exit_code"] if state.reason is None and "exit_code" in record else state.exit_code
        return Exit(code, metrics, reason=state.reason)

    def problem(self, handle: ProcessHandle) -> str | None:
        """Why a live replica's pod cannot make progress (unschedulable, image not pullable), once it has
        been so for longer than the configured patience; None otherwise."""
        return self.problem_of(handle.pod)

    def signal_stop(self, handle: ProcessHandle) -> None:
        self._stopped.add(handle.pod)
        self.delete_pod(handle.pod, grace_s=None)

    def kill(self, handle: ProcessHandle) -> None:
        self.delete_pod(handle.pod, grace_s=0)

    def _usage(self, handle: ProcessHandle) -> dict:
        if self.telemetry is None or not handle.devices:
            return {}
        return self.telemetry.usage(handle.pod, devices=len(handle.devices), node=handle.node)


def _exit_record(path: str) -> dict:
    """What the runner left in the pod's exit file on the shared work volume (exit code, peak memory)."""
    try:
        with open(path, encoding="utf-8") as record:
            data = json.load(record)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
