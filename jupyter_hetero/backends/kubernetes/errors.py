"""What the Kubernetes API's refusals say, read from the ``Status`` it answers them with.

    try:
        core.list_namespaced_pod("hetero")
    except ApiException as exc:
        refusal = missing_permission(exc, verb="list", resource="pods", namespace="hetero")
        str(refusal)   # 'the Kubernetes API refused to list pods in namespace hetero: ...'

A 403 is one of two things: RBAC's (the server's account lacks a permission: only an administrator
helps) or a ResourceQuota's on create ("exceeded quota": it passes once other pods end). Neither is
an API server that does not answer, and neither reads as one.
"""

from __future__ import annotations

import json
import re

from kubernetes.client.exceptions import ApiException

from ...i18n import N_

__all__ = ["ApiForbidden", "MalformedResponse", "api_status", "brief", "exceeded_quota", "missing_permission"]

FORBIDDEN = 403

# kube-apiserver's RBAC denial: `pods is forbidden: User "u" cannot list resource "pods" in API group ""
# in the namespace "hetero"` (or `at the cluster scope`); the only place the verb is named.
_RBAC = re.compile(r'User "(?P<user>[^"]*)" cannot (?P<verb>\S+) resource "(?P<resource>[^"]+)"'
                   r'(?: in API group "[^"]*")?(?: in the namespace "(?P<namespace>[^"]+)")?')
_QUOTA = "exceeded quota: "

FORBIDDEN_MESSAGE = N_("the Kubernetes API refused to {verb} {resource} {where}: the server's account {user} lacks "
                       "this permission; grant it (verb {verb}, resource {resource}) in the RBAC of the deployment "
                       "(the API said: {message})")
QUOTA_MESSAGE = N_("quota of namespace {namespace} exceeded: {quota}")
MALFORMED_MESSAGE = N_("the Kubernetes API answered {what} with an object this client cannot read: {error}")


class ApiForbidden(PermissionError):
    """The API refused a call for want of an RBAC permission: which verb, on which resource, where."""

    def __init__(self, *, verb: str, resource: str, namespace: str | None, user: str, message: str) -> None:
        self.verb, self.resource, self.namespace, self.user, self.message = verb, resource, namespace, user, message
        where = f"in namespace {namespace}" if namespace else "at the cluster scope"
        super().__init__(FORBIDDEN_MESSAGE.format(verb=verb, resource=resource, where=where, user=user or "?",
                                                  message=message))


class MalformedResponse(ValueError):
    """An answer the kubernetes client's models reject (a field they hold required is missing, say)."""

    def __init__(self, what: str, error: Exception) -> None:
        self.what = what
        # One line, though the models' own errors (pydantic's, in the client's newer generation) span several.
        super().__init__(MALFORMED_MESSAGE.format(what=what, error=" ".join(str(error).split())))


def api_status(exc: ApiException) -> dict:
    """The ``Status`` object of a failed call ({} when its body is not one)."""
    try:
        body = json.loads(exc.body)
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) and body.get("kind") == "Status" else {}


def exceeded_quota(exc: ApiException) -> str | None:
    """What a ResourceQuota refused (``compute, requested: ..., used: ..., limited: ...``), when it did."""
    status = api_status(exc)
    message = status.get("message") or ""
    if exc.status != FORBIDDEN or status.get("reason") != "Forbidden" or _QUOTA not in message:
        return None
    return message.split(_QUOTA, 1)[1]


def missing_permission(exc: ApiException, *, verb: str, resource: str, namespace: str | None) -> ApiForbidden | None:
    """The permission an RBAC 403 says is missing (None for any other failure); the Status's own words win
    over what the caller meant to do, since they name what the server checked."""
    if exc.status != FORBIDDEN or exceeded_quota(exc) is not None:
        return None
    status = api_status(exc)
    message = status.get("message") or str(exc.reason or "Forbidden")
    named = _RBAC.search(message)
    if named is None:
        resource = (status.get("details") or {}).get("kind") or resource
        return ApiForbidden(verb=verb, resource=resource, namespace=namespace, user="", message=message)
    return ApiForbidden(verb=named["verb"], resource=named["resource"], namespace=named["namespace"],
                        user=named["user"], message=message)


def brief(error: BaseException) -> str:
    """An API call's failure in a few words, for a log line: the HTTP status, or the exception and its text."""
    if isinstance(error, ApiException):
        return f"HTTP {error.status} {error.reason}"
    return f"{type(error).__name__}: {error}"
