"""The engine process's copy of what the scheduler schedules, kept current by deltas, so that each
cycle ships only what changed since the last one, not the fleet.

    mirror = SnapshotMirror()
    mirror.apply(SnapshotDelta(replace_workloads=True, nodes=nodes, queues=queues, tenants=tenants,
                               workloads=[MirroredWorkload(workload, running=False, not_before=None)]))
    mirror.apply(SnapshotDelta(workloads=[changed], gone=[7]))
    engine.cycle(mirror.snapshot(now))   # the snapshot the scheduler's own _snapshot(now) would build

No I/O here and nothing heavier than the engine is imported: this module is loaded in the child.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...engine import NodeState, QueuePolicy, Snapshot, TenantQuota, Workload

__all__ = ["MirroredWorkload", "SnapshotDelta", "SnapshotMirror"]


@dataclass(frozen=True, slots=True)
class MirroredWorkload:
    """A scheduled workload as the engine form and the two facts the snapshot sorts it by."""

    workload: Workload
    running: bool  # holds capacity (admitted, starting, running); else it waits
    not_before: float | None = None  # a waiting workload is no candidate before this (scheduler time)


@dataclass(slots=True)
class SnapshotDelta:
    """What changed since the last delta the mirror applied; ``None`` leaves that part as it was."""

    replace_workloads: bool = False  # ``workloads`` is every scheduled workload (a relist or a fresh child)
    workloads: list[MirroredWorkload] = field(default_factory=list)  # added or changed
    gone: list[int] = field(default_factory=list)  # no longer scheduled (ended, cancelled, deleted)
    nodes: list[NodeState] | None = None  # the whole inventory, sent only when it changed
    queues: dict[str, QueuePolicy] | None = None
    tenants: dict[str, TenantQuota] | None = None

    @property
    def size(self) -> int:
        """How many workloads and nodes it carries: what pickling it costs."""
        return len(self.workloads) + len(self.gone) + len(self.nodes or ())


class SnapshotMirror:
    """Nodes, queues, tenants and scheduled workloads (ordered by id, as the scheduler keeps them)."""

    def __init__(self) -> None:
        self.nodes: list[NodeState] = []
        self.queues: dict[str, QueuePolicy] = {}
        self.tenants: dict[str, TenantQuota] = {}
        self._workloads: dict[int, MirroredWorkload] = {}

    def __len__(self) -> int:
        return len(self._workloads)

    def apply(self, delta: SnapshotDelta) -> None:
        if delta.nodes is not None:
            self.nodes = list(delta.nodes)
        if delta.queues is not None:
            self.queues = dict(delta.queues)
        if delta.tenants is not None:
            self.tenants = dict(delta.tenants)
        if delta.replace_workloads:
            self._workloads = {}
        for workload_id in delta.gone:
            self._workloads.pop(workload_id, None)
        self._upsert(delta.workloads)

    def _upsert(self, entries: Iterable[MirroredWorkload]) -> None:
        known = self._workloads
        newest = max(known, default=0)
        ordered = True
        for entry in entries:
            workload_id = entry.workload.id
            if workload_id not in known:
                ordered = ordered and workload_id > newest
                newest = max(newest, workload_id)
            known[workload_id] = entry
        if not ordered:  # a workload came back (lost -> queued) or arrived out of order: keep id order
            self._workloads = dict(sorted(known.items()))

    def snapshot(self, now: float, extra_pending: Iterable[Workload] = ()) -> Snapshot:
        """The complete snapshot for a cycle at ``now``, plus hypothetical waiting workloads (dry runs)."""
        running, pending = [], []
        for entry in self._workloads.values():
            if entry.running:
                running.append(entry.workload)
            elif entry.not_before is None or entry.not_before <= now:
                pending.append(entry.workload)
        return Snapshot(now=now, nodes=list(self.nodes), queues=self.queues, tenants=self.tenants,
                        running=running, pending=pending + list(extra_pending))
