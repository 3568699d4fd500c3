"""The Alibaba openb trace files: GPU node lists and pod lists, as the FGD paper's simulator ships them.

    nodes = load_nodes("openb_node_list_gpu_node.csv")     # the 1,213 GPU nodes
    pods = load_pods("openb_pod_list_multigpu50.csv")      # sorted by name; gpu_spec is optional

Every published pod list has ``name,cpu_milli,memory_mib,num_gpu,gpu_milli``; most add ``gpu_spec``
(and QoS and times, which the protocol ignores). The ``multigpu`` lists have only the five.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ..engine.fragmentation import Shape

__all__ = ["NODE_COLUMNS", "POD_COLUMNS", "Node", "Pod", "load_nodes", "load_pods"]

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")  # plus gpu_spec where the list has it


@dataclass(frozen=True, slots=True)
class Node:
    """One GPU node of the trace."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class Pod:
    """One pod of the trace; ``models`` is its ``gpu_spec`` split on ``|`` (None: any model)."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpu_count: int
    gpu_milli: int
    models: frozenset[str] | None = None

    @property
    def shape(self) -> Shape:
        return Shape(self.cpu_milli, self.gpu_milli if self.gpu_count else 0, self.gpu_count, self.models)

    @property
    def gpu_demand(self) -> int:
        return self.gpu_count * self.gpu_milli


def _rows(path: str | Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in columns if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; expected {','.join(columns)}")
        return list(reader)


def load_nodes(path: str | Path) -> list[Node]:
    """The trace's GPU nodes; CPU-only rows of the all-node list are left out as the protocol does."""
    rows = [
        Node(r["sn"], int(r["cpu_milli"]), int(r["memory_mib"]), int(r["gpu"]), r["model"])
        for r in _rows(path, NODE_COLUMNS)
    ]
    return [n for n in rows if n.gpus > 0]


def load_pods(path: str | Path) -> list[Pod]:
    """The trace's pods sorted by name; a list without ``gpu_spec`` constrains no pod to a GPU model."""
    pods = [
        Pod(
            r["name"], int(r["cpu_milli"]), int(r["memory_mib"]), int(r["num_gpu"]), int(r["gpu_milli"]),
            frozenset(m for m in (r.get("gpu_spec") or "").split("|") if m) or None,
        )
        for r in _rows(path, POD_COLUMNS)
    ]
    return sorted(pods, key=lambda p: p.name)
