"""The RBAC the Kubernetes backend ships (``rbac.yaml``), read as the permissions it grants.

>>> ("create", "pods") in granted() and ("get", "pods/log") in granted()
True
"""

from __future__ import annotations

from importlib.resources import files

import yaml

__all__ = ["documents", "granted"]

_RULE_KINDS = ("Role", "ClusterRole")


def documents() -> list[dict]:
    """The objects of ``rbac.yaml`` (ServiceAccount, roles, bindings), as ``kubectl apply`` reads them."""
    text = files(__package__).joinpath("rbac.yaml").read_text(encoding="utf-8")
    return [document for document in yaml.safe_load_all(text) if document]


def granted() -> frozenset[tuple[str, str]]:
    """Every ``(verb, resource)`` the roles grant: ``resource`` like ``pods/log`` in the core API group, qualified
    by its group elsewhere (``workloads.kueue.x-k8s.io``)."""
    pairs = set()
    for document in documents():
        if document["kind"] not in _RULE_KINDS:
            continue
        for rule in document.get("rules", ()):
            for group in rule["apiGroups"]:
                pairs.update((verb, f"{resource}.{group}" if group else resource)
                             for resource in rule["resources"] for verb in rule["verbs"])
    return frozenset(pairs)
