"""Capacity advice: where recorded waits exceed a queue's max wait, how many more nodes of which flavor would bring
them back (or which compatible flavor a template could also offer), and where devices sit unused,
what could be released; each answer checked by replaying the recorded
workload through the engine on the changed inventory.

    advisor = CapacityAdvisor(engine_factory=lambda: Engine(eta=False))
    advisor.advise(recorded, nodes, queues, tenants, max_wait, allocated_hours, period_s=86400)
    # {"queues": [...recorded and replayed p95 per queue...], "add": [{"queue": "batch", "flavor": "a100-80g",
    #   "nodes": 3, "devices": 6, "replayed_p95_s": 0.0}], "release": [{"flavor": "ascend-910b", ...}]}

Pure but for the engine it runs: the recorded workloads (arrival, request, flavors, run time as it ran), the
nodes as the engine sees them, the queues' and tenants' policies. A replay runs each recorded workload for the
time it ran, arriving when it arrived; the wait it gets there is compared with the queue's max wait. Nodes are
added as copies of a node of the flavor the waiting workloads asked for first among those that have a node here,
one at a time up to ``max_added``; a flavor whose devices were allocated less than ``low_allocation`` of the
period may give back a node when the replay without it keeps every queue within its max wait (or no worse than it
is).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ...catalog import Catalog
from ...engine import Engine, NodeState, QueuePolicy, Request, TenantQuota
from ...engine_inputs import engine_request, node_state, queue_policies, tenant_quotas
from ...models import CapacityQuery
from ...sim.replay import SimJob, replay
from ...store import Repository
from ..access import Access
from ..clock import Clock
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..scheduling.inventory import Inventory
from .usage import usage_report

__all__ = ["CapacityAdvisor", "CapacityPlanning", "Recorded"]


@dataclass(frozen=True)
class Recorded:
    """One recorded workload: when it arrived, what it asked for, where it could run, how long it ran (so far)
    and how long it waited."""

    id: int
    tenant: str
    queue: str
    template: str
    arrival: float
    request: Request
    flavors: tuple[str, ...]
    run_s: float
    waited_s: float


class CapacityAdvisor:
    def __init__(self, engine_factory: Callable[[], object], *, max_added: int = 8, low_allocation: float = 0.3,
                 quantile: float = 95):
        self.engine_factory = engine_factory
        self.max_added = max_added
        self.low_allocation = low_allocation
        self.quantile = quantile

    def advise(self, recorded: Sequence[Recorded], nodes: Sequence[NodeState], queues: dict[str, QueuePolicy],
               tenants: dict[str, TenantQuota], max_wait: dict[str, float], allocated_hours: dict[str, float],
               period_s: float, compatible: dict[str, list[str]] | None = None) -> dict:
        """``compatible``: per template, the flavors its runtime variants run on."""
        recorded_p95 = self._p95({r.queue: [] for r in recorded} | _by_queue(recorded, lambda r: r.waited_s))
        baseline = self._replay(recorded, nodes, queues, tenants)
        over = sorted(queue for queue, p95 in recorded_p95.items()
                      if queue in max_wait and p95 > max_wait[queue])
        report = {"quantile": self.quantile, "period_s": period_s, "queues": [
            {"queue": queue, "max_wait_s": max_wait.get(queue), "recorded_p95_s": _seconds(p95),
             "replayed_p95_s": _seconds(baseline.get(queue)), "workloads": sum(r.queue == queue for r in recorded),
             "over_max_wait": queue in over}
            for queue, p95 in sorted(recorded_p95.items())]}
        report["add"] = [advice for queue in over
                         if (advice := self._more(queue, recorded, nodes, queues, tenants, max_wait[queue]))]
        report["shift"] = [advice for queue in over if (advice := self._shift(
            queue, recorded, nodes, queues, tenants, max_wait[queue], compatible or {}))]
        report["release"] = self._release(recorded, nodes, queues, tenants, max_wait, allocated_hours, period_s,
                                          baseline)
        return report

    # -- more capacity -----------------------------------------------------------------------

    def _more(self, queue: str, recorded, nodes, queues, tenants, limit: float) -> dict | None:
        have = {node.flavor: node for node in nodes}
        # Each workload's first flavor that has a node to copy: a template's first choice may have none here.
        asked = Counter(flavor for r in recorded if r.queue == queue
                        if (flavor := next((f for f in r.flavors if f in have), None)))
        for flavor, _count in asked.most_common():
            model = have[flavor]
            for added in range(1, self.max_added + 1):
                more = list(nodes) + [_copy(model, f"{model.name}+{i}") for i in range(1, added + 1)]
                p95 = self._replay(recorded, more, queues, tenants).get(queue, math.inf)
                if p95 <= limit:
                    return {"queue": queue, "flavor": flavor, "nodes": added, "devices": added * len(model.devices),
                            "like": model.name, "replayed_p95_s": _seconds(p95), "max_wait_s": limit}
        return {"queue": queue, "flavor": None, "nodes": None, "devices": None, "like": None,
                "replayed_p95_s": None, "max_wait_s": limit,
                "note": f"no {self.max_added} more nodes of the flavors it asked for bring its waits back"}

    def _shift(self, queue: str, recorded, nodes, queues, tenants, limit: float,
               compatible: dict[str, list[str]]) -> dict | None:
        """A template of the queue whose workloads, also offered a compatible flavor they did not ask for (one the
        template's runtime variants run on), would bring the queue's replayed p95 wait within its max wait on today's
        nodes; None when none does."""
        have = {node.flavor for node in nodes}
        for template in sorted({r.template for r in recorded if r.queue == queue}):
            asked = {f for r in recorded if r.queue == queue and r.template == template for f in r.flavors}
            for flavor in [f for f in compatible.get(template, ()) if f in have and f not in asked]:
                moved = [replace(r, flavors=(*r.flavors, flavor))
                         if r.queue == queue and r.template == template else r for r in recorded]
                p95 = self._replay(moved, nodes, queues, tenants).get(queue, math.inf)
                if p95 <= limit:
                    return {"queue": queue, "template": template, "to_flavor": flavor,
                            "replayed_p95_s": _seconds(p95), "max_wait_s": limit}
        return None

    # -- less capacity -----------------------------------------------------------------------

    def _release(self, recorded, nodes, queues, tenants, max_wait, allocated_hours, period_s,
                 baseline: dict[str, float]) -> list[dict]:
        """Nodes of rarely allocated flavors whose removal leaves every queue's replayed wait within its max wait,
        or no worse than it is (a queue over its max wait already is the other advice's business)."""
        found = []
        by_flavor: dict[str, list[NodeState]] = {}
        for node in nodes:
            if node.devices:
                by_flavor.setdefault(node.flavor, []).append(node)
        for flavor, members in sorted(by_flavor.items()):
            devices = sum(len(node.devices) for node in members)
            share = allocated_hours.get(flavor, 0.0) / (devices * period_s / 3600) if period_s else 0.0
            if share >= self.low_allocation:
                continue
            spare = members[-1]
            fewer = [node for node in nodes if node is not spare]
            waits = self._replay(recorded, fewer, queues, tenants)
            if all(waits.get(queue, 0.0) <= max(limit, baseline.get(queue, 0.0)) for queue, limit in max_wait.items()):
                found.append({"flavor": flavor, "node": spare.name, "devices": len(spare.devices),
                              "allocated_share": round(share, 4), "of_devices": devices})
        return found

    # -- replay ------------------------------------------------------------------------------

    def _replay(self, recorded, nodes, queues, tenants) -> dict[str, float]:
        """Each queue's p95 wait when the recorded workload runs on ``nodes``; a workload that never starts
        waits forever."""
        if not recorded:
            return {}
        start = min(r.arrival for r in recorded)
        jobs = [SimJob(id=r.id, tenant=r.tenant, queue=r.queue, arrival=r.arrival - start, work=max(r.run_s, 1e-3),
                       request=r.request, flavors=r.flavors, speed=dict.fromkeys(r.flavors, 1.0))
                for r in recorded]
        result = replay(jobs, [_copy(node, node.name) for node in nodes], queues, tenants, self.engine_factory())
        waits = {r.queue: [] for r in recorded} | _by_queue(
            recorded, lambda r: math.inf if (record := result.records[r.id]).first_start is None
            else record.first_start - record.job.arrival)
        return self._p95(waits)

    def _p95(self, waits: dict[str, list[float]]) -> dict[str, float]:
        return {queue: _percentile(sorted(values), self.quantile) for queue, values in waits.items() if values}


def _by_queue(recorded, value) -> dict[str, list[float]]:
    grouped: dict[str, list[float]] = {}
    for r in recorded:
        grouped.setdefault(r.queue, []).append(value(r))
    return grouped


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _copy(node: NodeState, name: str) -> NodeState:
    copy = node.clone()
    copy.name = name
    copy.domain = name if node.domain == node.name else node.domain
    return copy


def _seconds(value: float | None) -> float | None:
    return None if value is None or math.isinf(value) else round(value, 3)


class CapacityPlanning(ReadsLiveCatalog):
    """Capacity advice over the store's record of the last ``since`` seconds (platform admins)."""

    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, inventory: Inventory, access: Access,
                 clock: Clock, engine_factory: Callable[[], object] = lambda: Engine(eta=False)):
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self.inventory = inventory
        self.access = access
        self.clock = clock
        self.advisor = CapacityAdvisor(engine_factory)

    def advice(self, identity: Identity, query: CapacityQuery) -> dict:
        """Blocking (it replays): call it off the event loop."""
        self.access.require_platform_admin(identity, "capacity.advice", "capacity")
        return self.advise(query.since)

    def advise(self, since_s: float) -> dict:
        """The advice over the last ``since_s`` seconds, for whoever was allowed to ask. Blocking."""
        now = self.clock.wall()
        since = now - since_s
        recorded = []
        for workload_id, tenant, queue, template, request, created, admitted, run_s \
                in self.repository.recorded_workloads(since):
            known = self.catalog.template(template)
            recorded.append(Recorded(
                id=workload_id, tenant=tenant, queue=queue, template=template, arrival=created,
                request=engine_request(request["request"]), flavors=tuple(request["flavors"]),
                # What never ran yet is replayed for its template's typical run time.
                run_s=run_s or (known.typical_runtime_s if known else 3600.0),
                waited_s=(admitted if admitted is not None else now) - created))
        nodes = [node_state(view) for view in self.inventory.nodes() if view.readiness == "ready" and view.flavor]
        by_flavor = usage_report(self.repository.attempts_between(since, now), self.catalog, since=since, until=now,
                                 now=now, by="flavor")
        allocated = {row["key"]: row["device_hours"] for row in by_flavor["rows"]}
        return self.advisor.advise(recorded, nodes, queue_policies(self.catalog), tenant_quotas(self.catalog),
                                   {queue.name: queue.max_wait_s for queue in self.catalog.queues}, allocated,
                                   float(since_s), compatible={
                                       t.name: [f.name for f in self.catalog.flavors if t.variant_for(f.family)]
                                       for t in self.catalog.templates})
