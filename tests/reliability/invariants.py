"""The invariants every reliability test holds the system to, read from the store and from the processes really
running on this machine.

    found = violations(repository, catalog, acknowledged={"burst-7": 7}, work_dir=Path(".../work"))
    assert not found, found     # each a sentence naming the workload, node or device

- no device is allocated past its whole (the placements of active work summed per device), and no placement
  names a device its node does not have;
- no tenant holds more of a flavor's devices than its quota and borrowing limit allow, nor than its cohort has;
- every acknowledged submission is in the store, once;
- no service replica was ever preempted (services hold their queue's reserved capacity);
- reserved capacity, over the store's whole history (see reservations.py): other queues never held more of a
  flavor than a reserving queue could take back allowed, and a reserving queue's work never waited past the
  borrowers' grace and a few seconds while only borrowers of its reservation kept it waiting;
- work that holds nothing any more says so (no placement, nothing held) and its last word after its last
  admission is a release (an ending, a requeue, a preemption), never the admission itself;
- no pod (``pods=``, a cluster's) is there for a workload that is not active;
- no process works for a workload that is not active, nor for an attempt other than its newest (a job's, a
  replica's and a kernel's processes carry their workload's id and attempt in their environment).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import psutil
from sqlalchemy import select

from jupyter_hetero.backends.kubernetes.backend import WORKLOAD_LABEL
from jupyter_hetero.catalog import Catalog
from jupyter_hetero.store import ACTIVE_STATES, Repository
from jupyter_hetero.store.tables import EventRow, NodeRow, WorkloadRow

from .reservations import Event, reservation_violations

__all__ = ["violations", "workload_processes"]

# Events that leave a workload holding capacity; any other after them releases it, or ends it.
HOLDING = {"admitted", "starting", "started", "adopted", "checkpoint", "ready", "not-ready", "autoscaled"}


def violations(repository: Repository, catalog: Catalog, *, acknowledged: dict[str, int] | None = None,
               work_dir: Path | None = None, pods: Iterable[dict] | None = None) -> list[str]:
    found: list[str] = []
    # One read: the workloads, their events and the nodes as of one moment (two reads could see a workload
    # queued, then its admission).
    with repository.session() as session:
        rows = list(session.scalars(select(WorkloadRow).order_by(WorkloadRow.id)))
        events: dict[int, list[Event]] = defaultdict(list)
        for workload_id, kind, at, data in session.execute(
                select(EventRow.workload_id, EventRow.type, EventRow.at, EventRow.data)
                .where(EventRow.workload_id.is_not(None)).order_by(EventRow.id)):
            events[workload_id].append((kind, at, data or {}))
        nodes = {row.name: row for row in session.scalars(select(NodeRow))}
    active = [row for row in rows if row.state in ACTIVE_STATES and row.placement]

    # Devices: never past their whole, never one the node lacks.
    used: dict[tuple[str, int], int] = defaultdict(int)
    for row in active:
        for slot in row.placement["slots"]:
            count = ((nodes.get(slot["node"]) and nodes[slot["node"]].capability.get("accelerator")) or {}).get("count", 0)
            for device in slot["devices"]:
                used[(slot["node"], device["index"])] += device["milli"]
                if device["index"] >= count:
                    found.append(f"workload {row.id} holds device {device['index']} of {slot['node']}, which has {count}")
    found += [f"device {index} of {node} is allocated {milli} milli, past its 1000"
              for (node, index), milli in sorted(used.items()) if milli > 1000]

    # Quotas: a tenant within its nominal quota and borrowing limit, and never past its cohort.
    held: dict[tuple[str, str], int] = defaultdict(int)
    for row in active:
        held[(row.tenant, row.placement["flavor"])] += row.held_device_milli
    cohorts: dict[tuple[str, str], int] = defaultdict(int)
    for tenant in catalog.tenants:
        for flavor, quota in tenant.quotas.items():
            cohorts[(tenant.cohort, flavor)] += quota.nominal.device_milli
    for (name, flavor), milli in sorted(held.items()):
        tenant = catalog.tenant(name)
        quota = tenant.quotas.get(flavor) if tenant else None
        cohort = cohorts.get((tenant.cohort, flavor), 0) if tenant else 0
        if quota is not None and quota.borrowing_limit is not None \
                and milli > quota.nominal.device_milli + quota.borrowing_limit.device_milli:
            found.append(f"tenant {name} holds {milli} milli of {flavor}, past its quota and borrowing limit")
        if milli > max(cohort, quota.nominal.device_milli if quota else 0) and milli > 0:
            found.append(f"tenant {name} holds {milli} milli of {flavor}, more than its cohort's quota of {cohort}")

    # Acknowledged submissions: each in the store, once.
    by_name: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        if row.name:
            by_name[row.name].append(row.id)
    for name, workload_id in sorted((acknowledged or {}).items()):
        if by_name.get(name) != [workload_id]:
            found.append(f"submission {name} (acknowledged as {workload_id}) is in the store as {by_name.get(name)}")

    # Released: nothing held, and the release said after the last admission.
    for row in rows:
        if row.state in ACTIVE_STATES:
            continue
        if row.placement or row.held_device_milli or row.held_cpu_milli or row.held_memory_mib:
            found.append(f"workload {row.id} is {row.state} but still holds {row.placement or 'capacity'}")
        said = [kind for kind, _at, _data in events.get(row.id, ())]
        if "admitted" in said:
            after = said[len(said) - 1 - said[::-1].index("admitted"):]
            if all(kind in HOLDING for kind in after):
                found.append(f"workload {row.id} is {row.state} with no release after its admission: {after}")

    # Services run on their queue's reserved capacity and are never preempted.
    found += [f"service replica {row.id} was preempted" for row in rows
              if row.kind == "service" and any(kind == "preempted" for kind, _at, _data in events.get(row.id, ()))]
    # Reserved capacity: lent only as what can be taken back, and taken back in time.
    found += reservation_violations(rows, events, nodes.values(), catalog, now=time.time())

    # Processes: none for work that is not active, and none of an attempt other than the workload's newest.
    if work_dir is not None:
        newest = {row.id: row.attempts for row in rows}
        states = {row.id: row.state for row in rows}
        for pid, workload, attempt in workload_processes(Path(work_dir).parent):
            if states.get(workload) not in ACTIVE_STATES or (attempt is not None and attempt != newest.get(workload)):
                # Read after the store was: the workload may have been admitted and started since (a live
                # scheduler), so it is judged on its state now, which a process of it cannot precede.
                row = repository.workload(workload)
                states[workload], newest[workload] = (row.state, row.attempts) if row else (None, None)
            if states.get(workload) not in ACTIVE_STATES:
                found.append(f"process {pid} works for workload {workload}, which is {states.get(workload)}")
            elif attempt is not None and attempt != newest.get(workload):
                found.append(f"process {pid} works for attempt {attempt} of workload {workload}, whose newest is "
                             f"{newest.get(workload)}: two attempts alive at once")
    # Pods (a cluster's reality): none for work that is not active.
    states = {row.id: row.state for row in rows}
    for pod in pods or ():
        workload = (pod["metadata"].get("labels") or {}).get(WORKLOAD_LABEL)
        if workload and states.get(int(workload)) not in ACTIVE_STATES:
            found.append(f"pod {pod['metadata'].get('namespace')}/{pod['metadata']['name']} is there for workload "
                         f"{workload}, which is {states.get(int(workload))}")
    return found


def workload_processes(root: Path) -> list[tuple[int, int, int | None]]:
    """(pid, workload id, attempt) of every live process a server under ``root`` started for a workload: a job's
    command and runner, a service's replica, a kernel (each carries ``HETERO_WORKLOAD_ID`` and works under
    ``root``)."""
    found = []
    for process in psutil.process_iter(["pid", "cwd", "status"]):
        if process.info.get("status") == psutil.STATUS_ZOMBIE or not (process.info.get("cwd") or "").startswith(
                str(root) + "/"):
            continue
        try:
            environ = process.environ()
        except psutil.Error:
            continue
        if "HETERO_WORKLOAD_ID" in environ:
            attempt = environ.get("HETERO_ATTEMPT")
            found.append((process.info["pid"], int(environ["HETERO_WORKLOAD_ID"]),
                          int(attempt) if attempt and attempt.isdigit() else None))
    return found
