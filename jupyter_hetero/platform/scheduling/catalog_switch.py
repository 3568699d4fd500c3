"""What waiting work becomes when the scheduler takes up a reloaded catalog, as Kueue does with a deleted queue.

    strand_waiting(repository, catalog)        # at a tick's start, right after the switch
    stranded_by(catalog, row)                  # why a stored workload cannot be scheduled under this catalog

Waiting work whose queue, tenant or template the new catalog lacks is not cancelled and not admitted: it becomes
inadmissible with the reason, and stays so (no cycle examines it) until a later reload brings what it names back,
when it is queued again. Running work is never touched: it keeps its placement whatever the catalog now says.
"""

from __future__ import annotations

from ...catalog import Catalog
from ...store import INADMISSIBLE, QUEUED_STATES, Repository
from ...store.tables import WorkloadRow

__all__ = ["STRANDED", "strand_waiting", "stranded_by"]

# How the reason of a workload stranded by a reload starts: it tells those apart from ones no node can hold.
STRANDED = "the reloaded catalog has no "
_NO_TENANT = "no-tenant"  # work submitted by no tenant's member (see identity.py): never a catalog's tenant
BACK = "the reloaded catalog has its queue, tenant and template again"


def stranded_by(catalog: Catalog, row: WorkloadRow) -> str | None:
    """Why ``row`` cannot be scheduled under ``catalog`` (its queue, tenant or template is gone); None if it can."""
    if catalog.queue(row.queue) is None:
        return f"{STRANDED}queue {row.queue}; the workload waits, inadmissible, until its queue is back or it is " \
               "cancelled"
    if row.tenant != _NO_TENANT and catalog.tenant(row.tenant) is None:
        return f"{STRANDED}tenant {row.tenant}; the workload waits, inadmissible, until its tenant is back or it is " \
               "cancelled"
    if catalog.template(row.template) is None:
        return f"{STRANDED}template {row.template}; the workload waits, inadmissible, until its template is back or " \
               "it is cancelled"
    return None


def strand_waiting(repository: Repository, catalog: Catalog) -> tuple[list[WorkloadRow], list[int]]:
    """Waiting work the catalog can no longer schedule becomes inadmissible with the reason; work a reload stranded
    that the catalog can schedule again is queued. Returns (the rows stranded now, the ids queued again)."""
    stranded = []
    for row in repository.workloads(states=QUEUED_STATES):
        reason = stranded_by(catalog, row)
        if reason is not None:
            changed = repository.update_workload_if(row.id, lambda r: r.state in QUEUED_STATES, event="inadmissible",
                                                    reason=reason, data={"by": "catalog-reload"}, state=INADMISSIBLE,
                                                    not_before=None)
            if changed is not None:
                stranded.append(changed)
    back = []
    for row in repository.workloads(states=(INADMISSIBLE,)):
        if (row.reason or "").startswith(STRANDED) and stranded_by(catalog, row) is None:
            if repository.update_workload_if(row.id, lambda r: r.state == INADMISSIBLE, event="requeued", reason=BACK,
                                             state="queued") is not None:
                back.append(row.id)
    return stranded, back
