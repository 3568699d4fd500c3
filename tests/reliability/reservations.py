"""Reserved capacity as a standing invariant, judged over the store's whole history rather than at one moment.

    found = reservation_violations(rows, events, nodes, catalog, now=time.time(), slack_s=5.0)

A queue reserves devices per flavor (the catalog's ``queues[].reserved``). Other queues' work may use them while
they are idle, but only as a loan that can be taken back: admitted ``on_reservation``, of a preemptible queue;
of a queue that lends none (``lend_reserved: false``), not at all. The
owning queue takes them back by preemption when it needs them. From each workload's events (``admitted`` with
its placement, the release that ends the hold, the waits between them, each with its time), the checker rebuilds
who held what and who waited when, and finds two kinds of breach:

- **kept**: at some moment, the work of other queues that a reserving queue could not take back held more of
  the flavor's devices than that queue's reservation leaves to others (the flavor's devices in the inventory less
  the reservation);
- **not taken back**: a workload of the reserving queue waited, for longer than the borrowers' grace plus
  ``slack_s``, while work of other queues held the reservation on loan and nothing else kept it waiting: its
  queue's reservation had room for it, the flavor's devices had room once the borrowers left, its tenant's
  nominal quota had room (the borrowers' use left out) and no tenant of its cohort held more than its own
  nominal quota. Reservations are per flavor, so this is counted per flavor too: a request no single node
  could hold even then still counts as kept waiting. A wait starts at the submission or the requeue, or at the
  end of its backoff where the event gives one (``not_before``), and ends at its admission. It is wall time, a
  server's downtime included: a test that kills servers runs no reserving queue's work.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from jupyter_hetero.catalog import Catalog
from jupyter_hetero.engine import Res
from jupyter_hetero.engine_inputs import engine_workload
from jupyter_hetero.store import ACTIVE_STATES, PENDING_STATES
from jupyter_hetero.store.tables import NodeRow, WorkloadRow

__all__ = ["RECLAIM_SLACK_S", "Event", "reservation_violations"]

# Seconds past the borrowers' grace the scheduler has to give a reservation back to its queue: the tick that
# decides the preemption, the borrower's exit, the tick that reads it and admits the waiting work (0.2 s apart
# on a test server), with room for a loaded machine.
RECLAIM_SLACK_S = 5.0
# Events that end a hold (the workload gives its placement back), and those among them after which it waits
# again to be admitted.
RELEASES = {"requeued", "restarting", "retrying", "succeeded", "failed", "cancelled", "lost", "released",
            "preempted", "start-failed"}
WAITS = {"requeued", "restarting", "retrying"}
# Events that end a wait: an admission, an ending, and a verdict that no node could hold the workload (it then
# waits for the inventory, not for capacity).
UNWAITS = {"admitted", "inadmissible", *(RELEASES - WAITS)}

Event = tuple[str, float, dict]  # (type, at, data) of one workload, in order


@dataclass(frozen=True)
class _Hold:
    """A workload's placement on a flavor, from its admission to its release."""

    workload: int
    queue: str
    tenant: str
    flavor: str
    need: Res
    lent: bool  # admitted on another queue's reservation
    start: float
    end: float

    def at(self, moment: float) -> bool:
        return self.start <= moment < self.end


def reservation_violations(rows: Iterable[WorkloadRow], events: dict[int, list[Event]], nodes: Iterable[NodeRow],
                           catalog: Catalog, *, now: float, slack_s: float = RECLAIM_SLACK_S) -> list[str]:
    reserved: dict[str, dict[str, int]] = defaultdict(dict)  # flavor -> queue -> device milli
    for queue in catalog.queues:
        for flavor, devices in queue.reserved.items():
            reserved[flavor][queue.name] = devices * 1000
    if not reserved:
        return []
    capacity: dict[str, int] = defaultdict(int)
    for node in nodes:
        capacity[node.flavor or ""] += ((node.capability or {}).get("accelerator") or {}).get("count", 0) * 1000
    rows = [row for row in rows if "request" in (row.request or {})]
    needs = {row.id: engine_workload(row, None, 0).request.total for row in rows}
    holds, waits = _history(rows, events, needs, now)
    on: dict[str, list[_Hold]] = defaultdict(list)
    for hold in holds:
        on[hold.flavor].append(hold)
    history = _History(catalog, reserved, capacity, on, slack_s)
    found = [breach for flavor in sorted(reserved) for breach in history.kept(flavor)]
    for row in rows:
        for start, end in waits.get(row.id, ()):
            breach = history.not_taken_back(row, needs[row.id], start, end)
            if breach:
                found.append(breach)
                break
    return found


def _history(rows: list[WorkloadRow], events: dict[int, list[Event]], needs: dict[int, Res],
             now: float) -> tuple[list[_Hold], dict[int, list[tuple[float, float]]]]:
    """Every hold of a placement and every wait to be admitted, each with its start and end."""
    holds: list[_Hold] = []
    waits: dict[int, list[tuple[float, float]]] = {}
    for row in rows:
        said = events.get(row.id, [])
        # What is still held or awaited lasts until now; what ended by another word, until its last event.
        until = now if row.state in (*ACTIVE_STATES, *PENDING_STATES) or not said else said[-1][1]
        held, waits[row.id] = _replay(said, until)
        holds += [_Hold(row.id, row.queue, row.tenant, placement["flavor"], _held(needs[row.id], placement),
                        bool(placement.get("on_reservation")), start, end) for start, end, placement in held]
    return holds, waits


def _held(need: Res, placement: dict) -> Res:
    """What a placement holds: its request's CPU and memory, and the devices it was given."""
    return Res(need.cpu, need.mem, sum(d["milli"] for slot in placement.get("slots", ()) for d in slot["devices"]))


def _replay(said: list[Event], until: float) -> tuple[list[tuple[float, float, dict]], list[tuple[float, float]]]:
    """One workload's holds (start, end, placement) and waits (start, end) from its events."""
    holds, waits = [], []
    held: tuple[float, dict] | None = None
    waiting: float | None = None
    for kind, at, data in [*said, ("", until, {})]:  # the last: what is still open ends at ``until``
        if held is not None and (kind in RELEASES or not kind):
            holds.append((held[0], at, held[1]))
            held = None
        if waiting is not None and (kind in UNWAITS or not kind):
            waits.append((waiting, max(waiting, at)))
            waiting = None
        if kind == "admitted" and data.get("flavor"):
            held = (at, data)
        elif kind == "submitted" or (kind in WAITS and waiting is None):
            waiting = max(at, (data or {}).get("not_before") or at)
    return holds, waits


@dataclass
class _History:
    """Who held what of each reserved flavor, and when, judged against the catalog's queues and tenants."""

    catalog: Catalog
    reserved: dict[str, dict[str, int]]
    capacity: dict[str, int]
    on: dict[str, list[_Hold]]
    slack_s: float

    def kept(self, flavor: str) -> list[str]:
        """For each queue reserving ``flavor``: the moment others held the most of it that it cannot take back,
        if that is more than its reservation leaves them."""
        found = []
        for queue, milli in sorted(self.reserved[flavor].items()):
            lends = self.catalog.queue(queue).lend_reserved  # a queue that lends none: every hold by others counts
            kept = [h for h in self.on[flavor] if h.queue != queue
                    and not (lends and h.lent and self._preemptible(h.queue))]
            left = self.capacity[flavor] - milli
            for moment in sorted({h.start for h in kept}):
                holding = [h for h in kept if h.at(moment)]
                if sum(h.need.dev for h in holding) > left:
                    found.append(
                        f"work of other queues held {sum(h.need.dev for h in holding)} milli of {flavor} that queue "
                        f"{queue} could not take back (workloads {sorted(h.workload for h in holding)}), past the "
                        f"{left} its reservation of {milli} leaves them of {self.capacity[flavor]}")
                    break
        return found

    def not_taken_back(self, row: WorkloadRow, need: Res, start: float, end: float) -> str | None:
        """The first stretch of this wait, longer than its bound, during which only borrowers kept ``row`` out of
        its queue's reservation; None when there is none."""
        flavors = [f for f in (row.request.get("flavors") or ()) if row.queue in self.reserved.get(f, {})]
        if not flavors or not need.dev:
            return None
        moments = sorted({start, end} | {t for f in flavors for h in self.on[f] for t in (h.start, h.end)
                                         if start < t < end})
        since, lenders = None, set[_Hold]()
        for moment, after in pairwise(moments):
            borrowers = [h for f in flavors for h in self._borrowers(row, need, f, moment)]
            if not borrowers:
                since, lenders = None, set()
                continue
            since = moment if since is None else since
            lenders |= set(borrowers)
            grace = max(self._grace(h.queue) for h in lenders)
            if after - since > grace + self.slack_s:
                return (f"workload {row.id} of queue {row.queue} waited {after - since:.1f} s while workloads "
                        f"{sorted({h.workload for h in lenders})} of other queues held its reservation on "
                        f"{', '.join(sorted({h.flavor for h in lenders}))} on loan and nothing else kept it waiting, "
                        f"past the {grace:g} s of their grace and {self.slack_s:g} s to take it back")
        return None

    def _borrowers(self, row: WorkloadRow, need: Res, flavor: str, moment: float) -> list[_Hold]:
        """Who holds ``row``'s queue's reservation on ``flavor`` on loan at ``moment``, when that alone keeps
        ``row`` waiting there; [] when nobody does, or when something else would keep it waiting too."""
        holding = [h for h in self.on[flavor] if h.at(moment)]
        borrowers = [h for h in holding if h.lent and h.queue != row.queue]
        rest = [h for h in holding if h not in borrowers]
        if not borrowers or sum(h.need.dev for h in rest) + need.dev > self.capacity[flavor] \
                or sum(h.need.dev for h in rest if h.queue == row.queue) + need.dev > self.reserved[flavor][row.queue]:
            return []
        tenant = self.catalog.tenant(row.tenant)
        used: dict[str, Res] = defaultdict(Res)
        for hold in rest:
            used[hold.tenant] += hold.need
        if tenant is None or not _within(used[row.tenant] + need, tenant, flavor, need):
            return []
        cohort = [t for t in self.catalog.tenants if t.cohort == tenant.cohort and t.name != tenant.name]
        if any(not _within(used[t.name], t, flavor) for t in cohort if used[t.name] != Res()):
            return []  # a tenant borrows in the cohort: what keeps it waiting may be its tenant's lent quota
        return borrowers

    def _preemptible(self, queue: str) -> bool:
        policy = self.catalog.queue(queue)
        return policy is not None and policy.preemption.preemptible

    def _grace(self, queue: str) -> float:
        policy = self.catalog.queue(queue)
        return policy.preemption.grace_s if policy else 0.0


def _within(used: Res, tenant, flavor: str, asked: Res | None = None) -> bool:
    """Whether ``used`` is within the tenant's nominal quota of ``flavor`` (only in what ``asked`` asks for)."""
    quota = tenant.quotas.get(flavor)
    if quota is None:
        return False
    nominal = quota.nominal
    return all(value <= limit for value, limit, wanted in zip(
        (used.cpu, used.mem, used.dev), (nominal.cpu_milli, nominal.memory_mib, nominal.device_milli),
        (asked.cpu, asked.mem, asked.dev) if asked else (1, 1, 1), strict=True) if wanted)
