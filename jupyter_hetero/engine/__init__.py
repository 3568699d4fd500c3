"""The scheduling engine: pure, deterministic decisions over a snapshot, with no I/O and no clock.

>>> from jupyter_hetero.engine import Engine, Snapshot
>>> Engine().cycle(Snapshot(now=0.0, nodes=[], queues={}, tenants={})).admissions
[]
"""

from .capacity import Cluster, Policy
from .cycle import Engine, free_capacity
from .decisions import Admission, Blocker, Decisions, Escalation, Fit, Lost, Pending, Preemption
from .explain import render
from .matching import LabelReq
from .model import (
    Constraints,
    Device,
    NodeState,
    Placement,
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

__all__ = [
    "Admission",
    "Blocker",
    "Cluster",
    "Constraints",
    "Decisions",
    "Device",
    "Engine",
    "Escalation",
    "Fit",
    "LabelReq",
    "Lost",
    "NodeState",
    "Pending",
    "Placement",
    "Policy",
    "Preemption",
    "QueuePolicy",
    "Request",
    "Res",
    "Slot",
    "Snapshot",
    "TenantQuota",
    "VariantNeed",
    "Workload",
    "WorkloadKind",
    "free_capacity",
    "render",
]
