"""The cluster's nodes as the engine's inventory, and the nodes whose device exporters are read."""

from __future__ import annotations

import logging

from ...capability import NodeCapability
from ..base import NodesSeen
from .nodes import pod_requests, read_node
from .pod_lifecycle import PodLifecycle
from .pods import pod_state
from .telemetry import VENDOR_OF, NodeTarget

__all__ = ["NodeInventory", "node_readiness"]

log = logging.getLogger(__name__)


class NodeInventory(PodLifecycle):
    """Nodes read into capability records and states, again only for what changed."""

    _nodes_seen: tuple[int, int, frozenset[int]] | None
    _readings: dict[str, tuple[dict, object, object]]  # node -> (object, foreign requests, reading)
    findings: dict[str, tuple[str, ...]]  # node -> what reading it found

    def poll_nodes(self, placed_servers: frozenset[int] = frozenset()) -> NodesSeen | None:
        """The nodes as capability records, their states (ready, cordoned, lost) and what pods we
        did not place hold of them, when any of it changed since the last call; None otherwise. The pods of the
        hub servers in ``placed_servers`` (their workloads hold a placement) are not others': the engine counts
        them as those workloads."""
        if self._unanswered:
            self._delete_unanswered()
        left_out = self.reflector.placed_servers_seen(placed_servers)
        seen = (self.reflector.nodes.version, self.reflector.foreign.version, left_out)
        if seen == self._nodes_seen:
            return None
        self._nodes_seen = seen
        foreign = self.reflector.requests_by_node(left_out)
        capabilities, states, held, findings = [], {}, {}, {}
        readings = {}
        for node in self.reflector.nodes.items().values():
            others = foreign.get(node["metadata"]["name"], _NO_REQUESTS)
            # The caches replace an object that changes, never edit it: the same objects read the same.
            known = self._readings.get(node["metadata"]["name"])
            if known is not None and known[0] is node and known[1] is others:
                reading = known[2]
            else:
                reading = read_node(node, foreign=others, tolerated=self.config.tolerations)
            readings[reading.name] = (node, others, reading)
            if reading.findings:
                findings[reading.name] = reading.findings
            if reading.capability is None:
                continue
            capabilities.append(reading.capability)
            states[reading.name] = node_readiness(node, reading.schedulable)
            held[reading.name] = reading.held
        for name, found in findings.items():
            if self.findings.get(name) != found:
                log.warning("jupyter-hetero: %s", "; ".join(found))
        self.findings, self._readings = findings, readings
        return NodesSeen(capabilities, states, held)

    def node_utilisation(self, capability: NodeCapability) -> dict | None:
        return None  # what a node uses is the metrics pipeline's business, not the API server's

    def device_nodes(self) -> list[NodeTarget]:
        """The nodes where our live pods hold devices, with their addresses and the devices' vendors: where the
        exporters are read."""
        vendors: dict[str, set[str]] = {}
        for pod in self.reflector.pods.items().values():
            node = (pod.get("spec") or {}).get("nodeName")
            held = {prefix for container in pod["spec"].get("containers", ())
                    for name in ((container.get("resources") or {}).get("limits") or {})
                    for prefix in VENDOR_OF.values() if name.startswith(prefix)} if node else set()
            if held and pod_state(pod).alive:
                vendors.setdefault(node, set()).update(held)
        nodes = self.reflector.nodes.items()
        return [NodeTarget(name, _internal_ip(nodes.get(name)), frozenset(held)) for name, held in sorted(vendors.items())]


_NO_REQUESTS = pod_requests({})


def node_readiness(node: dict, schedulable: bool) -> str:
    """A node's state from the cluster: lost when not Ready, cordoned when it takes no new
    work (cordoned, or tainted in a way our pods do not tolerate), else ready."""
    ready = next((c.get("status") for c in node.get("status", {}).get("conditions", ()) if c.get("type") == "Ready"),
                 None)
    if ready != "True":
        return "lost"
    return "ready" if schedulable else "cordoned"


def _internal_ip(node: dict | None) -> str:
    addresses = ((node or {}).get("status") or {}).get("addresses") or ()
    return next((a.get("address", "") for a in addresses if a.get("type") == "InternalIP"), "")
