"""Who a pod belongs to, and the names and labels that follow from it.

>>> identity = PodIdentity(workload_id=7, kind="kernel", tenant="视觉组", user="Ann Lee", queue="interactive",
...                        template="interactive", flavor="t4")
>>> pod_name(identity)
'hetero-kernel-7-a1-r0-ann-lee'

Names are DNS-1123 labels of at most 63 characters (a pod's name doubles as its hostname); label
values are Kubernetes-safe, with a digest where a tenant's or user's real name is not, and the real
values travel in the ``hetero.jupyter.org/workload`` annotation.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass

__all__ = [
    "MANAGED_BY",
    "WORKLOAD_ANNOTATION",
    "PodIdentity",
    "SERVICE_LABEL",
    "attempt_selector",
    "endpoint_service_name",
    "labels_of",
    "placed_server",
    "pod_name",
    "rendezvous_name",
    "server_labels",
    "service_labels",
    "workload_annotation",
]

MANAGED_BY = "jupyter-hetero"
WORKLOAD_ANNOTATION = "hetero.jupyter.org/workload"
_PREFIX = "hetero.jupyter.org/"
_KINDS = ("job", "kernel", "server", "service")
SERVICE_LABEL = _PREFIX + "service"
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


@dataclass(frozen=True)
class PodIdentity:
    """Ties a pod to its workload: who, which queue and template, which attempt and replica."""

    workload_id: int
    kind: str  # "job" | "kernel" | "server" | "service" (a service's replica)
    tenant: str
    user: str
    queue: str
    template: str
    flavor: str
    attempt: int = 1
    replica: int = 0
    replicas: int = 1


def _dns_slug(value: str, limit: int) -> str:
    """``value`` as lower-case alphanumerics and dashes, at most ``limit`` long; may be empty."""
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")[:limit].strip("-")


def _label_value(value: str) -> str:
    """``value`` itself when Kubernetes accepts it as a label value, else a readable slug plus a digest.

    The digest keeps two names that slug alike ("ops team", "ops-team") apart; the real value is
    in the workload annotation.
    """
    if len(value) <= 63 and _LABEL_VALUE.match(value):
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:10]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", value)[:52]
    slug = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", slug)
    return f"{slug}-{digest}" if slug else digest


def _checked_kind(identity: PodIdentity) -> str:
    if identity.kind not in _KINDS:
        raise ValueError(f"pod kind must be one of {', '.join(_KINDS)}, not {identity.kind!r}")
    return identity.kind


def pod_name(identity: PodIdentity) -> str:
    """A DNS-1123 label of at most 63 characters, unique per workload, kind, attempt and replica.

    The user's name is appended only as a hint for people reading ``kubectl get pods``; the ids
    alone make the name unique, so a name with nothing DNS-safe in it is simply left out.
    """
    base = f"hetero-{_checked_kind(identity)}-{identity.workload_id}-a{identity.attempt}-r{identity.replica}"
    user = _dns_slug(identity.user, 62 - len(base))
    return f"{base}-{user}" if user else base


def rendezvous_name(identity: PodIdentity) -> str:
    """The headless Service of a job's attempt: ``<pod>.<this name>`` reaches each replica."""
    return f"hetero-{_checked_kind(identity)}-{identity.workload_id}-a{identity.attempt}"


def labels_of(identity: PodIdentity) -> dict[str, str]:
    """The labels that find a pod's workload (every value label-safe)."""
    return {
        "app.kubernetes.io/managed-by": MANAGED_BY,
        _PREFIX + "workload-id": str(identity.workload_id),
        _PREFIX + "kind": _checked_kind(identity),
        _PREFIX + "tenant": _label_value(identity.tenant),
        _PREFIX + "user": _label_value(identity.user),
        _PREFIX + "queue": _label_value(identity.queue),
        _PREFIX + "attempt": str(identity.attempt),
        _PREFIX + "replica": str(identity.replica),
    }


def server_labels(workload_id: int) -> dict[str, str]:
    """The labels of a hub user's server pod that the hetero service placed (KubeSpawner makes the pod, so no
    ``managed-by``: the backend never deletes it as an orphan). They tell the backend that what the pod holds
    is this server workload's placement, which the engine counts already, not another pod's."""
    return {_PREFIX + "workload-id": str(int(workload_id)), _PREFIX + "kind": "server"}


def placed_server(pod: dict) -> int | None:
    """The server workload a pod stands for (:func:`server_labels`), or None."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    workload = labels.get(_PREFIX + "workload-id", "")
    return int(workload) if labels.get(_PREFIX + "kind") == "server" and workload.isascii() and workload.isdigit() \
        else None


def service_labels(service: str, revision: int | None = None) -> dict[str, str]:
    """The labels of a service's replicas (of one revision): what its cluster name selects."""
    labels = {"app.kubernetes.io/managed-by": MANAGED_BY, _PREFIX + "kind": "service",
              SERVICE_LABEL: _label_value(service)}
    return labels if revision is None else {**labels, _PREFIX + "revision": str(revision)}


def endpoint_service_name(service: str) -> str:
    """A service's name in the cluster (a DNS-1035 label): ``hetero-<name>``, shortened with a digest past 63."""
    name = f"hetero-{service}"
    if len(name) <= 63:
        return name
    return f"hetero-{service[:44].rstrip('-')}-{hashlib.sha256(service.encode()).hexdigest()[:10]}"


def attempt_selector(identity: PodIdentity) -> dict[str, str]:
    """The labels every replica of the identity's attempt shares."""
    labels = labels_of(identity)
    keys = ("app.kubernetes.io/managed-by", _PREFIX + "workload-id", _PREFIX + "kind", _PREFIX + "attempt")
    return {key: labels[key] for key in keys}


def workload_annotation(identity: PodIdentity) -> str:
    """The identity with its real names, as JSON, for the ``hetero.jupyter.org/workload`` annotation."""
    return json.dumps(asdict(identity), sort_keys=True, ensure_ascii=False)
