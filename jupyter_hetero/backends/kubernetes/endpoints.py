"""Services' names in the cluster: a Service per online service with replicas to run, and each replica's address."""

from __future__ import annotations

import json
from functools import partial

from ..base import ProcessHandle
from .api_calls import MANAGED_SELECTOR
from .factory import PodFactory
from .pod_identity import SERVICE_LABEL, endpoint_service_name
from .pod_lifecycle import PodLifecycle

__all__ = ["Endpoints"]


class Endpoints(PodLifecycle):
    """Where a service's replicas are reached: their pods' IPs, and one Service per service selecting the ready ones."""

    factory: PodFactory
    namespaces: tuple[str, ...]
    _exposed: set[tuple[str, str]] | None  # (namespace, name) of services' Services; None: not listed

    def service_port(self) -> int:
        return self.config.service_port  # each pod has its own address

    def address(self, handle: ProcessHandle) -> str | None:
        state = self.pod_state(handle.pod)
        return state.ip if state is not None and state.alive else None

    def expose(self, services: frozenset[tuple[str, str]]) -> None:
        """A Service per (tenant, service) with live replicas, selecting its ready replicas; the others' deleted."""
        wanted = {(self.config.namespace_for(tenant), endpoint_service_name(name)): (tenant, name)
                  for tenant, name in services}
        if self._exposed is None:  # what an earlier server left
            self._exposed = set()
            for namespace in sorted(set(self.namespaces) | {namespace for namespace, _name in wanted}):
                response = self.core.list_namespaced_service(
                    namespace, label_selector=f"{MANAGED_SELECTOR},{SERVICE_LABEL}", _preload_content=False)
                self._exposed |= {(namespace, item["metadata"]["name"])
                                  for item in json.loads(response.data).get("items", [])}
        for namespace, name in sorted(wanted.keys() - self._exposed):
            tenant, service = wanted[(namespace, name)]
            self._create(self.core.create_namespaced_service, namespace,
                         self.factory.endpoint_service(service, tenant=tenant))
            self._exposed.add((namespace, name))
        for namespace, name in sorted(self._exposed - wanted.keys()):
            self._delete(partial(self.core.delete_namespaced_service, name, namespace), f"service {namespace}/{name}")
            self._exposed.discard((namespace, name))
