"""Calls that create and delete the backend's objects, with the API server's failures read into the backend's terms.

    created_uid = self._create(self.core.create_namespaced_pod, namespace, pod)   # 409: taken as made
    self._delete(partial(self.core.delete_namespaced_pod, name, namespace), f"pod {key}")   # 404: fine
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from ..base import LaunchUnavailable
from .config import KubernetesConfig
from .errors import QUOTA_MESSAGE, MalformedResponse, exceeded_quota, missing_permission

__all__ = ["MANAGED_SELECTOR", "ApiCalls", "api_words"]

log = logging.getLogger(__name__)

MANAGED_SELECTOR = "app.kubernetes.io/managed-by=jupyter-hetero"


class ApiCalls:
    """Creates and deletes objects through ``core``, with the patience ``config`` sets."""

    config: KubernetesConfig
    core: client.CoreV1Api

    def _create(self, create: Callable[..., object], namespace: str, body) -> str | None:
        """Create an object and return its uid; one that exists already (a launch repeated after a crash) is
        taken as is (None). An API server that fails (5xx, 429), times out or cannot be reached, or a
        namespace's ResourceQuota that is used up, raises LaunchUnavailable; one that refuses the object (any
        other 4xx, a missing permission among them), RuntimeError; an answer the client's models cannot read,
        MalformedResponse."""
        what = f"the creation of {type(body).__name__.removeprefix('V1').lower()} {namespace}/{body.metadata.name}"
        try:
            created = create(namespace, body, _request_timeout=(5, self.config.api_timeout))
        except ValueError as exc:
            # The models' setters refuse a field they hold required: an API server of another version than
            # the client's, a proxy's rewrite. Named here, it is no bare "must not be None" from deep inside.
            raise MalformedResponse(what, exc) from None
        except ApiException as exc:
            if exc.status >= 500 or exc.status == 429:
                raise LaunchUnavailable(f"the Kubernetes API failed: {api_words(exc)} ({exc.status})") from None
            quota = exceeded_quota(exc)
            if quota is not None:  # it passes once other pods of the namespace end: wait, use no retry
                raise LaunchUnavailable(QUOTA_MESSAGE.format(namespace=namespace, quota=quota)) from None
            if exc.status != 409:
                raise RuntimeError(f"the Kubernetes API refused: {api_words(exc)}") from None
            return None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise LaunchUnavailable(f"the Kubernetes API did not answer: {exc}") from None
        metadata = created.get("metadata", {}) if isinstance(created, dict) else getattr(created, "metadata", None)
        return (metadata.get("uid") if isinstance(metadata, dict) else getattr(metadata, "uid", None)) or None

    def _delete(self, call: Callable[[], object], what: str) -> None:
        try:
            # Not read into a model: the answer (the object, or a Status) says nothing a delete needs.
            _drain(call(_request_timeout=(5, self.config.api_timeout), _preload_content=False))
        except ApiException as exc:
            if exc.status != 404:
                # The Status of an RBAC 403 names the verb, resource and namespace it checked.
                refused = missing_permission(exc, verb="delete", resource=f"{what.split(' ', 1)[0]}s", namespace=None)
                log.warning("jupyter-hetero: could not delete %s: %s", what, refused or api_words(exc))
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            log.warning("jupyter-hetero: could not delete %s: the Kubernetes API did not answer: %s", what, exc)

    def _delete_secret(self, namespace: str, name: str) -> None:
        try:
            _drain(self.core.delete_namespaced_secret(name, namespace, _preload_content=False))
        except ApiException as exc:
            if exc.status != 404:
                log.warning("jupyter-hetero: could not delete secret %s/%s: %s", namespace, name, api_words(exc))


def _drain(response) -> None:
    """Read an answer we do not use and give its connection back to the pool."""
    try:
        response.data  # noqa: B018 - reading it is the point
    finally:
        response.release_conn()


def api_words(exc: ApiException) -> str:
    """What the API server said, in its words (the message of its Status), else its reason."""
    try:
        return json.loads(exc.body).get("message") or exc.reason
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason or exc.status)
