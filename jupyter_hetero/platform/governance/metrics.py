"""The platform's numbers in Prometheus' text format: one set every team reads the same way.

    metrics = PlatformMetrics(catalog=catalog, repository=repository, inventory=inventory, backend=backend,
                              clock=clock)
    metrics.exposition()      # b"# HELP hetero_node_devices ...", for GET /hetero/api/v1/metrics

Three groups, each family named with its unit:

- resource: devices, cores and memory per node (what it has, what is allocated, what is used where measured),
  the device-memory watermark per flavor and the queue wait per queue (a histogram);
- task: submissions, workloads per state, attempts per outcome, failures per reason, run time (a histogram),
  retries, preemptions, node losses, checkpoints and archives, and each running workload's latest figure of each
  metric its template declares or the platform measures (``hetero_workload_metric``);
- governance: device-seconds and cost per tenant and flavor (the catalog's price per device-hour, per
  core-hour for CPU flavors), quota and use per tenant and flavor, audit entries per outcome and the chain's
  sealed head, each onboarding checklist's state.

Counted from the store on each scrape, in one read (no counter lives in memory, so a restart loses
nothing and several replicas of the server say the same). Measuring real nodes waits on drivers: the
handler calls :meth:`exposition` off the event loop.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from ...catalog import Catalog
from ...metric_names import MEASURED
from ...store import Repository
from ..clock import Clock
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..scheduling.inventory import Inventory
from .usage import held, hourly_cost

__all__ = ["FAMILIES", "PlatformMetrics"]

_MIB = 1024 * 1024
WAIT_BUCKETS_S = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
RUN_BUCKETS_S = (10, 60, 300, 900, 1800, 3600, 14400, 43200, 86400, 259200)
# Failure reasons in a few words, from the attempt's reason: the first pattern found names it.
_FAILURES = (("out of memory", "out-of-memory"), ("time limit", "time-limit"), ("could not start", "start-failed"),
             ("cannot be pulled", "image"), ("node", "node-lost"), ("exit code", "exit-code"))

# Every family the endpoint has, by group (the Grafana dashboard's test reads it too).
FAMILIES = {
    "resource": ("hetero_node_devices", "hetero_node_devices_allocated", "hetero_node_device_memory_bytes",
                 "hetero_node_cpu_cores",
                 "hetero_node_cpu_cores_allocated", "hetero_node_memory_bytes", "hetero_node_memory_allocated_bytes",
                 "hetero_node_up", "hetero_node_device_utilisation_ratio", "hetero_node_cpu_utilisation_ratio",
                 "hetero_node_memory_used_bytes", "hetero_device_memory_watermark_bytes", "hetero_queue_wait_seconds"),
    "task": ("hetero_workloads_submitted", "hetero_workloads", "hetero_attempts", "hetero_attempt_failures",
             "hetero_attempt_run_seconds", "hetero_workload_retries", "hetero_workload_preemptions",
             "hetero_workload_node_losses", "hetero_workloads_checkpointed", "hetero_attempts_archived",
             "hetero_workload_metric"),
    "governance": ("hetero_tenant_device_seconds", "hetero_tenant_cost", "hetero_tenant_quota_devices",
                   "hetero_tenant_devices_in_use", "hetero_audit_entries", "hetero_audit_head",
                   "hetero_onboarding"),
}


class PlatformMetrics(ReadsLiveCatalog):
    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, inventory: Inventory, backend,
                 clock: Clock,
                 quota_use=None):
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self.inventory = inventory
        self.backend = backend
        self.clock = clock
        self.quota_use = quota_use  # tenant -> its quota and use per flavor (the catalog service's)

    def exposition(self) -> bytes:
        """Every family, in Prometheus' text format."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Families(self.families()))
        return generate_latest(registry)

    def families(self) -> list[Metric]:
        figures = self.repository.figures()
        return [*self.resource(figures), *self.task(figures), *self.governance(figures)]

    # -- resource ----------------------------------------------------------------------------

    def resource(self, figures: dict[str, list[tuple]]) -> Iterator[Metric]:
        yield from self.node_families()
        yield from self._watermarks_and_waits(figures)

    def node_families(self) -> list[Metric]:
        """The per-node families: what each node has, what is allocated on it and what it uses where measured
        (the inventory and the active placements only; none of the store's history)."""
        nodes = self.inventory.nodes()
        allocation = self.inventory.allocation(self.repository.active_placements())
        devices = _gauge("hetero_node_devices", "Devices a node has", ["node", "flavor", "family"])
        devices_allocated = _gauge("hetero_node_devices_allocated", "Devices admitted work holds on a node "
                                   "(fractions count as such)", ["node", "flavor"])
        device_memory = _gauge("hetero_node_device_memory_bytes", "Memory of each of a node's devices",
                               ["node", "flavor"])
        cores = _gauge("hetero_node_cpu_cores", "CPU cores a node has", ["node"])
        cores_allocated = _gauge("hetero_node_cpu_cores_allocated", "CPU cores admitted work holds", ["node"])
        memory = _gauge("hetero_node_memory_bytes", "Memory a node has", ["node"])
        memory_allocated = _gauge("hetero_node_memory_allocated_bytes", "Memory admitted work holds", ["node"])
        up = _gauge("hetero_node_up", "1 while a node is ready and takes work, else 0", ["node", "state"])
        device_used = _gauge("hetero_node_device_utilisation_ratio", "Mean device utilisation, where measured "
                             "(real NVIDIA devices through NVML)", ["node"])
        cpu_used = _gauge("hetero_node_cpu_utilisation_ratio", "CPU utilisation, where measured", ["node"])
        memory_used = _gauge("hetero_node_memory_used_bytes", "Memory in use, where measured", ["node"])
        for view in nodes:
            capability, flavor = view.capability, view.flavor or ""
            held = allocation.get(view.name, {})
            family = capability.family.value if capability.family else "cpu"
            devices.add_metric([view.name, flavor, family], capability.device_count)
            devices_allocated.add_metric([view.name, flavor], held.get("device_milli", 0) / 1000)
            if capability.accelerator is not None:
                device_memory.add_metric([view.name, flavor], capability.accelerator.memory_mib * _MIB)
            cores.add_metric([view.name], capability.cpu_milli / 1000)
            cores_allocated.add_metric([view.name], held.get("cpu_milli", 0) / 1000)
            memory.add_metric([view.name], capability.memory_mib * _MIB)
            memory_allocated.add_metric([view.name], held.get("memory_mib", 0) * _MIB)
            up.add_metric([view.name, view.readiness], 1 if view.readiness == "ready" else 0)
            used = self.backend.node_utilisation(capability) if not capability.emulated else None
            if used:
                cpu_used.add_metric([view.name], used["cpu_pct"] / 100)
                memory_used.add_metric([view.name], used["memory_used_mib"] * _MIB)
                if "device_util_pct" in used:
                    device_used.add_metric([view.name], used["device_util_pct"] / 100)
        return [devices, devices_allocated, device_memory, cores, cores_allocated, memory, memory_allocated, up,
                device_used, cpu_used, memory_used]

    def _watermarks_and_waits(self, figures: dict[str, list[tuple]]) -> Iterator[Metric]:
        watermark: dict[str, float] = {}
        for _queue, _template, _tenant, placement, _request, *_times, metrics in figures["attempts"]:
            peak = (metrics or {}).get("device_memory_peak_mib")
            if peak is not None and placement:
                watermark[placement["flavor"]] = max(watermark.get(placement["flavor"], 0.0), peak)
        marks = _gauge("hetero_device_memory_watermark_bytes", "The most device memory one attempt used, per "
                       "flavor, where measured", ["flavor"])
        for flavor, peak in sorted(watermark.items()):
            marks.add_metric([flavor], peak * _MIB)
        yield marks

        waits: dict[str, list[float]] = defaultdict(list)
        for queue, _kind, _template, _tenant, _state, created, admitted, *_rest in figures["workloads"]:
            if admitted is not None:
                waits[queue].append(max(0.0, admitted - created))
        yield _histogram("hetero_queue_wait_seconds", "From submission to (the latest) admission, per queue",
                         "queue", waits, WAIT_BUCKETS_S)

    # -- task --------------------------------------------------------------------------------

    def task(self, figures: dict[str, list[tuple]]) -> Iterator[Metric]:
        submitted, states, retries, preemptions, losses, checkpointed = (Counter() for _ in range(6))
        for queue, kind, template, _tenant, state, _created, _admitted, attempts, preempted, lost, has_checkpoint \
                in figures["workloads"]:
            submitted[(queue, kind, template)] += 1
            states[(queue, state)] += 1
            retries[(queue,)] += max(0, attempts - 1)
            preemptions[(queue,)] += preempted
            losses[(queue,)] += lost
            checkpointed[(queue,)] += bool(has_checkpoint)
        outcomes, failures, archived = Counter(), Counter(), Counter()
        runs: dict[str, list[float]] = defaultdict(list)
        for queue, template, _tenant, _placement, _request, started, ended, outcome, reason, is_archived, _m \
                in figures["attempts"]:
            if ended is None:
                continue
            outcomes[(queue, outcome or "unknown")] += 1
            runs[template].append(max(0.0, ended - started))
            archived[(queue,)] += bool(is_archived)
            if outcome == "failed":
                failures[(queue, _failure(reason))] += 1
        yield _counter("hetero_workloads_submitted", "Workloads submitted", ["queue", "kind", "template"], submitted)
        yield _gauge_of("hetero_workloads", "Workloads per state now", ["queue", "state"], states)
        yield _counter("hetero_attempts", "Attempts ended, per outcome", ["queue", "outcome"], outcomes)
        yield _counter("hetero_attempt_failures", "Failed attempts, per reason", ["queue", "reason"], failures)
        yield _histogram("hetero_attempt_run_seconds", "How long ended attempts ran, per template", "template", runs,
                         RUN_BUCKETS_S)
        yield _counter("hetero_workload_retries", "Attempts after a workload's first (after failures, "
                       "preemptions, node losses)", ["queue"], retries)
        yield _counter("hetero_workload_preemptions", "Preemptions", ["queue"], preemptions)
        yield _counter("hetero_workload_node_losses", "Attempts lost with their node", ["queue"], losses)
        yield _gauge_of("hetero_workloads_checkpointed", "Workloads that wrote a checkpoint", ["queue"], checkpointed)
        yield _counter("hetero_attempts_archived", "Ended attempts whose outputs were archived", ["queue"], archived)
        yield self.workload_metrics()

    def workload_metrics(self) -> GaugeMetricFamily:
        """Each running workload's latest figure of each metric, in one read of the samples. Label values stay
        bounded: the names are the platform's measured ones and those the workload's template declares (a
        workload's other reported names are kept, and shown on its own page, but not exposed here)."""
        family = _gauge("hetero_workload_metric", "A running workload's latest figure of a metric (in the metric's "
                        "unit: see docs/governance.md)", ["workload", "tenant", "template", "name", "source"])
        running = self.repository.workloads(states=("running",))
        latest = self.repository.latest_metrics([row.id for row in running])
        declared = {template.name: {m if isinstance(m, str) else m.name for m in template.metrics}
                    for template in self.catalog.templates}
        for row in running:
            shown = declared.get(row.template, set()) | MEASURED.keys()
            for name, (figure, source) in sorted(latest.get(row.id, {}).items()):
                if name in shown:
                    family.add_metric([str(row.id), row.tenant, row.template, name, source], figure)
        return family

    # -- governance --------------------------------------------------------------------------

    def governance(self, figures: dict[str, list[tuple]]) -> Iterator[Metric]:
        now = self.clock.wall()
        prices = {flavor.name: flavor for flavor in self.catalog.flavors}
        used, cost = Counter(), Counter()
        centres = {tenant.name: tenant.cost_centre or "" for tenant in self.catalog.tenants}
        for _queue, _template, tenant, placement, request, started, ended, *_rest in figures["attempts"]:
            if not placement:
                continue
            seconds = max(0.0, (ended if ended is not None else now) - started)
            flavor = placement["flavor"]
            devices, cores = held(placement, request)
            used[(tenant, flavor)] += devices * seconds
            known = prices.get(flavor)
            if known is not None and known.price_per_hour:
                cost[(tenant, centres.get(tenant, ""), flavor)] += hourly_cost(known, devices, cores) * seconds / 3600
        yield _counter("hetero_tenant_device_seconds", "Device-seconds held by a tenant's attempts, per flavor",
                       ["tenant", "flavor"], used)
        yield _counter("hetero_tenant_cost", "Cost of a tenant's attempts at the catalog's prices (its currency)",
                       ["tenant", "cost_centre", "flavor"], cost)
        quota = _gauge("hetero_tenant_quota_devices", "A tenant's device quota per flavor (nominal)",
                       ["tenant", "flavor"])
        in_use = _gauge("hetero_tenant_devices_in_use", "Devices a tenant's admitted work holds, per flavor",
                        ["tenant", "flavor"])
        for tenant in self.catalog.tenants:
            for limit in self.quota_use(tenant) if self.quota_use else ():
                quota.add_metric([tenant.name, limit["flavor"]], limit["nominal"]["device_milli"] / 1000)
                in_use.add_metric([tenant.name, limit["flavor"]], limit["used"]["device_milli"] / 1000)
        yield quota
        yield in_use
        yield _counter("hetero_audit_entries", "Audit log entries, per outcome", ["outcome"],
                       Counter({(outcome,): count for outcome, count in figures["audit"]}))
        # The head as this server sealed it, not as the database says: a scraper's history of it is an anchor
        # outside the database, against which a truncated or rewritten log shows.
        head = self.repository.seal.head if self.repository.seal else None
        yield _gauge_of("hetero_audit_head", "The audit chain's newest entry id, labelled with its hash (HMAC)",
                        ["mac"], Counter({(head[1],): head[0]} if head else {}))
        yield _gauge_of("hetero_onboarding", "1 for each onboarding checklist, in its state (with the step it failed)",
                        ["kind", "name", "state", "failed_step"],
                        Counter({(kind, name, state, failed or ""): 1
                                 for kind, name, state, failed in figures["onboarding"]}))


class _Families:
    """A collector of families made beforehand (a registry asks it once per exposition)."""

    def __init__(self, families: list[Metric]):
        self._families = families

    def collect(self) -> list[Metric]:
        return self._families


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)


def _gauge_of(name: str, documentation: str, labels: list[str], counts: Counter) -> GaugeMetricFamily:
    family = _gauge(name, documentation, labels)
    for key, value in sorted(counts.items()):
        family.add_metric(list(key), value)
    return family


def _counter(name: str, documentation: str, labels: list[str], counts: Counter) -> CounterMetricFamily:
    family = CounterMetricFamily(name, documentation, labels=labels)
    for key, value in sorted(counts.items()):
        family.add_metric(list(key), value)
    return family


def _histogram(name: str, documentation: str, label: str, values: dict[str, list[float]],
               buckets: Iterable[float]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation, labels=[label])
    bounds = list(buckets)
    for key, observed in sorted(values.items()):
        cumulative = [(str(bound), sum(value <= bound for value in observed)) for bound in bounds]
        family.add_metric([key], [*cumulative, ("+Inf", len(observed))], sum_value=sum(observed))
    return family


def _failure(reason: str | None) -> str:
    words = (reason or "").lower()
    return next((name for pattern, name in _FAILURES if pattern in words), "other")
