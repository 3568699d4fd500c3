"""Nodes as seen by the backends, and the onboarding checklists of nodes and other subjects."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from .sessions import Sessions
from .tables import EventRow, NodeRow, OnboardingRow

__all__ = ["NodeRecords"]


class NodeRecords(Sessions):
    """The repository's nodes and onboarding; each method is one transaction."""

    def record_nodes(self, nodes: list[dict[str, Any]], events: list[dict[str, Any]]) -> dict[str, NodeRow]:
        """Record many nodes as seen now, and their events, in one transaction (a cluster's nodes change by the
        thousand when a labeller restarts). Each node: ``name``, ``source``, ``emulated``, ``flavor``,
        ``capability`` and, where its source says, ``state``; a known node keeps its state otherwise."""
        now = self.clock()
        written = {}
        with self.session(write=True) as session:
            for node in nodes:
                row = session.get(NodeRow, node["name"])
                if row is None:
                    row = NodeRow(name=node["name"], first_seen=now, state=node.get("state") or "ready")
                    session.add(row)
                row.source, row.emulated, row.flavor = node["source"], node["emulated"], node["flavor"]
                row.capability, row.last_seen = node["capability"], now
                if node.get("state"):
                    row.state = node["state"]
                written[row.name] = row
            session.add_all(EventRow(workload_id=None, node=event["node"], at=now, type=event["type"],
                                     reason=event["reason"], data=event.get("data") or {}) for event in events)
        return written

    def nodes(self) -> list[NodeRow]:
        with self.session() as session:
            return list(session.scalars(select(NodeRow).order_by(NodeRow.name)))

    def set_node_state(self, name: str, state: str) -> NodeRow | None:
        with self.session(write=True) as session:
            row = session.get(NodeRow, name)
            if row is not None:
                row.state = state
            return row

    def onboarding(self, kind: str | None = None) -> list[OnboardingRow]:
        query = select(OnboardingRow).order_by(OnboardingRow.kind, OnboardingRow.name)
        if kind is not None:
            query = query.where(OnboardingRow.kind == kind)
        with self.session() as session:
            return list(session.scalars(query))

    def record_onboarding(self, kind: str, name: str, *, state: str, steps: list[dict[str, Any]],
                          failed_step: str | None, by: str) -> OnboardingRow:
        """Write a subject's checklist as it stands (one row per subject), with an event for each state it reaches."""
        now = self.clock()
        with self.session(write=True) as session:
            row = session.scalar(select(OnboardingRow).where(OnboardingRow.kind == kind, OnboardingRow.name == name))
            if row is None:
                row = OnboardingRow(kind=kind, name=name)
                session.add(row)
            changed = row.state != state
            row.state, row.steps, row.failed_step, row.by, row.updated_at = state, steps, failed_step, by, now
            if changed:
                reason = f"{kind} {name} {state}" + (f" at step {failed_step}" if failed_step else "")
                session.add(EventRow(at=now, type=f"onboarding-{state}", node=name if kind == "node" else None,
                                     reason=reason, data={"kind": kind, "name": name}))
            return row
