"""The part of kube-scheduler the fake API server plays: filter nodes for a pod, or say why none fit.

```python
node, why = place(pod, nodes)   # ("node-a", "") or (None, "0/2 nodes are available: ...")
```
Only the filters that decide *where* apply (node affinity and selector, readiness, cordon, taints);
resources are the engine's business, so no fit check on requests.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["is_ready", "place", "tolerates"]


def is_ready(node: dict) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def tolerates(tolerations: list[dict], taint: dict) -> bool:
    """Whether one of the pod's tolerations matches the taint (Kubernetes' ToleratesTaint)."""
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key")
        if toleration.get("operator") == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _expression_matches(expression: dict, value: str | None) -> bool:
    operator = expression.get("operator")
    values = expression.get("values") or []
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and values:
        try:
            return int(value) > int(values[0]) if operator == "Gt" else int(value) < int(values[0])
        except ValueError:
            return False
    return False


def _term_matches(term: dict, node: dict) -> bool:
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}
    return all(
        _expression_matches(e, labels.get(e.get("key"))) for e in term.get("matchExpressions") or []
    ) and all(_expression_matches(e, fields.get(e.get("key"))) for e in term.get("matchFields") or [])


def _selected(pod: dict, node: dict) -> bool:
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    )
    terms = required.get("nodeSelectorTerms")
    return not terms or any(_term_matches(term, node) for term in terms)


def _untolerated(pod: dict, node: dict) -> dict | None:
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return taint
    return None


def _why_not(pod: dict, node: dict) -> str | None:
    if not _selected(pod, node):
        return "node(s) didn't match Pod's node affinity/selector"
    if (node.get("spec") or {}).get("unschedulable"):
        return "node(s) were unschedulable"
    if taint := _untolerated(pod, node):
        return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"
    if not is_ready(node):
        return "node(s) were not ready"
    return None


def place(pod: dict, nodes: list[dict]) -> tuple[str | None, str]:
    """The first node (by name) the pod may run on, or None and a FailedScheduling message."""
    reasons: Counter[str] = Counter()
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        reason = _why_not(pod, node)
        if reason is None:
            return node["metadata"]["name"], ""
        reasons[reason] += 1
    detail = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    message = f"0/{len(nodes)} nodes are available"
    message += f": {detail}." if detail else "."
    return None, f"{message} preemption: 0/{len(nodes)} nodes are available: {len(nodes)} Preemption is not helpful for scheduling."
