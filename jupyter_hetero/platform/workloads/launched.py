"""Workloads placed here and launched by their caller: a hub user's server (by the hub's spawner) and a
kernel in a hub user's server (by that server's kernel provisioner).

The caller asks for the workload (queued), follows it until the engine places it, reports the launch
(``started``: the answer carries the placement's environment, device visibility included) and gives
its devices back (``release``) when what it launched ends, or when it gives up waiting. Only the
workload's owner launches it; stopping it is open to whoever may stop the owner's work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ...catalog import Catalog, WorkloadKind
from ...errors import Conflict, InvalidRequest
from ...i18n import N_, Message
from ...store import ACTIVE_STATES, PENDING_STATES, Repository
from ...store.tables import WorkloadRow
from ..clock import Clock
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from .service import FINAL_STATES, Workloads, workload_json

__all__ = ["CallerLaunched"]


class CallerLaunched(ReadsLiveCatalog):
    """Start and release one kind of caller-launched workload, always as its owner."""

    kind: WorkloadKind

    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, workloads: Workloads, clock: Clock,
                 environment_of: Callable[[WorkloadRow], dict[str, str]], wake: Callable[[], None],
                 now: Callable[[], float]):
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self.workloads = workloads
        self.clock = clock
        self.now = now  # scheduler time, which the idle rules compare reported activity with
        # A placed workload's environment: its devices' visibility variables where the backend sets them
        # (this machine), not where a device plugin does (pods), and whatever credential its kind carries.
        self.environment_of = environment_of
        self.wake = wake

    async def request_off_loop(self, identity: Identity, body: Any) -> dict[str, Any]:
        """The subclass's ``request`` in a worker thread, like a job's submission (its checks and its write wait
        on the store), then the scheduling loop woken here, on the event loop, where a loop not started yet
        can start (see :meth:`Workloads.submit_off_loop`)."""
        requested = await asyncio.get_running_loop().run_in_executor(None, self.request, identity, body)
        self.wake()
        return requested

    def started(self, identity: Identity, workload_id: int, where: str | None) -> dict[str, Any]:
        """Record that the caller launched the placed workload; its environment in the answer."""
        row = self.record_start(self.placed_for_start(identity, workload_id), where)
        return {"workload": workload_json(row), "environment": self.environment_of(row)}

    def placed_for_start(self, identity: Identity, workload_id: int) -> WorkloadRow:
        """The owner's workload, placed and not stopping (409 otherwise)."""
        row = self.own(identity, workload_id, f"{self.kind.value}.start")
        if row.state not in ACTIVE_STATES or not row.placement or row.stopping is not None:
            raise Conflict(Message(N_("{kind} workload {workload} is {state}, not placed; it cannot start now"),
                                   kind=row.kind, workload=row.id, state=row.stopping or row.state),
                           reason="not-placed")
        return row

    def record_start(self, row: WorkloadRow, where: str | None) -> WorkloadRow:
        self.repository.update_workload(
            row.id, event="started", reason=f"{row.name} running as {where or 'its launcher says'}",
            data={"where": where}, state="running", started_at=self.clock.wall(), attempts=(row.attempts or 0) + 1)
        return self.repository.workload(row.id)

    def release(self, identity: Identity, workload_id: int, failed: str | None = None) -> dict[str, Any]:
        """End the workload and give its devices back (a waiting one is simply cancelled; one whose launch
        ``failed`` ends failed, with that reason)."""
        row = self.own(identity, workload_id, f"{self.kind.value}.release", stop=True)
        if row.state in FINAL_STATES:
            return workload_json(row)
        if failed is not None:
            state, why = "failed", f"{row.name} could not start: {failed}"
        elif row.stopping in ("cancel", "preempt"):  # the scheduler asked for the stop: its reason stays
            state, why = "cancelled", row.reason or "stopped"
        elif row.state == "running":
            state, why = "succeeded", f"{row.name} stopped by {identity.user}"
        else:
            state, why = "cancelled", f"{row.name}: start abandoned by {identity.user} before it ran"
        ended = self.repository.update_workload_if(
            row.id, lambda current: current.state in (*ACTIVE_STATES, *PENDING_STATES), event="released", reason=why,
            state=state, placement=None, node=None, flavor=None, held_cpu_milli=0, held_memory_mib=0,
            held_device_milli=0, stopping=None, preempting_until=None, finished_at=self.clock.wall(),
        )
        self.wake()  # its devices may start the next workload at once
        return workload_json(ended or self.repository.workload(row.id))

    def own(self, identity: Identity, workload_id: int, action: str, stop: bool = False) -> WorkloadRow:
        """The workload, if it is one of this kind that ``identity`` may start (its owner) or stop."""
        row = self.workloads.get(identity, workload_id, action)  # 404 unknown, 403 another tenant's
        if stop:
            self.workloads.access.require_stop(identity, row, action)
        elif row.user != identity.user:
            self.workloads.access.deny(identity, action, f"workload/{row.id}",
                                       Message(N_("{kind} workload {workload} is {owner}'s; only they launch it"),
                                               kind=row.kind, workload=row.id, owner=row.user))
        if not self.launches(row):
            raise InvalidRequest(Message(N_("workload {workload} is a {kind}, not a {wanted} its caller launches"),
                                         workload=row.id, kind=row.kind, wanted=self.kind.value), field="workload_id")
        return row

    def launches(self, row: WorkloadRow) -> bool:
        return row.kind == self.kind.value
