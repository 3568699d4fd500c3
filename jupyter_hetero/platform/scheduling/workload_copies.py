"""The scheduler's local copies of what it schedules, kept in line with the store at the cost of
what changed, not of the fleet: the workloads' copies and a cache of node states.

    workloads = WorkloadCopies(repository, ("queued", "preempted", *ACTIVE_STATES), convert)
    workloads.sync()               # lists once, then reads only the rows changed since the last sync
    template, constraints = templates.resolve(catalog, row.template, families)   # looked up once per catalog
    for row, workload in workloads.entries(): ...
    replaced, changed, gone = workloads.take_changes()   # what changed since the last take (the engine process's delta)

Like a client-go informer: list, then follow the change feed (the store's events) from the list's
cursor, with a periodic relist as the safety net against a write that forgot its event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ...catalog import Catalog, Template
from ...engine import Constraints, NodeState, Workload
from ...engine_inputs import NodeView, constraints_for
from ...store import Repository
from ...store.tables import WorkloadRow

__all__ = ["NodeStates", "TemplateLookups", "WorkloadCopies"]

# Seconds between full relists of the workloads; the change feed carries everything in between.
RELIST_S = 300.0


class WorkloadCopies:
    """Stored workloads in ``states``, each with its engine form, refreshed from the change feed.

    ``convert`` turns a row into the engine's :class:`Workload`; it must depend on the row (and
    fixed configuration) only, since a row that does not change is not converted again."""

    def __init__(self, repository: Repository, states: tuple[str, ...],
                 convert: Callable[[WorkloadRow], Workload], *, relist_s: float = RELIST_S,
                 track_changes: bool = False):
        self.repository = repository
        self.states = frozenset(states)
        self.convert = convert
        self.relist_s = relist_s
        self._entries: dict[int, tuple[WorkloadRow, Workload]] = {}
        self._cursor: int | None = None
        # Since the last take_changes() (when someone takes them): ids re-read (changed, added or
        # gone), or everything after a relist.
        self.track_changes = track_changes
        self._changed: set[int] = set()
        self._replaced = True
        self._listed_at = 0.0
        # The tick's thread and request handlers (dry runs) both sync; one at a time.
        self._lock = threading.Lock()

    def sync(self) -> int:
        """Bring the copies up to date with the store; returns how many rows were read."""
        with self._lock:
            relist = self._cursor is None or time.monotonic() - self._listed_at >= self.relist_s
            cursor, rows = self.repository.workload_changes(None if relist else self._cursor, tuple(self.states))
            if relist:
                self._entries = {}
                self._listed_at = time.monotonic()
                self._replaced = True
            newest = max(self._entries, default=0)
            ordered = True
            if self.track_changes and not self._replaced:
                self._changed.update(row.id for row in rows)
            for row in rows:
                if row.state in self.states:
                    ordered = ordered and (row.id in self._entries or row.id > newest)
                    self._entries[row.id] = (row, self.convert(row))
                else:
                    self._entries.pop(row.id, None)
            if not ordered:  # a workload came back (lost -> queued): keep submission order by id
                self._entries = dict(sorted(self._entries.items()))
            self._cursor = cursor
            return len(rows)

    def relist(self) -> None:
        """Convert every row again at the next sync (what ``convert`` reads changed: a reloaded catalog)."""
        with self._lock:
            self._cursor = None

    def touch(self, ids) -> None:
        """Count these copies as changed at the next take: what the taker derives from them changed, not their
        rows (a dependency's hold, lifted or placed)."""
        with self._lock:
            if self.track_changes and not self._replaced:
                self._changed.update(i for i in ids if i in self._entries)

    def entries(self) -> list[tuple[WorkloadRow, Workload]]:
        """Every copy as of the last sync, ordered by workload id."""
        with self._lock:
            return list(self._entries.values())

    def row(self, workload_id: int) -> WorkloadRow | None:
        """The copy of one workload's row as of the last sync (None when it is not scheduled)."""
        with self._lock:
            entry = self._entries.get(workload_id)
            return entry[0] if entry is not None else None

    def take_changes(self, *, everything: bool = False) -> tuple[bool, list[tuple[WorkloadRow, Workload]], list[int]]:
        """``(replaced, changed, gone)`` since the last take: with ``replaced`` (after a relist, or
        ``everything`` asked for) ``changed`` is every copy; else the copies re-read since, and the ids
        of workloads that left the scheduled states. One taker: what it took is not returned again."""
        with self._lock:
            replaced = everything or self._replaced
            if replaced:
                changed, gone = list(self._entries.values()), []
            else:
                changed = [self._entries[i] for i in sorted(self._changed) if i in self._entries]
                gone = [i for i in sorted(self._changed) if i not in self._entries]
            self._changed, self._replaced = set(), False
            return replaced, changed, gone


class TemplateLookups:
    """Each template the copies' workloads name, looked up in the catalog and turned into the engine's
    constraints once per catalog: a row is re-read after every write to it (each admission, start, stop),
    and its template does not change with it. A template is kept per name and runtime families, so what it
    keeps is bounded by the catalog, not the fleet."""

    def __init__(self):
        self._catalog: Catalog | None = None
        self._resolved: dict[tuple[str, tuple[str, ...]], tuple[Template | None, Constraints]] = {}

    def resolve(self, catalog: Catalog, name: str, families: tuple[str, ...]) -> tuple[Template | None, Constraints]:
        """The template ``name`` of ``catalog`` (None when it has none) and its constraints for ``families``."""
        if catalog is not self._catalog:  # another catalog: nothing resolved against the last one holds
            self._catalog, self._resolved = catalog, {}
        key = (name, families)
        resolved = self._resolved.get(key)
        if resolved is None:
            template = catalog.template(name)
            resolved = self._resolved[key] = (
                template, constraints_for(template, families) if template is not None else Constraints())
        return resolved


class NodeStates:
    """The engine's node states per inventory view, rebuilt only for views that changed."""

    def __init__(self, convert: Callable[[NodeView], NodeState]):
        self.convert = convert
        self._views: list[NodeView] = []
        self._states: list[NodeState] = []
        self._by_name: dict[str, tuple[NodeView, NodeState]] = {}
        self._lock = threading.Lock()
        self.version = 0  # changes whenever of() returns a different list of states

    def of(self, views: list[NodeView]) -> list[NodeState]:
        """States for ``views``; the same list while the views are the same objects."""
        with self._lock:
            if len(views) == len(self._views) and all(a is b for a, b in zip(views, self._views)):
                return list(self._states)
            by_name = {}
            for view in views:
                known = self._by_name.get(view.name)
                by_name[view.name] = known if known and known[0] is view else (view, self.convert(view))
            self._by_name, self._views = by_name, list(views)
            self._states = [state for _view, state in by_name.values()]
            self.version += 1
            return list(self._states)
