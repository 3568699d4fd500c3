"""What every pod of the backend shares: its state from the reflector's cache, its credential Secret, its deletion
and its log copied as it is written."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from ..base import ProcessHandle
from .api_calls import ApiCalls
from .cluster import ClusterReflector
from .objects import credential_secret_name, make_credential_secret
from .pods import PodState, pod_problem, pod_state

__all__ = ["UNSEEN_GRACE_S", "PodLifecycle"]

log = logging.getLogger(__name__)

# Seconds a pod we created may be missing from the reflector's cache before it counts as gone: the
# create answer comes before the watch event that shows it.
UNSEEN_GRACE_S = 30.0


class PodLifecycle(ApiCalls):
    """Pods by their "namespace/name" key: looked up in the cache, deleted with their credential, their logs followed."""

    reflector: ClusterReflector
    clock: Callable[[], float]
    _unseen: dict[str, float]  # pods created, not yet in the cache -> when created
    _unanswered: dict[str, float]  # pods whose create went unanswered -> since when
    _credentials: set[str]  # pods whose credential Secret this server created
    _followers: dict[str, threading.Thread]
    _closed: threading.Event

    def pod(self, key: str) -> dict | None:
        return self.reflector.pods.items().get(key)

    def _alive(self, handle: ProcessHandle) -> bool:
        pod = self.pod(handle.pod)
        if pod is None:
            created = self._unseen.get(handle.pod)
            if created is not None and self.clock() - created >= UNSEEN_GRACE_S:
                del self._unseen[handle.pod]  # never seen: gone, and forgotten
                return False
            return created is not None
        self._unseen.pop(handle.pod, None)
        return pod_state(pod).alive

    def pod_state(self, key: str) -> PodState | None:
        """The pod's state as last seen; None when it is gone (or not seen yet: see :meth:`seen`)."""
        pod = self.pod(key)
        return pod_state(pod) if pod is not None else None

    def problem_of(self, key: str, *, patient: bool = True) -> str | None:
        """Why a pod that should be starting is not: after the configured patience, or at once."""
        pod = self.pod(key)
        if pod is None:
            return None
        return pod_problem(pod, self.reflector.events_of(*key.split("/", 1)), now_wall=time.time(),
                           unschedulable_s=self.config.unschedulable_timeout if patient else 0,
                           image_pull_s=self.config.image_pull_timeout if patient else 0)

    def delete_pod(self, key: str, *, grace_s: int | None) -> None:
        """Delete a pod (None: with its own grace period: SIGTERM, then SIGKILL); a missing one is fine."""
        namespace, name = key.split("/", 1)
        options = client.V1DeleteOptions(grace_period_seconds=grace_s) if grace_s is not None else None
        self._delete(partial(self.core.delete_namespaced_pod, name, namespace, body=options), f"pod {key}")
        # The container read its credential when it started; once its pod is going, nothing may read it again.
        self._delete_credential(key)

    def _delete_unanswered(self) -> None:
        """Pods whose create was not answered are deleted whenever they are seen (a late create made them), until
        they have had as long to show up as any pod has."""
        for key, since in list(self._unanswered.items()):
            if self.pod(key) is not None:
                self.delete_pod(key, grace_s=0)
            elif self.clock() - since >= UNSEEN_GRACE_S:
                del self._unanswered[key]

    def _create_credential(self, pod: client.V1Pod, env: dict[str, str]) -> None:
        """The pod's credential Secret, created before the pod so that the kubelet finds it at the container's
        start (a missing one is a CreateContainerConfigError, which reads as a launch that cannot progress)."""
        secret = make_credential_secret(pod=pod, env=env)
        if secret is not None:
            self._credentials.add(f"{pod.metadata.namespace}/{pod.metadata.name}")
            self._create(self.core.create_namespaced_secret, pod.metadata.namespace, secret)

    def _delete_credential(self, key: str) -> None:
        """The credential Secret of the pod ``key``, if it has one: of a pod this server launched, or one that
        names it (a pod adopted after a restart)."""
        pod = self.pod(key)
        if key not in self._credentials and not (pod is not None and _names_credential(pod)):
            return
        self._credentials.discard(key)
        namespace, name = key.split("/", 1)
        secret = credential_secret_name(name)
        self._delete(partial(self.core.delete_namespaced_secret, secret, namespace), f"secret {namespace}/{secret}")

    def follow_log(self, key: str, log_path: Path) -> None:
        """Copy the pod's log into ``log_path`` as it is written (bytes as they come: never a character
        split by decoding a chunk), from a daemon thread that ends with the pod."""
        thread = threading.Thread(target=self._follow, args=(key, Path(log_path)), daemon=True,
                                  name=f"hetero-log-{key}")
        self._followers[key] = thread
        thread.start()

    def _follow(self, key: str, log_path: Path) -> None:
        namespace, name = key.split("/", 1)
        while not self._closed.is_set():
            pod = self.pod(key)
            if pod is not None and pod_state(pod).started:
                break
            if pod is None and key not in self._unseen:
                return
            if self._closed.wait(0.2):
                return
        try:
            response = self.core.read_namespaced_pod_log(name, namespace, follow=True, _preload_content=False)
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "ab") as out:
                for chunk in response.stream(4096):
                    out.write(chunk)
                    out.flush()
                    if self._closed.is_set():
                        break
            response.release_conn()
        except (ApiException, OSError, urllib3.exceptions.HTTPError) as exc:  # a pod deleted mid-stream, say
            log.warning("jupyter-hetero: the log of pod %s could not be followed: %s", key, exc)
        finally:
            self._followers.pop(key, None)


def _names_credential(pod: dict) -> bool:
    """Whether the pod's containers take a variable from its credential Secret."""
    secret = credential_secret_name(pod["metadata"]["name"])
    return any(((var.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name") == secret
               for container in (pod.get("spec") or {}).get("containers") or [] for var in container.get("env") or [])
