"""The scheduler's side of online services: after every tick, each service's replicas are brought to what is
wanted (:meth:`ServiceReconciler.reconcile`), and a canary whose window is over is judged (rollout.py).

Level-triggered: what is wanted is computed from the stored services and the replicas not ended yet, never
from what changed; a replica is asked for or cancelled, and the next tick looks again.
"""

from __future__ import annotations

import itertools
import logging
import math
from typing import Any

from ...catalog import WorkloadKind
from ...store import ACTIVE_STATES, PENDING_STATES
from ...store.tables import ServiceRow, WorkloadRow
from .rollout import history_entry, verdict

__all__ = ["LIVE_STATES", "ServiceReconciler", "replica_parameters"]

log = logging.getLogger(__name__)

LIVE_STATES = (*PENDING_STATES, *ACTIVE_STATES)


class ServiceReconciler:
    """The services' reconcile and what it decides with; ``Services.__init__`` sets the state it reads
    (the store, the workloads, the clock, the ready replicas, the canaries and the load)."""

    def reconcile(self, now: float | None = None) -> None:
        """Judge each canary whose window is over; then ask for the replicas each revision is short of, and cancel
        those over its count, of an old revision whose successor is ready, or of a deleted service."""
        now = self.clock.wall() if now is None else now
        services = self.repository.services(state=None)
        self._active = {(service.tenant, service.name): service.id for service in services if service.state == "active"}
        if not services:
            return  # a server that runs no service reads nothing more each tick
        live = self._live_replicas(services)
        for service in services:
            replicas = live.get(service.id, [])
            if service.rollout is not None and service.state == "active":
                service = self._judge(service, replicas)
            if service.rollout is not None and service.rollout["ready_at"] is not None:
                self._canaries[service.id] = (service.rollout["revision"], service.rollout["traffic"])
            else:
                self._canaries.pop(service.id, None)
            if service.state != "active":
                self._end(replicas, "service deleted", now)
                continue
            service = self._autoscale(service)
            stable = [r for r in replicas if r.spec.get("revision") == service.revision]
            canary = [r for r in replicas if service.rollout and r.spec.get("revision") == service.rollout["revision"]]
            older = [r for r in replicas if r not in stable and r not in canary]
            self._keep(service, stable, service.replicas, service.revision, service.spec, now)
            if service.rollout is not None:
                self._keep(service, canary, service.rollout["replicas"], service.rollout["revision"],
                           service.rollout["spec"], now)
            # An older revision answers until the stable one has as many ready replicas (a rolling replacement).
            short = max(0, service.replicas - sum(r.id in self.ready for r in stable))
            self._end(sorted(older, key=lambda r: r.id in self.ready)[:max(0, len(older) - short)],
                      f"replaced by revision {service.revision}", now)

    def _autoscale(self, service: ServiceRow) -> ServiceRow:
        """With a target of requests in flight per replica: up at once when the load needs more replicas, down
        only once it has needed fewer for the scale-down delay; always within the minimum and maximum."""
        target = service.spec.get("target_in_flight")
        if not target:
            return service
        load = self._load.get(service.id, 0.0) * 0.7 + self.in_flight.get(service.id, 0) * 0.3  # smoothed
        self._load[service.id] = load
        wanted = min(max(math.ceil(load / target - 1e-9), service.min_replicas), service.max_replicas)
        now = self.clock.monotonic()
        if wanted >= service.replicas:
            self._low_since.pop(service.id, None)
        if wanted > service.replicas or (wanted < service.replicas and now - self._low_since.setdefault(
                service.id, now) >= service.spec.get("scale_down_delay_s", 60)):
            self._low_since.pop(service.id, None)
            self._event(service, "autoscaled", f"service {service.name} scaled from {service.replicas} to "
                                                    f"{wanted} replicas: {load:.1f} requests in flight, target "
                                                    f"{target:g} per replica", {"from": service.replicas, "to": wanted})
            return self.repository.update_service(service.id, replicas=wanted)
        return service

    def _keep(self, service: ServiceRow, replicas: list[WorkloadRow], wanted: int, revision: int, spec: dict,
              now: float) -> None:
        replicas = sorted(replicas, key=lambda r: r.spec.get("replica", 0))
        self._end(replicas[wanted:], f"service scaled to {wanted} replicas of revision {revision}", now)
        taken = {replica.spec.get("replica") for replica in replicas[:wanted]}
        for index in itertools.islice((i for i in itertools.count() if i not in taken), max(0, wanted - len(replicas))):
            self._add_replica(service, index, revision, spec)

    def _end(self, replicas: list[WorkloadRow], why: str, now: float) -> None:
        for replica in replicas:
            self.workloads.end(replica, why, now)

    def _judge(self, service: ServiceRow, replicas: list[WorkloadRow]) -> ServiceRow:
        """A canary ready for its whole window, with enough requests, is promoted or rolled back."""
        rollout = service.rollout
        ready = [r.id for r in replicas if r.spec.get("revision") == rollout["revision"] and r.id in self.ready]
        if rollout["ready_at"] is None:
            if not ready:
                return service
            rollout = {**rollout, "ready_at": self.clock.wall()}
            self._canary_since[service.id] = self.clock.monotonic()
            return self.repository.update_service(service.id, rollout=rollout)
        since = self._canary_since.setdefault(service.id, self.clock.monotonic())
        if self.clock.monotonic() - since < rollout["window_s"]:
            return service
        canary = self.figures(service.id, rollout["revision"], since=since)
        stable = self.figures(service.id, service.revision, since=since)
        if canary["requests"] < rollout["min_requests"]:
            return service  # not enough traffic to judge yet: the canary goes on
        template = self.catalog.template(service.template)
        decided = verdict(canary, stable, template.targets if template else [])
        figures = {"canary": canary, "stable": stable, "violations": decided.violations}
        outcome = "promoted" if decided.promote else "rolled-back"
        history = [*service.revisions, {**history_entry(rollout), "outcome": outcome, "at": self.clock.wall(), **figures}]
        self._canary_since.pop(service.id, None)
        if decided.promote:
            self._event(service, "canary-promoted", f"revision {rollout['revision']} of service {service.name} "
                                                         f"promoted: {decided.reason}", figures)
            return self.repository.update_service(service.id, spec=rollout["spec"], revision=rollout["revision"],
                                                  rollout=None, revisions=history)
        self._event(service, "canary-rolled-back", f"revision {rollout['revision']} of service {service.name} "
                                                        f"rolled back: {decided.reason}", figures)
        return self.repository.update_service(service.id, rollout=None, revisions=history)

    def _event(self, service: ServiceRow, kind: str, reason: str, data: dict[str, Any]) -> None:
        self.repository.append_event(type=kind, reason=reason, data={
            "service": service.name, "tenant": service.tenant, "service_id": service.id, **data})
        log.info("jupyter-hetero: tenant=%s %s", service.tenant, reason)

    def _add_replica(self, service: ServiceRow, index: int, revision: int, spec: dict[str, Any]) -> None:
        checked = self.workloads.enqueuer.checked_before(
            WorkloadKind.SERVICE, service.template, replica_parameters(spec.get("parameters")), service.queue,
            user=service.user, tenant=service.tenant)
        if checked is None:  # the catalog lost the template: nothing can be placed
            log.warning("jupyter-hetero: service %s: template %s is gone", service.name, service.template)
            return
        self.workloads.enqueuer.enqueue(
            checked, name=f"{service.name} replica {index} (revision {revision})",
            spec={**({"payload": "command", "command": spec["command"]} if spec.get("command")
                     else {"payload": "code", "code": spec["code"]}), "env": spec.get("env") or {},
                  "service": service.name, "service_id": service.id, "revision": revision, "replica": index,
                  "readiness_path": spec["readiness_path"]},
            reason=f"replica {index} of service {service.name}, revision {revision}",
            data={"service": service.name, "tenant": service.tenant, "revision": revision})

    def _live_replicas(self, services: list[ServiceRow] | None = None) -> dict[int, list[WorkloadRow]]:
        """Every service's replicas not ended yet, by service id: one query for them all."""
        live: dict[int, list[WorkloadRow]] = {}
        for replica in self.repository.workloads(kind=WorkloadKind.SERVICE.value, states=LIVE_STATES):
            live.setdefault(self._service_of(replica, services), []).append(replica)
        return live

    def _service_of(self, replica: WorkloadRow, services: list[ServiceRow] | None) -> int | None:
        """A replica's service id; one started before schema 9 names only its service, the first of that name."""
        if "service_id" in replica.spec:
            return replica.spec["service_id"]
        if services is not None:
            return min((s.id for s in services if s.name == replica.spec.get("service")), default=None)
        return self.repository.first_service_id(replica.spec.get("service"))


def replica_parameters(parameters: dict[str, Any] | None) -> dict[str, Any]:
    """A replica's parameters: the service's, less ``replicas``."""
    # Each replica is one workload of one process: the template's gang `replicas` parameter is the service's count.
    return {name: value for name, value in (parameters or {}).items() if name != "replicas"}
