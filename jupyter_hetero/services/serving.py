"""Online services: N replicas of a model server, each a workload of kind ``service``, behind one endpoint.

    serving.create(identity, CreateService(name="resnet", command=["python", "serve.py"], replicas=2))
    serving.reconcile(now)        # every tick: replicas up to what is wanted, extras cancelled
    await serving.probe()         # readiness of every running replica (HTTP GET of its readiness path)
    serving.ready_replicas("resnet")   # [(workload id, "http://127.0.0.1:41234")] in round-robin order

The engine places each replica on matched devices like any workload, in the template's queue
(``inference``, whose reserved capacity batch work never takes); a replica is never preempted. The
scheduler starts it with ``PORT`` set; it takes traffic once its readiness path answers. A replica
that exits starts again with a growing backoff, one lost with its node is placed again elsewhere, and
the endpoint keeps answering from the others meanwhile.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
from collections import deque
from collections.abc import Callable
from typing import Any

from tornado import httpclient

from ..catalog import Catalog, WorkloadKind
from ..errors import Conflict, Forbidden, InvalidRequest, NotFound
from ..i18n import N_, Message
from ..models import CreateService
from ..store import ACTIVE_STATES, PENDING_STATES, Repository
from ..store.tables import ServiceRow, WorkloadRow
from .clock import Clock
from .identity import Identity
from .resolve import known_template, resolve
from .workloads import WorkloadService, workload_json

__all__ = ["ServingService", "endpoint_path"]

log = logging.getLogger(__name__)

# A readiness check that takes longer than this fails.
PROBE_TIMEOUT_S = 2.0
# A service's traffic figures are over this window, from at most this many of its latest requests.
TRAFFIC_WINDOW_S = 60.0
TRAFFIC_KEPT = 50_000
LIVE_STATES = (*PENDING_STATES, *ACTIVE_STATES)


def endpoint_path(name: str) -> str:
    return f"/hetero/endpoints/{name}/"


class ServingService:
    def __init__(self, *, catalog: Catalog, repository: Repository, workloads: WorkloadService, clock: Clock,
                 wake: Callable[[], None]):
        self.catalog = catalog
        self.repository = repository
        self.workloads = workloads
        self.clock = clock
        self.wake = wake
        # Ready replicas' workload ids -> (their service, where they answer): the endpoint reads no database.
        self.ready: dict[int, tuple[str, str]] = {}
        self._turn = itertools.count()  # round robin over a service's ready replicas
        self._probing: asyncio.Task | None = None
        self.traffic: dict[str, deque] = {}  # per service: (monotonic time, seconds, failed, replica), newest last

    # -- the API's side ----------------------------------------------------------------------

    def create(self, identity: Identity, body: CreateService) -> dict[str, Any]:
        """Store the service; its replicas are asked for at once and placed by the engine."""
        template = known_template(self.catalog, body.template)
        if not template.runs(WorkloadKind.SERVICE):
            raise InvalidRequest(Message(N_("template {template} does not run services; choose one whose kinds "
                                            "include service (online-inference)"), template=template.name),
                                 field="template")
        queue = body.queue or template.queue
        self.workloads.check_access(identity, template.name, queue)
        resolve(template, _one_replica(body.parameters), self.catalog)  # a bad parameter is a 400 now, not later
        if self.repository.service(body.name) is not None:
            raise Conflict(Message(N_("a service named {name} exists already; choose another name or update it"),
                                   name=body.name), field="name", reason="name-taken")
        row = self.repository.add_service(ServiceRow(
            name=body.name, tenant=identity.tenant.name, user=identity.user, template=template.name, queue=queue,
            spec={"command": body.command, "env": body.env, "parameters": body.parameters,
                  "readiness_path": body.readiness_path},
            replicas=body.replicas, min_replicas=body.min_replicas, max_replicas=body.max_replicas or body.replicas,
            revision=1, state="active",
        ))
        self.reconcile()
        return self.describe(row)

    def get(self, identity: Identity, name: str) -> dict[str, Any]:
        return self.describe(self.visible(identity, name))

    def list(self, identity: Identity) -> list[dict[str, Any]]:
        tenant = None if identity.is_platform_admin else identity.tenant.name
        return [self.describe(row) for row in self.repository.services(tenant=tenant)]

    def scale(self, identity: Identity, name: str, replicas: int) -> dict[str, Any]:
        """Change how many replicas run, between the service's minimum and maximum."""
        row = self._stoppable(identity, name, "service.scale")
        if not row.min_replicas <= replicas <= row.max_replicas:
            raise InvalidRequest(Message(N_("field 'replicas': {replicas} is outside {low}..{high}, service {name}'s "
                                            "minimum and maximum"), replicas=replicas, low=row.min_replicas,
                                         high=row.max_replicas, name=name), field="replicas")
        row = self.repository.update_service(name, replicas=replicas)
        self.reconcile()
        return self.describe(row)

    def delete(self, identity: Identity, name: str) -> dict[str, Any]:
        """End the service: every replica is cancelled, its devices given back."""
        self._stoppable(identity, name, "service.delete")
        row = self.repository.update_service(name, state="deleted")
        self.reconcile()
        return self.describe(row)

    def describe(self, row: ServiceRow) -> dict[str, Any]:
        replicas = self._replicas(row.name)
        return {
            "name": row.name, "tenant": row.tenant, "user": row.user, "template": row.template, "queue": row.queue,
            "state": row.state, "revision": row.revision, "replicas": row.replicas, "min_replicas": row.min_replicas,
            "max_replicas": row.max_replicas, "command": row.spec["command"], "env": row.spec.get("env") or {},
            "parameters": row.spec.get("parameters") or {}, "readiness_path": row.spec["readiness_path"],
            "endpoint": endpoint_path(row.name), "ready_replicas": sum(r.id in self.ready for r in replicas),
            "traffic": self.figures(row.name),
            "replica_workloads": [{**_replica_json(r), "ready": r.id in self.ready} for r in replicas],
            "created_at": row.created_at, "updated_at": row.updated_at,
        }

    def visible(self, identity: Identity, name: str) -> ServiceRow:
        row = self.repository.service(name)
        if row is None:
            raise NotFound(Message(N_("service {name!r} does not exist"), name=name))
        if not (identity.is_platform_admin or row.tenant == identity.tenant.name):
            raise Forbidden(Message(N_("service {name} belongs to tenant {tenant}, not to your tenant {yours}"),
                                    name=name, tenant=row.tenant, yours=identity.tenant.name), reason="other-tenant")
        return row

    def _stoppable(self, identity: Identity, name: str, action: str) -> ServiceRow:
        row = self.visible(identity, name)
        if row.state != "active":
            raise Conflict(Message(N_("service {name} was deleted"), name=name), reason="deleted")
        if not (identity.is_platform_admin or identity.is_tenant_admin or row.user == identity.user):
            self.workloads.access.deny(identity, action, f"service/{name}", Message(
                N_("service {name} belongs to {owner}; only they or a tenant-admin of {tenant} may change it"),
                name=name, owner=row.user, tenant=row.tenant))
        return row

    # -- the scheduler's side ----------------------------------------------------------------

    def reconcile(self, now: float | None = None) -> None:
        """Ask for the replicas each service is short of, cancel those over its count or of a deleted service."""
        now = self.clock.wall() if now is None else now
        live: dict[str, list[WorkloadRow]] = {}
        for replica in self.repository.workloads(kind=WorkloadKind.SERVICE.value, states=LIVE_STATES):
            live.setdefault(replica.spec.get("service"), []).append(replica)
        for service in self.repository.services(state=None):
            replicas = sorted(live.get(service.name, ()), key=lambda r: r.spec.get("replica", 0))
            wanted = service.replicas if service.state == "active" else 0
            for extra in replicas[wanted:]:
                why = "service deleted" if service.state != "active" else f"service scaled to {wanted} replicas"
                self.workloads.end(extra, why, now)
            taken = {replica.spec.get("replica") for replica in replicas[:wanted]}
            for index in itertools.islice((i for i in itertools.count() if i not in taken), max(0, wanted - len(replicas))):
                self._add_replica(service, index)

    def _add_replica(self, service: ServiceRow, index: int) -> None:
        template = self.catalog.template(service.template)
        if template is None:  # the catalog lost the template: nothing can be placed
            log.warning("jupyter-hetero: service %s: template %s is gone", service.name, service.template)
            return
        resolved = resolve(template, _one_replica(service.spec.get("parameters")), self.catalog)
        row = WorkloadRow(
            kind=WorkloadKind.SERVICE.value, name=f"{service.name} replica {index}", tenant=service.tenant,
            user=service.user, template=service.template, queue=service.queue, request=resolved.to_json(),
            spec={"payload": "command", "command": service.spec["command"], "env": service.spec.get("env") or {},
                  "service": service.name, "revision": service.revision, "replica": index,
                  "readiness_path": service.spec["readiness_path"]},
            state="queued", held_cpu_milli=0, held_memory_mib=0, held_device_milli=0, attempts=0, time_limit_s=None,
        )
        self.repository.add_workload(row, reason=f"replica {index} of service {service.name}",
                                     data={"service": service.name, "revision": service.revision})
        self.wake()

    def _replicas(self, name: str) -> list[WorkloadRow]:
        return [r for r in self.repository.workloads(kind=WorkloadKind.SERVICE.value, states=LIVE_STATES)
                if r.spec.get("service") == name]

    # -- readiness and traffic ---------------------------------------------------------------

    def probe(self) -> None:
        """Check every running replica's readiness path, in the background (one round at a time)."""
        if self._probing is None or self._probing.done():
            self._probing = asyncio.ensure_future(self._probe_all())

    async def _probe_all(self) -> None:
        running = [r for r in self.repository.workloads(kind=WorkloadKind.SERVICE.value, states=("running",))
                   if r.spec.get("port") and r.stopping is None]
        found = await asyncio.gather(*(self._probe(replica) for replica in running))
        ready = {replica.id: (replica.spec["service"], url) for replica, url in zip(running, found, strict=True) if url}
        for replica in running:
            if (replica.id in ready) != (replica.id in self.ready):
                self.repository.append_event(
                    type="ready" if replica.id in ready else "not-ready", workload_id=replica.id,
                    reason=f"{replica.name} {'answers' if replica.id in ready else 'does not answer'} "
                           f"{replica.spec['readiness_path']}")
        self.ready = ready

    async def _probe(self, replica: WorkloadRow) -> str | None:
        url = f"http://127.0.0.1:{replica.spec['port']}"
        request = httpclient.HTTPRequest(url + replica.spec["readiness_path"], request_timeout=PROBE_TIMEOUT_S,
                                         connect_timeout=PROBE_TIMEOUT_S)
        try:
            response = await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
        except OSError:
            return None
        return url if 200 <= response.code < 400 else None

    def observe(self, name: str, replica: int, seconds: float, status: int) -> None:
        """One request the endpoint relayed: its latency and whether it failed (5xx), for the service's figures."""
        self.traffic.setdefault(name, deque(maxlen=TRAFFIC_KEPT)).append(
            (self.clock.monotonic(), seconds, status >= 500, replica))

    def figures(self, name: str) -> dict[str, Any]:
        """Requests per second, latency percentiles (ms) and error rate over the last TRAFFIC_WINDOW_S."""
        since = self.clock.monotonic() - TRAFFIC_WINDOW_S
        recent = [entry for entry in self.traffic.get(name, ()) if entry[0] >= since]
        if not recent:
            return {"window_s": TRAFFIC_WINDOW_S, "requests": 0, "requests_per_s": 0.0, "error_rate": None,
                    "latency_ms": None}
        latencies = sorted(seconds * 1000 for _at, seconds, _failed, _replica in recent)
        return {
            "window_s": TRAFFIC_WINDOW_S, "requests": len(recent),
            "requests_per_s": round(len(recent) / TRAFFIC_WINDOW_S, 3),
            "error_rate": round(sum(failed for _at, _s, failed, _r in recent) / len(recent), 4),
            "latency_ms": {name: round(_percentile(latencies, q), 2) for name, q in (("p50", 50), ("p95", 95),
                                                                                    ("p99", 99))},
        }

    def ready_replicas(self, name: str) -> list[tuple[int, str]]:
        """Where the service's ready replicas answer, starting with the next one's turn."""
        ready = sorted((replica, url) for replica, (service, url) in self.ready.items() if service == name)
        if not ready:
            return []
        start = next(self._turn) % len(ready)
        return ready[start:] + ready[:start]

    def not_ready(self, replica_id: int) -> None:
        """A replica the endpoint could not reach: out of rotation until a probe finds it ready again."""
        self.ready.pop(replica_id, None)


def _one_replica(parameters: dict[str, Any] | None) -> dict[str, Any]:
    # Each replica is one workload of one process: the template's gang `replicas` parameter is the service's count.
    return {name: value for name, value in (parameters or {}).items() if name != "replicas"}


def _replica_json(row: WorkloadRow) -> dict[str, Any]:
    answer = workload_json(row)
    return {key: answer.get(key) for key in ("id", "state", "reason", "node", "flavor", "placement")} | {
        "attempts": row.attempts, "replica": row.spec.get("replica"), "revision": row.spec.get("revision"),
        "port": row.spec.get("port")}


def _percentile(ordered: list[float], q: float) -> float:
    """The nearest-rank ``q``th percentile of an ascending list."""
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]
