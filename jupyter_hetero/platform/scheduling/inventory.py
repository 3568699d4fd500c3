"""The inventory: nodes discovered here or declared as emulated, mapped to flavors and stored."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...capability import Held, NodeCapability
from ...catalog import Catalog
from ...engine_inputs import NodeView
from ...store import Repository
from ..live_catalog import LiveCatalog, ReadsLiveCatalog

__all__ = ["Inventory"]

NOTHING_HELD = Held()


class Inventory(ReadsLiveCatalog):
    """Keeps the store's node table in line with what the backends report."""

    def __init__(self, catalog: Catalog | LiveCatalog, repository: Repository):
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self._nodes: dict[str, NodeView] = {}
        # Whether a node has passed onboarding (or needs none); the onboarding service sets it.
        self.onboarded: Callable[[NodeCapability], bool] = lambda capability: True
        # Bumped on every change, so the scheduler re-checks running placements only when one happened.
        self.version = 0

    def refresh(self, capabilities: list[NodeCapability], states: dict[str, str] | None = None,
                held: dict[str, Held] | None = None) -> list[NodeView]:
        """Record these nodes as seen now; new ones get a `node-registered` event. ``states``: each node's
        state as its source reports it (a cluster's Ready, cordoned), recorded when it changes;
        ``held``: what others hold of each node (not stored: the source says it again after a restart).

        Only new and changed nodes are written: a cluster's 5,000 nodes cost the few that changed."""
        known: dict | None = None  # the stored rows, read once the first node this inventory lacks shows up
        states, held = states or {}, held or {}
        views: dict[str, NodeView] = {}
        writes, events, changed = [], [], []
        for capability in capabilities:
            name = capability.name
            view = self._nodes.get(name)
            state = states.get(name)
            others = held.get(name, NOTHING_HELD)
            same = view is not None and (view.capability is capability or view.capability == capability)
            if same and state in (None, view.state):
                views[name] = view if view.held == others else replace(view, held=others)
                continue
            if view is None and known is None:
                known = {row.name: row for row in self.repository.nodes()}
            row = known.get(name) if view is None else None
            was = view.state if view is not None else (row.state if row is not None else None)
            flavor = self.catalog.flavor_of(capability)
            writes.append({"name": name, "source": capability.source, "emulated": capability.emulated,
                           "flavor": flavor.name if flavor else None, "capability": capability.model_dump(mode="json"),
                           "state": state})
            if was is None:
                events.append({"type": "node-registered", "node": name, "data": {"emulated": capability.emulated},
                               "reason": f"{capability.source} node mapped to flavor {flavor.name if flavor else 'none'}"})
            if state is not None and state != (was or "ready"):
                events.append({"type": f"node-{state}", "node": name,
                               "reason": f"{capability.source} reports the node {state}"})
            changed.append((capability, others))
        written = self.repository.record_nodes(writes, events) if writes else {}
        for capability, others in changed:
            row = written[capability.name]
            views[capability.name] = NodeView(capability=capability, flavor=row.flavor, state=row.state,
                                              first_seen=row.first_seen, last_seen=row.last_seen, held=others,
                                              onboarded=self.onboarded(capability))
        self._nodes = views
        self.version += 1
        return self.nodes()

    def remap_flavors(self) -> list[str]:
        """Each node's flavor again, by the current catalog's selectors (a reload changed them); the nodes whose
        flavor changed, each with a ``node-flavor-changed`` event."""
        writes, events = [], []
        for view in self._nodes.values():
            flavor = self.catalog.flavor_of(view.capability)
            name = flavor.name if flavor else None
            if name != view.flavor:
                writes.append({"name": view.capability.name, "source": view.capability.source,
                               "emulated": view.capability.emulated, "flavor": name,
                               "capability": view.capability.model_dump(mode="json")})
                events.append({"type": "node-flavor-changed", "node": view.capability.name,
                               "data": {"before": view.flavor, "after": name},
                               "reason": f"the catalog's reload maps the node to flavor {name or 'none'} "
                                         f"(was {view.flavor or 'none'})"})
        if writes:
            self.repository.record_nodes(writes, events)
            for write in writes:
                self._nodes[write["name"]] = replace(self._nodes[write["name"]], flavor=write["flavor"])
            self.version += 1
        return [write["name"] for write in writes]

    def refresh_onboarded(self) -> None:
        """Ask again of every node whether it is onboarded (the rules changed)."""
        for name, view in list(self._nodes.items()):
            self.set_onboarded(name, self.onboarded(view.capability))

    def set_onboarded(self, name: str, onboarded: bool) -> NodeView | None:
        """A node passed onboarding (it may take work now) or must pass it again."""
        view = self._nodes.get(name)
        if view is None or view.onboarded == onboarded:
            return view
        self._nodes[name] = replace(view, onboarded=onboarded)
        self.version += 1
        return self._nodes[name]

    def mark_lost(self, name: str, reason: str) -> NodeView:
        """Take a node out of scheduling; work on it is stopped and handled by its queue's policy."""
        view = self._nodes[name]
        self.repository.set_node_state(name, "lost")
        self.repository.append_event(type="node-lost", node=name, reason=reason)
        self._nodes[name] = replace(view, state="lost")
        self.version += 1
        return self._nodes[name]

    def allocated(self) -> dict[str, dict[str, Any]]:
        """Per node, what the admitted work stored now holds there (see :meth:`allocation`)."""
        return self.allocation(self.repository.active_placements())

    @staticmethod
    def allocation(placements) -> dict[str, dict[str, Any]]:
        """Per node, what admitted work holds there: CPU, memory, device milli and which devices."""
        result: dict[str, dict[str, Any]] = {}
        for _kind, request, placement in placements:
            per_replica = request["request"]
            for slot in placement["slots"]:
                node = result.setdefault(slot["node"], {"cpu_milli": 0, "memory_mib": 0, "device_milli": 0,
                                                        "devices": [], "workloads": 0})
                node["cpu_milli"] += per_replica["cpu_milli"]
                node["memory_mib"] += per_replica["memory_mib"]
                node["workloads"] += 1
                for device in slot["devices"]:
                    node["device_milli"] += device["milli"]
                    node["devices"].append({"index": device["index"], "milli": device["milli"]})
        return result

    def nodes(self) -> list[NodeView]:
        return list(self._nodes.values())

    def node(self, name: str) -> NodeView | None:
        return self._nodes.get(name)
