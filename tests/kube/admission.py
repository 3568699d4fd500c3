"""What the API server does to an object before it stores it: defaults, derived fields, validation."""

from __future__ import annotations

import base64
import re

from tests.kube.wire import ApiError

__all__ = ["check_pod_update", "secret_data", "validate", "with_pod_defaults"]

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# Pod spec fields an update may change; the API forbids changing any other.
_MUTABLE_POD_SPEC = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")


def validate(obj: dict) -> None:
    """422 Invalid for a name that is not a DNS subdomain or a label value the API refuses."""
    name = obj["metadata"]["name"]
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        raise ApiError.invalid(
            obj["kind"], name,
            f"metadata.name: Invalid value: {name!r}: a lowercase RFC 1123 subdomain must consist of "
            "lower case alphanumeric characters, '-' or '.'",
        )
    for key, value in ((obj["metadata"].get("labels")) or {}).items():
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            raise ApiError.invalid(
                obj["kind"], name, f"metadata.labels: Invalid value: {value!r}: a valid label value "
                f"(for {key}) must be 63 characters or less and consist of alphanumerics, '-', '_' or '.'",
            )


def secret_data(obj: dict) -> dict:
    """A Secret's ``stringData`` folded into ``data`` (base64), as the API stores it."""
    if obj["kind"] != "Secret" or not obj.get("stringData"):
        return obj
    data = dict(obj.get("data") or {})
    for key, value in obj["stringData"].items():
        data[key] = base64.b64encode(value.encode()).decode()
    return {**{k: v for k, v in obj.items() if k != "stringData"}, "data": data}


def with_pod_defaults(pod: dict) -> dict:
    spec = {
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "schedulerName": "default-scheduler",
        "dnsPolicy": "ClusterFirst",
        **(pod.get("spec") or {}),
    }
    status = {"phase": "Pending", "qosClass": _qos_class(spec), **(pod.get("status") or {})}
    return {**pod, "spec": spec, "status": status}


def _qos_class(spec: dict) -> str:
    """Guaranteed when every container's cpu and memory limits equal its requests, BestEffort with none."""
    containers = spec.get("containers") or []
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    for r in resources:
        limits, requests = r.get("limits") or {}, r.get("requests") or {}
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                return "Burstable"
    return "Guaranteed"


def check_pod_update(old: dict, new: dict) -> None:
    def fixed(spec: dict) -> dict:
        kept = {k: v for k, v in spec.items() if k not in _MUTABLE_POD_SPEC}
        kept["containers"] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get("containers") or []]
        return kept

    if fixed(old.get("spec") or {}) != fixed(new.get("spec") or {}):
        raise ApiError.invalid(
            "Pod", old["metadata"]["name"],
            "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
            "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), "
            "`spec.terminationGracePeriodSeconds`",
        )
