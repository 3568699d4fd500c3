"""Fluent builders for engine tests: nodes, workloads, tenants, queues and snapshots; and for service
tests, work stored as the API would store it (``stored_kernel``).

    snap = snapshot(
        nodes=[node("a1").gpus(2)],
        pending=[job(1).gpus(1)],
        tenants=[tenant("vision").quota("a100-80g", devices=8)],
    )
"""

from __future__ import annotations

from dataclasses import replace
from itertools import count

from jupyter_hetero.engine import (
    Constraints,
    Decisions,
    Device,
    Engine,
    NodeState,
    Placement,
    Preemption,
    QueuePolicy,
    Request,
    Res,
    Slot,
    Snapshot,
    TenantQuota,
    VariantNeed,
    Workload,
    WorkloadKind,
)
from jupyter_hetero.platform.workloads.resolve import resolve
from jupyter_hetero.store.tables import WorkloadRow

GIB = 1024


class NodeBuilder:
    def __init__(self, name: str, flavor: str):
        self._node = NodeState(name=name, flavor=flavor, cpu=64_000, mem=512 * GIB, free_cpu=64_000, free_mem=512 * GIB,
                               family="cpu", domain=name)

    def cpu(self, cores: float) -> NodeBuilder:
        self._node.cpu = self._node.free_cpu = int(cores * 1000)
        return self

    def mem(self, gib: float) -> NodeBuilder:
        self._node.mem = self._node.free_mem = int(gib * GIB)
        return self

    def gpus(self, n: int, mem_gib: float = 80, *, family: str = "nvidia", model: str = "A100-SXM4-80GB",
             driver: str = "550.54", runtime: str = "12.4", interconnect: str = "nvlink") -> NodeBuilder:
        mem = int(mem_gib * GIB)
        self._node.devices = [Device(index=i, free_milli=1000, free_mem=mem, mem=mem) for i in range(n)]
        self._node.family, self._node.model = family, model
        self._node.driver, self._node.runtime, self._node.interconnect = driver, runtime, interconnect
        return self

    def topology(self, link_domains: list[int] | None = None, numa_nodes: list[int] | None = None) -> NodeBuilder:
        """Link domains and NUMA nodes as sizes of groups of consecutive devices: ``topology([4, 4], [4, 4])``."""
        for sizes, field in ((link_domains, "link"), (numa_nodes, "numa")):
            groups = [group for group, size in enumerate(sizes or ()) for _ in range(size)]
            for device, group in zip(self._node.devices, groups):
                setattr(device, field, group)
        return self

    def frameworks(self, *names: str) -> NodeBuilder:
        self._node.frameworks = frozenset(names)
        return self

    def engines(self, *names: str) -> NodeBuilder:
        self._node.inference_engines = frozenset(names)
        return self

    def network(self, *, rdma: bool = False, gbps: float = 10) -> NodeBuilder:
        self._node.rdma, self._node.bandwidth_gbps = rdma, gbps
        return self

    def firmware(self, version: str) -> NodeBuilder:
        self._node.firmware = version
        return self

    def link_domain(self, largest: int) -> NodeBuilder:
        """The most devices that share one fast-link domain here."""
        self._node.largest_link_domain = largest
        return self

    def labels(self, **labels: str) -> NodeBuilder:
        self._node.labels = {k.replace("_", "."): v for k, v in labels.items()}
        return self

    def domain(self, domain: str) -> NodeBuilder:
        self._node.domain = domain
        return self

    def pending_onboarding(self) -> NodeBuilder:
        self._node.schedulable = False
        return self

    def lost(self) -> NodeBuilder:
        """Gone from its source (deleted): still in the inventory, never schedulable."""
        self._node.schedulable, self._node.readiness = False, "lost"
        return self

    def cordoned(self) -> NodeBuilder:
        self._node.schedulable, self._node.readiness = False, "cordoned"
        return self

    def build(self) -> NodeState:
        return replace(self._node, devices=[replace(d) for d in self._node.devices])


def node(name: str, flavor: str = "a100-80g") -> NodeBuilder:
    return NodeBuilder(name, flavor)


class WorkloadBuilder:
    def __init__(self, wid: int, kind: WorkloadKind):
        self._id = wid
        self._kind = kind
        self._tenant, self._queue, self._user = "vision", "training", "ada"
        self._request = Request(cpu=1000, mem=GIB)
        self._flavors: tuple[str, ...] = ("a100-80g",)
        self._constraints = Constraints()
        self._submitted = 0.0
        self._placement: Placement | None = None
        self._started: float | None = None
        self._expected_end: float | None = None
        self._idle = False
        self._checkpoint: float | None = None
        self._preempting: float | None = None
        self._preempted_for: int | None = None
        self._runtime = 3600.0
        self._escalated = False
        self._preempted_at: tuple[float, ...] = ()

    def tenant(self, name: str) -> WorkloadBuilder:
        self._tenant = name
        return self

    def queue(self, name: str) -> WorkloadBuilder:
        self._queue = name
        return self

    def gpus(self, n: int, mem_gib: float = 0) -> WorkloadBuilder:
        self._request = replace(self._request, devices=n, device_milli=0, device_mem=int(mem_gib * GIB))
        return self

    def fraction(self, milli: int, mem_gib: float = 0) -> WorkloadBuilder:
        self._request = replace(self._request, devices=0, device_milli=milli, device_mem=int(mem_gib * GIB))
        return self

    def cpu(self, cores: float) -> WorkloadBuilder:
        self._request = replace(self._request, cpu=int(cores * 1000))
        return self

    def mem(self, gib: float) -> WorkloadBuilder:
        self._request = replace(self._request, mem=int(gib * GIB))
        return self

    def replicas(self, n: int, placement: str = "any") -> WorkloadBuilder:
        self._request = replace(self._request, replicas=n, placement=placement)
        return self

    def flavors(self, *names: str) -> WorkloadBuilder:
        self._flavors = names
        return self

    def needs(self, *, min_driver: str | None = None, min_runtime: str | None = None, min_firmware: str | None = None,
              requires: tuple[str, ...] = (), family: str = "nvidia", frameworks: tuple[str, ...] = (),
              inference_engines: tuple[str, ...] = (), rdma: bool = False, min_bandwidth_gbps: float = 0,
              interconnect: tuple[str, ...] = (), labels: tuple = ()) -> WorkloadBuilder:
        variant = VariantNeed(family, min_driver, min_runtime, min_firmware=min_firmware, requires=requires)
        variants = (variant,) if (min_driver or min_runtime or min_firmware or requires) else ()
        self._constraints = Constraints(labels=labels, frameworks=frameworks, interconnect=interconnect, variants=variants,
                                        inference_engines=inference_engines, rdma=rdma,
                                        min_bandwidth_gbps=min_bandwidth_gbps)
        return self

    def submitted(self, at: float) -> WorkloadBuilder:
        self._submitted = at
        return self

    def escalated(self) -> WorkloadBuilder:
        self._escalated = True
        return self

    def runtime(self, seconds: float) -> WorkloadBuilder:
        self._runtime = seconds
        return self

    def idle(self, idle: bool = True) -> WorkloadBuilder:
        self._idle = idle
        return self

    def checkpoint(self, at: float) -> WorkloadBuilder:
        self._checkpoint = at
        return self

    def preempted(self, *times: float) -> WorkloadBuilder:
        """Chosen as a victim at these snapshot times before (what damping counts)."""
        self._preempted_at = tuple(times)
        return self

    def preempting(self, until: float, for_workload: int | None = None) -> WorkloadBuilder:
        self._preempting, self._preempted_for = until, for_workload
        return self

    def on(self, node_name: str, *devices: int, flavor: str | None = None, milli: int = 1000, dev_mem_gib: float = 0,
           started: float = 0.0, ends: float | None = None, on_reservation: bool = False,
           borrowing: bool = False) -> WorkloadBuilder:
        """Running on ``node_name`` with these device indexes (one slot; see :meth:`slots` for gangs)."""
        mem = int(dev_mem_gib * GIB)
        slot = Slot(node_name, tuple((d, milli, mem) for d in devices))
        return self.slots(slot, flavor=flavor, started=started, ends=ends, on_reservation=on_reservation, borrowing=borrowing)

    def slots(self, *slots: Slot, flavor: str | None = None, started: float = 0.0, ends: float | None = None,
              on_reservation: bool = False, borrowing: bool = False) -> WorkloadBuilder:
        self._placement = Placement(flavor or self._flavors[0], tuple(slots), on_reservation, borrowing)
        self._started, self._expected_end = started, ends
        return self

    def build(self) -> Workload:
        return Workload(
            id=self._id, tenant=self._tenant, queue=self._queue, request=self._request, flavors=self._flavors,
            submitted_at=self._submitted, kind=self._kind, constraints=self._constraints, user=self._user,
            placement=self._placement, started_at=self._started, expected_end=self._expected_end, idle=self._idle,
            checkpoint_at=self._checkpoint, preempting_until=self._preempting, preempted_for=self._preempted_for, runtime_s=self._runtime,
            escalated=self._escalated, preempted_at=self._preempted_at,
        )


def job(wid: int) -> WorkloadBuilder:
    return WorkloadBuilder(wid, WorkloadKind.JOB)


def kernel(wid: int) -> WorkloadBuilder:
    return WorkloadBuilder(wid, WorkloadKind.KERNEL).queue("experiment")


def server(wid: int) -> WorkloadBuilder:
    """A hub user's server, interactive like a kernel."""
    return WorkloadBuilder(wid, WorkloadKind.SERVER).queue("experiment")


class TenantBuilder:
    def __init__(self, name: str):
        self._name, self._cohort, self._weight = name, "default", 1.0
        self._nominal: dict[str, Res] = {}
        self._borrowing: dict[str, Res | None] = {}
        self._lending: dict[str, Res | None] = {}

    def quota(self, flavor: str, *, devices: float = 0, cpu: float = 1000, mem_gib: float = 100_000,
              borrowing: float | None = None, lending: float | None = None) -> TenantBuilder:
        """Quota in devices (CPU and memory generous unless given); borrowing/lending in devices."""
        self._nominal[flavor] = Res(int(cpu * 1000), int(mem_gib * GIB), int(devices * 1000))
        big = 1 << 40
        self._borrowing[flavor] = None if borrowing is None else Res(big, big, int(borrowing * 1000))
        self._lending[flavor] = None if lending is None else Res(big, big, int(lending * 1000))
        return self

    def cohort(self, name: str) -> TenantBuilder:
        self._cohort = name
        return self

    def weight(self, weight: float) -> TenantBuilder:
        self._weight = weight
        return self

    def build(self) -> TenantQuota:
        return TenantQuota(self._name, self._cohort, self._weight, dict(self._nominal), dict(self._borrowing),
                           dict(self._lending))


def tenant(name: str) -> TenantBuilder:
    return TenantBuilder(name)


def queues(**overrides: dict) -> dict[str, QueuePolicy]:
    """The default catalog's five queues as engine policies; ``overrides`` patch fields per queue."""
    base = {
        "urgent": QueuePolicy("urgent", 1000, 300, "notify", may_preempt=frozenset({"experiment", "batch", "training"}),
                              grace_s=60),
        "inference": QueuePolicy("inference", 800, 600, "allow-preemption", may_preempt=frozenset({"experiment", "batch"}),
                                 grace_s=30, reserved={"t4": 1}),
        "training": QueuePolicy("training", 300, 7200, "allow-borrowing", may_preempt=frozenset({"batch"}),
                                preemptible=True, grace_s=120, can_borrow=False),
        "experiment": QueuePolicy("experiment", 200, 1800, "raise-priority", priority_boost=150, preemptible=True,
                                  idle_kernels_only=True, grace_s=60),
        "batch": QueuePolicy("batch", 100, 86400, "raise-priority", priority_boost=100, preemptible=True, grace_s=30),
    }
    for name, fields in overrides.items():
        base[name] = replace(base[name], **fields)
    return base


def snapshot(*, now: float = 1000.0, nodes=(), running=(), pending=(), tenants=(), queue_policies=None) -> Snapshot:
    return Snapshot(
        now=now,
        nodes=[n.build() if hasattr(n, "build") else n for n in nodes],
        queues=queue_policies or queues(),
        tenants={t.build().tenant: t.build() for t in tenants},
        running=[w.build() if hasattr(w, "build") else w for w in running],
        pending=[w.build() if hasattr(w, "build") else w for w in pending],
    )


# -- the workload service, played between engine cycles ------------------------------------------


class ServiceLoop:
    """Plays the workload service around engine cycles, on a clock the test advances.

        loop = ServiceLoop(Engine(), snapshot(now=0, nodes=[node("a1").gpus(4)], tenants=[...]))
        loop.submit(job(1).gpus(4))
        loop.tick(60)            # 60 s pass, then one cycle runs and is applied

    As the service does: work past its expected end succeeds; a victim past its grace leaves and is
    requeued, the time it was chosen kept in ``preempted_at``; lost work is requeued; admissions
    start at once; escalations are remembered.
    """

    def __init__(self, engine: Engine, snap: Snapshot):
        self.engine, self.now = engine, snap.now
        self.nodes, self.queues, self.tenants = list(snap.nodes), snap.queues, dict(snap.tenants)
        self.running: dict[int, Workload] = {w.id: w for w in snap.running}
        self.pending: dict[int, Workload] = {w.id: w for w in snap.pending}
        self.ended: dict[int, str] = {}  # workload -> succeeded | failed | cancelled
        self.preemptions: list[tuple[float, Preemption]] = []
        self.starts: dict[int, list[float]] = {}
        self.seen: Snapshot | None = None  # what the last cycle looked at
        self.last: Decisions | None = None  # and what it decided

    def submit(self, *workloads) -> None:
        for workload in workloads:
            built = workload.build() if hasattr(workload, "build") else workload
            self.pending[built.id] = replace(built, submitted_at=self.now)

    def snapshot(self) -> Snapshot:
        return Snapshot(self.now, list(self.nodes), self.queues, dict(self.tenants),
                        [self.running[i] for i in sorted(self.running)], [self.pending[i] for i in sorted(self.pending)])

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for workload in [self.running[i] for i in sorted(self.running)]:
            if workload.preempting_until is not None and workload.preempting_until <= self.now:
                self.requeue(workload.id)
            elif workload.expected_end is not None and workload.expected_end <= self.now:
                self.end(workload.id, "succeeded")

    def cycle(self) -> Decisions:
        self.seen = self.snapshot()
        decisions = self.last = self.engine.cycle(self.seen)
        for lost in decisions.lost:
            self.requeue(lost.workload)
        for escalation in decisions.escalations:
            self.pending[escalation.workload] = replace(self.pending[escalation.workload], escalated=True,
                                                        priority_boost=escalation.priority_boost)
        for preemption in decisions.preemptions:
            victim = self.running[preemption.victim]
            self.running[victim.id] = replace(victim, preempting_until=preemption.grace_deadline,
                                              preempted_for=preemption.preemptor,
                                              preempted_at=(*victim.preempted_at, self.now))
            self.preemptions.append((self.now, preemption))
        for admission in decisions.admissions:
            workload = self.pending.pop(admission.workload)
            self.running[workload.id] = replace(workload, placement=admission.placement, started_at=self.now,
                                                expected_end=self.now + workload.runtime_s)
            self.starts.setdefault(workload.id, []).append(self.now)
        return decisions

    def tick(self, seconds: float) -> Decisions:
        self.advance(seconds)
        return self.cycle()

    def requeue(self, wid: int) -> None:
        workload = self.running.pop(wid)
        self.pending[wid] = replace(workload, placement=None, started_at=None, expected_end=None,
                                    preempting_until=None, preempted_for=None, idle=False)

    def end(self, wid: int, how: str) -> None:
        self.running.pop(wid, None)
        self.pending.pop(wid, None)
        self.ended[wid] = how


_ids = count(1000)


def next_id() -> int:
    return next(_ids)


# -- catalogs for server tests -----------------------------------------------------------------

TOKENS = {"alice-token": "alice", "carol-token": "carol", "bob-token": {"name": "bob", "groups": ["nlp-team"]},
          "root-token": "root"}


def team_catalog(path, *, vision_a100: int = 1, nlp_a100: int = 1, queues: dict | None = None,
                 templates: dict | None = None, **tenant_changes) -> str:
    """The default catalog with two small tenants: vision (alice; carol is its admin) and nlp (group
    nlp-team, which bob is in), one A100 each unless said otherwise; root is a platform admin."""
    import yaml

    from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH

    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    generous = {"nominal": {"cpu": 64, "memory": "512Gi"}}
    data["tenants"] = [
        {"name": "vision", "display": {"en": "Vision", "zh": "视觉"}, "users": ["alice", "carol"], "admins": ["carol"],
         "cohort": "vision", "cost_centre": "CC-1",
         "quotas": {"a100-80g": {"nominal": {"devices": vision_a100, "cpu": 128, "memory": "1Ti"},
                                 "borrowing_limit": {"devices": 0}},
                    "cpu-standard": generous, "t4": {"nominal": {"devices": 1, "cpu": 16, "memory": "64Gi"}}}},
        {"name": "nlp", "display": {"en": "NLP", "zh": "自然语言"}, "groups": ["nlp-team"], "cohort": "nlp",
         "cost_centre": "CC-2",
         "quotas": {"a100-80g": {"nominal": {"devices": nlp_a100, "cpu": 128, "memory": "1Ti"}},
                    "cpu-standard": generous}},
    ]
    for tenant in data["tenants"]:
        tenant.update(tenant_changes.get(tenant["name"], {}))
    for queue in data["queues"]:
        for key, value in (queues or {}).get(queue["name"], {}).items():
            queue[key] = {**queue.get(key, {}), **value} if isinstance(value, dict) else value
    for template in data["templates"]:
        template.update((templates or {}).get(template["name"], {}))
    data["default_tenant"] = None
    data["platform_admins"] = ["root"]
    target = path / "team-catalog.yaml"
    target.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return str(target)


def demo_nodes_file(path, *, without: str | None = None, devices: dict[str, int] | None = None,
                    copies: dict[str, tuple[str, int]] | None = None):
    """The demo's emulated nodes file, changed: less the node ``without``, ``devices`` as new device
    counts per node, and ``copies`` as new nodes ``{name: (node copied, device count)}``; written to ``path``."""
    import copy
    from pathlib import Path

    import yaml

    demo = Path(__file__).resolve().parent.parent / "binder" / "demo-nodes.yaml"
    data = yaml.safe_load(demo.read_text(encoding="utf-8"))
    data["nodes"] = [node for node in data["nodes"] if node["name"] != without]
    for node in data["nodes"]:
        if node["name"] in (devices or {}):
            node["accelerator"]["count"] = devices[node["name"]]
    for name, (source, number) in (copies or {}).items():
        clone = copy.deepcopy(next(node for node in data["nodes"] if node["name"] == source))
        clone["name"], clone["accelerator"]["count"] = name, number
        data["nodes"].append(clone)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def stored_kernel(scheduler, name: str = "k", template: str = "data-preprocessing", *, after: tuple = (),
                  **parameters):
    """A queued kernel workload of ``template`` with ``parameters``, stored as a submission would be;
    ``after``: (workload, condition) pairs it waits for, as a job's submission stores them."""
    found = scheduler.catalog.template(template)
    resolved = resolve(found, parameters, scheduler.catalog)
    spec = {"payload": "kernel", "env": {}}
    if after:
        spec["after"] = [{"workload": workload, "condition": condition} for workload, condition in after]
    return scheduler.repository.add_workload(WorkloadRow(
        kind="kernel", name=name, tenant="default", user="ada", template=found.name, queue=found.queue,
        request=resolved.to_json(), spec=spec, state="queued", held_cpu_milli=0,
        held_memory_mib=0, held_device_milli=0, attempts=0, time_limit_s=resolved.time_limit_s,
    ), reason="submitted")


def stored_array(scheduler, text: str, *, name: str | None = None, template: str = "data-preprocessing",
                 after: tuple = (), **parameters) -> list[WorkloadRow]:
    """An array's tasks (Slurm's syntax: ``"0-4%2"``), queued kernels of ``template`` stored in one write as a
    submission with ``array`` stores them, by index; ``after`` as ``stored_kernel``'s."""
    from jupyter_hetero.catalog import WorkloadKind as Kind
    from jupyter_hetero.platform.workloads.arrays import parse_array
    from jupyter_hetero.platform.workloads.enqueue import Checked, Enqueuer

    found = scheduler.catalog.template(template)
    checked = Checked(Kind.KERNEL, found, found.queue, resolve(found, parameters, scheduler.catalog), "ada", "default")
    spec = {"payload": "kernel", "env": {}}
    if after:
        spec["after"] = [{"workload": workload, "condition": condition} for workload, condition in after]
    enqueuer = Enqueuer(catalog=scheduler.catalog, repository=scheduler.repository, access=None, wake=lambda: None)
    first = enqueuer.enqueue_array(checked, parse_array(text, max_tasks=10_000), name=name, spec=spec,
                                   reason="submitted", data={})
    return sorted(scheduler.repository.workloads(array=first.id), key=lambda row: row.spec["array"]["index"])
