"""Online services: N replicas of a model server, each a workload of kind ``service``, behind one endpoint.

    serving.create(identity, CreateService(name="resnet", command=["python", "serve.py"], replicas=2))
    serving.reconcile(now)        # every tick: replicas up to what is wanted, extras cancelled
    serving.probe()               # readiness of every running replica, checked in the background (GET)
    serving.ready_replicas(service_id)  # [(workload id, "http://10.0.3.7:8080")] in round-robin order

A name is unique among a tenant's active services: two tenants may each have a ``resnet``, reached at
``/hetero/endpoints/<tenant>/resnet/``, and a deleted service's name is free again (its row stays, for audit and
usage). What the endpoint keeps in memory (ready replicas, traffic, canaries) is by service id, so a new service
of a deleted one's name starts with nothing of the old one's.

The engine places each replica on matched devices like any workload, in the template's queue
(``inference``, whose reserved devices are lent to other queues while idle and taken back when a
replica needs them); a replica is never preempted. The
scheduler starts it with ``PORT`` set; it takes traffic once its readiness path answers. A replica
that exits starts again with a growing backoff, one lost with its node is placed again elsewhere, and
the endpoint keeps answering from the others meanwhile.

A new revision (``rollout``) starts as a canary: the template's ``canary`` replicas take its share of
the traffic; once it has been ready for the window and answered enough requests, its error rate and
latency are judged against the stable revision's by the template's metric targets (rollout.py), and it
is promoted (the stable replicas are replaced as the new ones become ready) or rolled back, each with
its figures. ``rollback`` returns to any earlier revision at once.
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

from ...catalog import Catalog, WorkloadKind
from ...errors import Conflict, Forbidden, InvalidRequest, NotFound
from ...i18n import N_, Message
from ...models import CreateRollout, CreateService
from ...store import Repository
from ...store.tables import ServiceRow, WorkloadRow
from ..clock import Clock
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..workloads.resolve import known_template, resolve
from ..workloads.service import Workloads, event_json, workload_json
from .reconcile import ServiceReconciler, replica_parameters
from .rollout import history_entry

__all__ = ["Services", "endpoint_path"]

log = logging.getLogger(__name__)

# A readiness check that takes longer than this fails.
PROBE_TIMEOUT_S = 2.0
# A service's traffic figures are over this window, from at most this many of its latest requests.
TRAFFIC_WINDOW_S = 60.0
TRAFFIC_KEPT = 50_000
# What a replica's usage says: its memory, and its devices' where the backend measures them.
USAGE_KEYS = ("rss_mib", "device_util_pct", "device_memory_used_mib")


def endpoint_path(tenant: str, name: str) -> str:
    return f"/hetero/endpoints/{tenant}/{name}/"


class Services(ReadsLiveCatalog, ServiceReconciler):
    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, workloads: Workloads, clock: Clock,
                 wake: Callable[[], None], address_of: Callable[[int], str | None],
                 usage_of: Callable[[int], dict]):
        self.live_catalog = LiveCatalog.of(catalog)
        self.address_of = address_of  # a running replica's address (its pod's IP), by workload id; None: not yet
        self.usage_of = usage_of  # a running replica's latest usage sample, by workload id
        self.repository = repository
        self.workloads = workloads
        self.clock = clock
        self.wake = wake
        # Ready replicas' workload ids -> (their service's id, revision, where they answer): the endpoint reads no
        # database. Everything below is by service id: a new service of a deleted one's name inherits none of it.
        self.ready: dict[int, tuple[int, int, str]] = {}
        self._turn = itertools.count()  # round robin over a service's ready replicas
        self._probing: asyncio.Task | None = None
        self._active: dict[tuple[str, str], int] = {}  # (tenant, name) -> active service's id, as of the last reconcile
        self._canaries: dict[int, tuple[int, float]] = {}  # kept by reconcile, so the endpoint reads no database
        self.traffic: dict[int, deque] = {}  # per service: (monotonic time, seconds, failed, revision), newest last
        self._canary_since: dict[int, float] = {}  # services whose canary is ready: since when (monotonic)
        self._requests = itertools.count()  # which request goes to a canary (its share of them, evenly spread)
        self.in_flight: dict[int, int] = {}  # requests the endpoint is relaying now, per service
        self._load: dict[int, float] = {}  # in flight, smoothed over ticks
        self._low_since: dict[int, float] = {}  # since when the load has needed fewer replicas (monotonic)

    # -- the API's side (the scheduler's, reconcile(), is reconcile.py's) ---------------------

    def create(self, identity: Identity, body: CreateService) -> dict[str, Any]:
        """Store the service; its replicas are asked for at once and placed by the engine."""
        # Each replica is checked now, as its owner's: a bad parameter is a 400 here, not a replica never placed.
        checked = self.workloads.enqueuer.check(identity, WorkloadKind.SERVICE, body.template,
                                                replica_parameters(body.parameters), body.queue)
        template, queue = checked.template, checked.queue
        taken = self.repository.service(identity.tenant.name, body.name)
        if taken is not None and taken.state == "active":
            raise Conflict(Message(N_("a service named {name} exists already; choose another name or update it"),
                                   name=body.name), field="name", reason="name-taken")
        self.workloads.access.record(identity, "service.create", f"service/{identity.tenant.name}/{body.name}")
        spec = {"command": body.command, "code": body.code, "env": body.env, "parameters": body.parameters,
                "readiness_path": body.readiness_path, "target_in_flight": body.target_in_flight,
                "scale_down_delay_s": body.scale_down_delay_s}
        row = self.repository.add_service(ServiceRow(
            name=body.name, tenant=identity.tenant.name, user=identity.user, template=template.name, queue=queue,
            spec=spec, replicas=body.replicas, min_replicas=body.min_replicas,
            max_replicas=body.max_replicas or body.replicas, revision=1, rollout=None, state="active",
            revisions=[{"revision": 1, "spec": spec, "outcome": "created", "at": self.clock.wall(),
                        "by": identity.user}],
        ))
        self.reconcile()
        return self.describe(row)

    def get(self, identity: Identity, name: str, tenant: str | None = None) -> dict[str, Any]:
        return self.describe(self.visible(identity, name, tenant), viewer=identity.user)

    def events(self, identity: Identity, name: str, tenant: str | None = None) -> list[dict[str, Any]]:
        """Every step of the service, oldest first: rollouts, verdicts with their figures, rollbacks, scaling."""
        return [event_json(event) for event in self.repository.service_events(self.visible(identity, name, tenant))]

    def list(self, identity: Identity) -> list[dict[str, Any]]:
        tenant = None if identity.is_platform_admin else identity.tenant.name
        live = self._live_replicas()
        return [self.describe(row, live.get(row.id, []), viewer=identity.user)
                for row in self.repository.services(tenant=tenant)]

    def scale(self, identity: Identity, name: str, replicas: int, tenant: str | None = None) -> dict[str, Any]:
        """Change how many replicas run, between the service's minimum and maximum."""
        row = self._stoppable(identity, name, tenant, "service.scale")
        if not row.min_replicas <= replicas <= row.max_replicas:
            raise InvalidRequest(Message(N_("field 'replicas': {replicas} is outside {low}..{high}, service {name}'s "
                                            "minimum and maximum"), replicas=replicas, low=row.min_replicas,
                                         high=row.max_replicas, name=name), field="replicas")
        row = self.repository.update_service(row.id, replicas=replicas)
        self.reconcile()
        return self.describe(row, viewer=identity.user)

    def roll_out(self, identity: Identity, name: str, body: CreateRollout, tenant: str | None = None) -> dict[str, Any]:
        """Start a new revision (what ``body`` changes of the stable one) as a canary under trial."""
        row = self._stoppable(identity, name, tenant, "service.rollout")
        if row.rollout is not None:
            raise Conflict(Message(N_("service {name} is trying revision {revision} already; wait for its verdict "
                                      "or roll back"), name=name, revision=row.rollout["revision"]),
                           reason="rollout-in-progress")
        template = known_template(self.catalog, row.template)
        changes = body.model_dump(exclude_none=True)
        if "command" in changes or "code" in changes:  # one replaces the other
            changes = {"command": None, "code": None, **changes}
        spec = {**row.spec, **changes}
        resolve(template, replica_parameters(spec.get("parameters")), self.catalog)
        revision = max(entry["revision"] for entry in row.revisions) + 1
        policy = template.canary
        self.repository.update_service(row.id, rollout={
            "revision": revision, "spec": spec, "state": "canary", "replicas": policy.replicas,
            "traffic": policy.traffic, "window_s": policy.window_s, "min_requests": policy.min_requests,
            "started_at": self.clock.wall(), "ready_at": None, "by": identity.user})
        self._event(row, "rollout", f"revision {revision} of service {name} started as a canary "
                                     f"({policy.replicas} replica(s), {policy.traffic:.0%} of traffic)",
                    {"revision": revision})
        self.reconcile()
        return self._described(row.id, identity)

    def roll_back(self, identity: Identity, name: str, revision: int | None, tenant: str | None = None
                  ) -> dict[str, Any]:
        """Back to an earlier revision at once, as a new revision, ending a canary under trial; without
        ``revision``, the canary under trial ends, or with none, back to the revision stable before this one."""
        row = self._stoppable(identity, name, tenant, "service.rollback")
        history = [*row.revisions]
        if row.rollout is not None:  # a canary under trial ends, whichever revision follows
            history.append({**history_entry(row.rollout), "outcome": "abandoned", "at": self.clock.wall(),
                            "ended_by": identity.user})
        if revision is None and row.rollout is not None:  # ... and the stable revision stays
            self.repository.update_service(row.id, rollout=None, revisions=history)
            self._event(row, "rolled-back", f"the canary of service {name} (revision {row.rollout['revision']}) was "
                                             f"rolled back by {identity.user}", {"revision": row.rollout["revision"]})
            self.reconcile()
            return self._described(row.id, identity)
        if revision is None:  # the revision that was stable before this one
            stable = [entry for entry in row.revisions if entry["outcome"] in ("created", "promoted", "rolled-back-to")
                      and entry["revision"] != row.revision]
            wanted = stable[-1] if stable else None
        else:  # any revision it ever had, even a canary that was rolled back
            wanted = next((entry for entry in row.revisions if entry["revision"] == revision != row.revision), None)
        if wanted is None:
            raise InvalidRequest(Message(N_("field 'revision': service {name} has no earlier revision {revision} to "
                                            "return to"), name=name, revision=revision if revision else "-"),
                                 field="revision")
        number = max(entry["revision"] for entry in row.revisions) + 1
        history.append({"revision": number, "spec": wanted["spec"], "outcome": "rolled-back-to",
                        "from": row.revision, "to": wanted["revision"], "at": self.clock.wall(), "by": identity.user})
        self.repository.update_service(row.id, spec=wanted["spec"], revision=number, rollout=None, revisions=history)
        self._event(row, "rolled-back", f"service {name} rolled back by {identity.user} to revision "
                                         f"{wanted['revision']}'s spec, as revision {number}",
                    {"revision": number, "from": row.revision, "to": wanted["revision"]})
        self.reconcile()
        return self._described(row.id, identity)

    def delete(self, identity: Identity, name: str, tenant: str | None = None) -> dict[str, Any]:
        """End the service: every replica is cancelled, its devices given back; its name is free again."""
        row = self._stoppable(identity, name, tenant, "service.delete")
        row = self.repository.update_service(row.id, state="deleted")
        self.reconcile()
        return self.describe(row, viewer=identity.user)

    def _described(self, service_id: int, identity: Identity) -> dict[str, Any]:
        return self.describe(self.repository.service_by_id(service_id), viewer=identity.user)

    def describe(self, row: ServiceRow, replicas: list[WorkloadRow] | None = None, *,
                 viewer: str | None = None) -> dict[str, Any]:
        """What the API answers of a service as ``viewer`` (a user name) sees it: the values of its env only if
        they own it (they may be their secrets), anyone else the names with null values; ``replicas``: its live
        ones, read here when not given."""
        replicas = self._live_replicas().get(row.id, []) if replicas is None else replicas
        usage = {r.id: {key: sample.get(key) for key in USAGE_KEYS}
                 for r in replicas for sample in (self.usage_of(r.id),)}
        measured = [sample for sample in usage.values() if sample.get("device_util_pct") is not None]
        owner = viewer == row.user
        return {
            "name": row.name, "tenant": row.tenant, "user": row.user, "template": row.template, "queue": row.queue,
            "state": row.state, "revision": row.revision, "replicas": row.replicas, "min_replicas": row.min_replicas,
            "max_replicas": row.max_replicas, "command": row.spec.get("command"), "code": row.spec.get("code"),
            "env": _env_as_seen(row.spec.get("env"), owner),
            "parameters": row.spec.get("parameters") or {}, "readiness_path": row.spec["readiness_path"],
            "target_in_flight": row.spec.get("target_in_flight"), "in_flight": self.in_flight.get(row.id, 0),
            "endpoint": endpoint_path(row.tenant, row.name), "ready_replicas": sum(r.id in self.ready for r in replicas),
            "device_utilisation": {
                "device_util_pct": round(sum(m["device_util_pct"] for m in measured) / len(measured), 1),
                "device_memory_used_mib": round(sum(m.get("device_memory_used_mib") or 0 for m in measured), 1)} if measured else None,
            "traffic": self.figures(row.id), "rollout": self._rollout_json(row, owner),
            "revisions": [{**entry, "spec": _spec_as_seen(entry["spec"], owner)} for entry in row.revisions],
            "replica_workloads": [{**_replica_json(r), "ready": r.id in self.ready, "usage": usage[r.id],
                                   "address": self.address_of(r.id) if r.state == "running" else None}
                                  for r in replicas],
            "created_at": row.created_at, "updated_at": row.updated_at,
        }

    def visible(self, identity: Identity, name: str, tenant: str | None = None) -> ServiceRow:
        """The service of that name in ``tenant`` (by default the caller's own), if ``identity`` may see it: 403
        another tenant's (a platform admin sees every tenant's), 404 unknown."""
        tenant = _tenant_named(identity, name, tenant)
        row = self.repository.service(tenant, name)
        if row is None:
            raise NotFound(Message(N_("service {name!r} does not exist in tenant {tenant}"), name=name, tenant=tenant))
        return row

    def may_call(self, identity: Identity, tenant: str, name: str) -> int:
        """What the endpoint checks on every request, from memory (the active services as of the last reconcile;
        a name not seen yet, as after a restart, is read from the store); the service's id."""
        tenant = _tenant_named(identity, name, tenant)
        service_id = self._active.get((tenant, name))
        if service_id is None:
            row = self.repository.service(tenant, name)
            if row is None or row.state != "active":
                raise NotFound(Message(N_("service {name!r} does not exist in tenant {tenant}"), name=name,
                                       tenant=tenant))
            service_id = row.id
        return service_id

    def _stoppable(self, identity: Identity, name: str, tenant: str | None, action: str) -> ServiceRow:
        target = f"service/{_tenant_named(identity, name, tenant)}/{name}"
        self.workloads.access.require_person(identity, action, target)
        row = self.visible(identity, name, tenant)
        if row.state != "active":
            raise Conflict(Message(N_("service {name} was deleted"), name=name), reason="deleted")
        if not (identity.is_platform_admin or identity.is_tenant_admin or row.user == identity.user):
            self.workloads.access.deny(identity, action, target, Message(
                N_("service {name} belongs to {owner}; only they or a tenant-admin of {tenant} may change it"),
                name=name, owner=row.user, tenant=row.tenant))
        self.workloads.access.record(identity, action, target)
        return row

    def _rollout_json(self, row: ServiceRow, owner: bool) -> dict[str, Any] | None:
        if row.rollout is None:
            return None
        since = self._canary_since.get(row.id)
        entry = history_entry(row.rollout)
        return {**{key: value for key, value in row.rollout.items() if key != "spec"}, **entry,
                "spec": _spec_as_seen(entry["spec"], owner),
                "canary": self.figures(row.id, row.rollout["revision"], since=since),
                "stable": self.figures(row.id, row.revision, since=since)}

    # -- readiness and traffic ---------------------------------------------------------------

    def probe(self) -> None:
        """Check every running replica's readiness path, in the background (one round at a time)."""
        if not self._active and not self.ready:
            return  # no service: nothing to check
        if self._probing is None or self._probing.done():
            self._probing = asyncio.ensure_future(self._probe_all())

    async def _probe_all(self) -> None:
        running = [r for r in self.repository.workloads(kind=WorkloadKind.SERVICE.value, states=("running",))
                   if r.spec.get("port") and r.stopping is None]
        found = await asyncio.gather(*(self._probe(replica) for replica in running))
        services = self.repository.services(state=None) if any("service_id" not in r.spec for r in running) else None
        ready = {replica.id: (self._service_of(replica, services), replica.spec.get("revision", 0), url)
                 for replica, url in zip(running, found, strict=True) if url}
        for replica in running:
            if (replica.id in ready) != (replica.id in self.ready):
                self.repository.append_event(
                    type="ready" if replica.id in ready else "not-ready", workload_id=replica.id,
                    reason=f"{replica.name} {'answers' if replica.id in ready else 'does not answer'} "
                           f"{replica.spec['readiness_path']}")
        self.ready = ready

    async def _probe(self, replica: WorkloadRow) -> str | None:
        address = self.address_of(replica.id)
        if address is None:
            return None  # its pod has no IP yet
        url = f"http://{address}:{replica.spec['port']}"
        request = httpclient.HTTPRequest(url + replica.spec["readiness_path"], request_timeout=PROBE_TIMEOUT_S,
                                         connect_timeout=PROBE_TIMEOUT_S)
        try:
            response = await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
        except OSError:
            return None
        return url if 200 <= response.code < 400 else None

    def observe(self, service_id: int, replica: int, seconds: float, status: int) -> None:
        """One request the endpoint relayed: its latency and whether it failed (5xx), for the service's figures."""
        revision = self.ready.get(replica, (service_id, 0, ""))[1]
        self.traffic.setdefault(service_id, deque(maxlen=TRAFFIC_KEPT)).append(
            (self.clock.monotonic(), seconds, status >= 500, revision))

    def figures(self, service_id: int, revision: int | None = None, since: float | None = None) -> dict[str, Any]:
        """Requests per second, latency percentiles (ms) and error rate of one revision (or all) since ``since``
        (monotonic), by default over the last TRAFFIC_WINDOW_S."""
        now = self.clock.monotonic()
        since = now - TRAFFIC_WINDOW_S if since is None else since
        window = max(now - since, 1e-9)
        recent = [entry for entry in self.traffic.get(service_id, ())
                  if entry[0] >= since and revision in (None, entry[3])]
        if not recent:
            return {"window_s": round(window, 3), "requests": 0, "requests_per_s": 0.0, "error_rate": None,
                    "latency_ms": None}
        latencies = sorted(seconds * 1000 for _at, seconds, _failed, _revision in recent)
        return {
            "window_s": round(window, 3), "requests": len(recent),
            "requests_per_s": round(len(recent) / window, 3),
            "error_rate": round(sum(failed for _at, _s, failed, _r in recent) / len(recent), 4),
            "latency_ms": {name: round(_percentile(latencies, q), 2) for name, q in (("p50", 50), ("p95", 95),
                                                                                    ("p99", 99))},
        }

    def ready_replicas(self, service_id: int, canary: tuple[int, float] | None = None) -> list[tuple[int, str]]:
        """Where the service's ready replicas answer, the one whose turn it is first; with ``canary`` (its
        revision and share), that share of requests goes to the canary's replicas first, the rest to the others."""
        ready = sorted((replica, revision, url) for replica, (service, revision, url) in self.ready.items()
                       if service == service_id)
        if canary is not None:
            number = next(self._requests)
            to_canary = int((number + 1) * canary[1]) > int(number * canary[1])
            first = [entry for entry in ready if (entry[1] == canary[0]) == to_canary]
            ready = first + [entry for entry in ready if entry not in first]  # the others only if these fail
        else:
            first = ready
        start = next(self._turn) % len(first) if first else 0
        ordered = first[start:] + first[:start] + ready[len(first):]
        return [(replica, url) for replica, _revision, url in ordered]

    def canary_of(self, service_id: int) -> tuple[int, float] | None:
        """A service's canary under trial (revision, share of traffic), once it is ready; read by the endpoint."""
        return self._canaries.get(service_id)

    def not_ready(self, replica_id: int) -> None:
        """A replica the endpoint could not reach: out of rotation until a probe finds it ready again."""
        self.ready.pop(replica_id, None)


def _tenant_named(identity: Identity, name: str, tenant: str | None) -> str:
    """The tenant a service's name is looked up in: the caller's own unless they name one; only a platform admin
    names another tenant."""
    if tenant is None or tenant == identity.tenant.name:
        return identity.tenant.name
    if not identity.is_platform_admin:
        raise Forbidden(Message(N_("service {name} of tenant {tenant} is not for you: your tenant is {yours}"),
                                name=name, tenant=tenant, yours=identity.tenant.name), reason="other-tenant")
    return tenant


def _env_as_seen(env: dict[str, str] | None, owner: bool) -> dict[str, str | None]:
    # The values are the owner's (they may hold their secrets); their tenant sees which variables are set.
    return dict(env or {}) if owner else dict.fromkeys(env or {})


def _spec_as_seen(spec: dict[str, Any], owner: bool) -> dict[str, Any]:
    return spec if owner or not spec.get("env") else {**spec, "env": _env_as_seen(spec["env"], owner)}


def _replica_json(row: WorkloadRow) -> dict[str, Any]:
    answer = workload_json(row)
    return {key: answer.get(key) for key in ("id", "state", "reason", "node", "flavor", "placement")} | {
        "attempts": row.attempts, "replica": row.spec.get("replica"), "revision": row.spec.get("revision"),
        "port": row.spec.get("port")}


def _percentile(ordered: list[float], q: float) -> float:
    """The nearest-rank ``q``th percentile of an ascending list."""
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]
