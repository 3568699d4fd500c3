"""Physical capacity: nodes indexed by flavor and free capacity, and the placement of replicas.

Nodes of a flavor sit in buckets keyed by what they have free (whole free devices for accelerator
nodes, free cores for CPU nodes), so finding a place walks a few buckets instead of every node.
With a node scorer (the fragmentation-aware default), every replica goes to the best-ranked of all
eligible nodes: a heap per request shape holds the ranks, and only nodes that changed since that
shape last asked are ranked again. Allocation and release are exact inverses, which lets
preemption try "what if these went away" and then restore the state.

Topology-aware (the default), a replica of whole devices takes the closest free devices of its node
(one link domain and NUMA node if it can; see :mod:`.topology`), and with a node scorer a replica of
several goes first to a node where they fit inside one link domain. Topology-blind, it takes the lowest
free indexes wherever the policy sends it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..units import format_amount, format_cpu, format_memory
from .matching import Mismatch, mismatch
from .model import Constraints, Device, NodeState, Request, Slot
from .topology import Locality, choose_devices, one_domain_holds

__all__ = ["Cluster", "Eligibility", "NodeRanker", "NodeScorer", "Policy"]


class Policy:
    """Placement policies for the choice of node and device inside a flavor."""

    BINPACK = "binpack"  # fill the fullest node/device that fits: keeps whole nodes free
    SPREAD = "spread"  # the emptiest node/device: fewer neighbours, more headroom
    FRAGMENTATION = "fragmentation-aware"  # least fragmentation of the typical workload mix (default)

    ALL = (BINPACK, SPREAD, FRAGMENTATION)


class NodeRanker(Protocol):
    """A node scorer bound to one cluster's nodes."""

    def rank(self, nodes: Sequence[NodeState], request: Request) -> list[tuple[tuple, int] | None]:
        """Per node: (rank, lower is better and comparable across nodes; the device a fractional replica
        takes, or -1), or None where one replica does not fit (CPU, devices; memory is the cluster's)."""


class NodeScorer(Protocol):
    """What ``Engine(node_scorer=...)`` takes; see :class:`.scoring.FragmentationScorer`."""

    def bind(self, nodes: Iterable[NodeState]) -> NodeRanker:
        """The ranker for these nodes (it may depend on the whole inventory, e.g. per-model capacity)."""


@dataclass(slots=True)
class _Ranking:
    """The eligible nodes of a flavor ranked for one request shape; stale entries are dropped lazily."""

    heap: list[tuple[tuple, str, int, int]] = field(default_factory=list)  # (rank, node, version, device)
    seen: int = 0  # how much of the flavor's change log the heap has taken in


@dataclass(slots=True)
class Eligibility:
    """The nodes of a flavor that could ever run a workload, and why the others cannot."""

    nodes: dict[str, NodeState]
    mismatches: dict[str, tuple[Mismatch, int]]  # kind -> (example, how many nodes)
    devices: int = 0  # whole devices over the eligible nodes: a gang that needs more can never fit


# Fractional requests look nodes up by the most any one device has free, in steps of this much.
_FRACTION_STEP = 50


def _node_keys(node: NodeState) -> tuple[int, int]:
    """(whole free devices, or free cores on a CPU node; most milli free on one device // step)."""
    if not node.devices:
        return node.free_cpu // 1000, 0
    whole = best = 0
    for device in node.devices:
        free = device.free_milli
        if free == 1000:
            whole += 1
        if free > best:
            best = free
    return whole, best // _FRACTION_STEP


class Cluster:
    """Free capacity of every node, indexed for placement; mutated as the cycle allocates."""

    def __init__(self, nodes: Iterable[NodeState], *, policy: str = Policy.FRAGMENTATION,
                 node_scorer: NodeScorer | None = None, topology: bool = True):
        self.nodes: dict[str, NodeState] = {n.name: n for n in sorted(nodes, key=lambda n: n.name)}
        self.policy = policy
        self.node_scorer = node_scorer
        # Nodes whose devices have link domains: the only ones where the choice of devices can matter.
        # Empty when blind, or when no node says: then placement is exactly as without topology.
        self._linked = frozenset(
            name for name, node in self.nodes.items() if topology and any(d.link >= 0 for d in node.devices)
        )
        # The scorer sees the whole inventory once (static facts only), before any work is charged.
        self._ranker = (
            node_scorer.bind(self.nodes.values()) if node_scorer is not None and policy == Policy.FRAGMENTATION else None
        )
        self._rankings: dict[tuple, _Ranking] = {}
        self._version: dict[str, int] = dict.fromkeys(self.nodes, 0)
        self._changes: dict[str, list[str]] = {}  # flavor -> names of nodes whose free capacity changed, in order
        self._any_fit = False
        self.flavors: dict[str, list[NodeState]] = {}
        self._buckets: dict[str, dict[int, dict[str, NodeState]]] = {}
        self._fractions: dict[str, dict[int, dict[str, NodeState]]] = {}
        self._keys: dict[str, tuple[int, int]] = {}
        self._eligible: dict[tuple, Eligibility] = {}
        for node in self.nodes.values():
            self.flavors.setdefault(node.flavor, []).append(node)
            self._changes.setdefault(node.flavor, [])
            self._file(node)
        self._has_devices = {flavor: any(n.devices for n in nodes) for flavor, nodes in self.flavors.items()}
        self._free_dev = {
            flavor: sum(n.device_free_milli for n in nodes if n.schedulable) for flavor, nodes in self.flavors.items()
        }
        # The biggest ready node of each flavor, (count, CPU, memory): what no node can hold
        # is told apart from what merely waits for capacity.
        self._largest = {
            flavor: (len(ready), max(n.cpu for n in ready), max(n.mem for n in ready))
            for flavor, nodes in self.flavors.items()
            if (ready := [n for n in nodes if n.schedulable])
        }

    # -- index ---------------------------------------------------------------------------------

    def _file(self, node: NodeState, keys: tuple[int, int] | None = None) -> None:
        key, fraction = self._keys[node.name] = keys or _node_keys(node)
        self._buckets.setdefault(node.flavor, {}).setdefault(key, {})[node.name] = node
        if node.devices:
            self._fractions.setdefault(node.flavor, {}).setdefault(fraction, {})[node.name] = node

    def _refile(self, node: NodeState) -> None:
        old, new = self._keys[node.name], _node_keys(node)
        if old != new:
            del self._buckets[node.flavor][old[0]][node.name]
            if node.devices:
                del self._fractions[node.flavor][old[1]][node.name]
            self._file(node, new)

    def eligibility(self, flavor: str, request: Request, constraints: Constraints) -> Eligibility:
        """Static eligibility, cached: it depends on nothing that changes within a cycle."""
        oversized = self._oversized(flavor, request)
        if oversized is not None:
            return Eligibility({}, {oversized.kind: (oversized, self._largest[flavor][0])})
        key = (flavor, constraints, request.uses_devices, request.devices, request.device_mem,
               request.replicas > 1, request.placement)
        cached = self._eligible.get(key)
        if cached is None:
            nodes: dict[str, NodeState] = {}
            mismatches: dict[str, tuple[Mismatch, int]] = {}
            for node in self.flavors.get(flavor, ()):
                reason = mismatch(node, request, constraints)
                if reason is None:
                    nodes[node.name] = node
                else:
                    example, count = mismatches.get(reason.kind, (reason, 0))
                    mismatches[reason.kind] = (example, count + 1)
            devices = sum(len(node.devices) for node in nodes.values())
            cached = self._eligible[key] = Eligibility(nodes, mismatches, devices)
        if request.uses_devices and cached.nodes and request.total.dev > cached.devices * 1000:
            # More devices in all than every node that could run it has together: never, not just not now.
            short = Mismatch("flavor-devices", format_amount(request.total.dev / 1000), str(cached.devices))
            return Eligibility({}, {short.kind: (short, len(cached.nodes))})
        return cached

    def _oversized(self, flavor: str, request: Request) -> Mismatch | None:
        """Why no ready node of ``flavor`` is big enough for one replica (for all, when they
        must share a node), or None."""
        largest = self._largest.get(flavor)
        if largest is None:
            return None
        _, cpu, mem = largest
        together = request.replicas if request.placement == "same-node" else 1
        if request.cpu * together > cpu:
            return Mismatch("node-cpu", format_cpu(request.cpu * together), format_cpu(cpu))
        if request.mem * together > mem:
            return Mismatch("node-memory", format_memory(request.mem * together), format_memory(mem))
        return None

    def free_devices_milli(self, flavor: str) -> int:
        """Free device-milli over the schedulable nodes of a flavor, kept up to date as work moves."""
        return self._free_dev.get(flavor, 0)

    # -- allocation ----------------------------------------------------------------------------

    def allocate(self, slot: Slot, request: Request) -> None:
        self._move(self.nodes[slot.node], slot, request, -1)

    def release(self, slot: Slot, request: Request) -> None:
        node = self.nodes.get(slot.node)
        if node is not None:  # a node that left the inventory has nothing to give back
            self._move(node, slot, request, +1)

    def _move(self, node: NodeState, slot: Slot, request: Request, sign: int) -> None:
        node.free_cpu += sign * request.cpu
        node.free_mem += sign * request.mem
        for index, milli, mem in slot.devices:
            device = node.devices[index]
            device.free_milli += sign * milli
            device.free_mem += sign * mem
            if node.schedulable:
                self._free_dev[node.flavor] += sign * milli
        self._version[node.name] += 1
        self._changes[node.flavor].append(node.name)
        # Device nodes are indexed by their devices only: CPU-only work there leaves the index alone.
        if slot.devices or not node.devices:
            self._refile(node)

    # -- placement -----------------------------------------------------------------------------

    def place(self, flavor: str, request: Request, constraints: Constraints,
              within: dict[str, NodeState] | None = None, *, any_fit: bool = False) -> tuple[Slot, ...] | None:
        """Slots for every replica (all or nothing), allocated; None when the gang cannot fit.

        ``any_fit`` skips scoring: for "would it fit?" questions the first place found will do."""
        self._any_fit = any_fit
        eligible = self.eligibility(flavor, request, constraints).nodes
        # A flavor's eligible nodes stay ranked per (eligibility, what the rank depends on); memory is
        # checked as nodes come off the heap. A subset (``within``, a gang's group) is scanned instead.
        ranking: tuple | None = (flavor, constraints, request.cpu, request.devices, request.device_milli,
                                 request.device_mem, request.replicas > 1, request.placement)
        if within is not None:
            eligible = {name: node for name, node in eligible.items() if name in within}
            ranking = None
        if not eligible:
            return None
        if request.replicas == 1:
            slot = self._one(flavor, request, eligible, ranking)
            if slot is not None:
                self.allocate(slot, request)
                return (slot,)
            return None
        if request.placement == "same-node":
            groups: Iterator[dict[str, NodeState]] = ({name: node} for name, node in eligible.items())
        elif request.placement == "same-interconnect":
            groups = iter(_by_domain(eligible).values())
        else:
            return self._gang(flavor, request, eligible, ranking)
        for group in groups:
            slots = self._gang(flavor, request, group, None)
            if slots is not None:
                return slots
        return None

    def _gang(self, flavor: str, request: Request, eligible: dict[str, NodeState],
              ranking: tuple | None) -> tuple[Slot, ...] | None:
        placed: list[Slot] = []
        for _ in range(request.replicas):
            slot = self._one(flavor, request, eligible, ranking)
            if slot is None:
                for done in placed:
                    self.release(done, request)
                return None
            self.allocate(slot, request)
            placed.append(slot)
        return tuple(placed)

    def _one(self, flavor: str, request: Request, eligible: dict[str, NodeState], ranking: tuple | None) -> Slot | None:
        if self._ranker is not None and not self._any_fit:
            if ranking is None:
                return self._best_of(request, eligible.values())
            return self._best_ranked(flavor, request, eligible, ranking)
        spread = self.policy == Policy.SPREAD
        if request.device_milli:
            buckets = self._fractions.get(flavor, {})
            keys = sorted((k for k in buckets if k >= request.device_milli // _FRACTION_STEP), reverse=spread)
            return self._best_fraction(request, self._fitting(buckets, keys, request, eligible))
        buckets = self._buckets.get(flavor, {})
        if request.devices:
            keys = sorted((k for k in buckets if k >= request.devices), reverse=spread)
        elif not self._has_devices.get(flavor):
            keys = sorted((k for k in buckets if k >= request.cpu // 1000), reverse=spread)
        else:
            keys = sorted(buckets, reverse=spread)
        for node in self._fitting(buckets, keys, request, eligible):
            return Slot(node.name, self._whole_devices(node, request))
        return None

    def _locality(self, node: NodeState, request: Request) -> tuple[int]:
        """A rank prefix for several whole devices where some nodes have link domains: nodes in use where the
        devices fit inside one domain come first; the rest (a node without domains, one that would split them,
        an idle one) rank by the fragmentation score alone. Breaking up an idle node for locality, or ranking
        nodes by NUMA too, took whole nodes for work that fitted on a fuller one, which later, larger requests
        then waited for (docs/benchmarks.md); NUMA is left to the choice of devices on the node."""
        if node.name in self._linked and any(d.free_milli < 1000 for d in node.devices):
            return (Locality.SAME_DOMAIN if one_domain_holds(node.devices, request.devices) else Locality.SPLIT,)
        return (Locality.SPLIT,)

    @staticmethod
    def _fitting(buckets, keys, request: Request, eligible) -> Iterator[NodeState]:
        for key in keys:
            for name, node in buckets[key].items():
                if name in eligible and node.free_cpu >= request.cpu and node.free_mem >= request.mem:
                    if request.device_milli and not any(_fraction_fits(d, request) for d in node.devices):
                        continue
                    yield node

    def _whole_devices(self, node: NodeState, request: Request) -> tuple[tuple[int, int, int], ...]:
        if not request.devices:
            return ()
        if node.name in self._linked:
            free = choose_devices(node.devices, request.devices)
        else:
            free = [d for d in node.devices if d.free_milli == 1000][: request.devices]
        return tuple((d.index, 1000, d.free_mem) for d in free)

    def _best_ranked(self, flavor: str, request: Request, eligible: dict[str, NodeState], key: tuple) -> Slot | None:
        """The best-ranked eligible node with room, over every eligible node of the flavor."""
        ranking = self._rankings.get(key)
        changes = self._changes[flavor]
        if ranking is None:
            ranking = self._rankings[key] = _Ranking()
            fresh = list(eligible.values())
        else:
            fresh = [eligible[n] for n in dict.fromkeys(changes[ranking.seen:]) if n in eligible]
        ranking.seen = len(changes)
        heap, version = ranking.heap, self._version
        if fresh:
            entries = [(scored[0], node.name, version[node.name], scored[1])
                       for node, scored in zip(fresh, self._ranker.rank(fresh, request)) if scored is not None]
            if self._linked and request.devices > 1:
                entries = [(self._locality(self.nodes[name], request) + rank, name, at, device)
                           for rank, name, at, device in entries]
            if len(entries) > len(heap):
                heap.extend(entries)
                heapq.heapify(heap)
            else:
                for entry in entries:
                    heapq.heappush(heap, entry)
            if len(heap) > 2 * len(eligible) + 64:  # mostly stale entries of busy nodes: keep the heap small
                heap[:] = [entry for entry in heap if entry[2] == version[entry[1]]]
                heapq.heapify(heap)
        short_of_memory = []
        slot = None
        while heap:
            _rank, name, at, device = heap[0]
            if at != version[name]:
                heapq.heappop(heap)  # the node changed since: its current rank is further down
                continue
            node = self.nodes[name]
            if node.free_mem < request.mem:
                short_of_memory.append(heapq.heappop(heap))  # ranked on CPU and devices; kept for smaller requests
                continue
            slot = self._slot(node, request, device)
            break
        for entry in short_of_memory:
            heapq.heappush(heap, entry)
        return slot

    def _best_of(self, request: Request, candidates: Iterable[NodeState]) -> Slot | None:
        """The best-ranked of a few candidates (a gang's group), scanned without a heap."""
        nodes = [n for n in candidates if n.free_mem >= request.mem]
        ranked = [(scored[0], node.name, scored[1], node)
                  for node, scored in zip(nodes, self._ranker.rank(nodes, request)) if scored is not None]
        if self._linked and request.devices > 1:
            ranked = [(self._locality(node, request) + rank, name, device, node) for rank, name, device, node in ranked]
        if not ranked:
            return None
        _rank, _name, device, node = min(ranked, key=lambda entry: entry[:2])
        return self._slot(node, request, device)

    def _slot(self, node: NodeState, request: Request, device: int) -> Slot:
        if not request.device_milli:
            return Slot(node.name, self._whole_devices(node, request))
        if device < 0:  # a "fraction" of a whole device: the lowest-index one with room
            device = next(d.index for d in node.devices if _fraction_fits(d, request))
        return Slot(node.name, ((device, request.device_milli, request.device_mem),))

    def _best_fraction(self, request: Request, candidates: Iterator[NodeState]) -> Slot | None:
        # Buckets run tightest-first (binpack) or loosest-first (spread): the first fitting node is
        # the answer; only the device inside it is chosen.
        for node in candidates:
            fitting = [d for d in node.devices if _fraction_fits(d, request)]
            leftover = (lambda d: -d.free_milli) if self.policy == Policy.SPREAD else (lambda d: d.free_milli)
            device = min(fitting, key=lambda d: (leftover(d), d.index))
            return Slot(node.name, ((device.index, request.device_milli, request.device_mem),))
        return None


def _fraction_fits(device: Device, request: Request) -> bool:
    return device.free_milli >= request.device_milli and device.free_mem >= request.device_mem


def _by_domain(nodes: dict[str, NodeState]) -> dict[str, dict[str, NodeState]]:
    domains: dict[str, dict[str, NodeState]] = {}
    for name, node in nodes.items():
        domains.setdefault(node.domain or name, {})[name] = node
    return dict(sorted(domains.items()))
