"""Submitting, listing, describing and cancelling workloads.

A submission is validated completely (template, parameters within bounds, queue allowed,
payload well-formed) before anything is written; then it is stored with its `submitted` event
in one transaction, and only then acknowledged. Scheduling happens in :mod:`.scheduler`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...catalog import Catalog, WorkloadKind
from ...engine import Pending, render
from ...errors import Conflict, InvalidRequest, NotFound
from ...i18n import N_, Message
from ...models import ListWorkloadsQuery, SubmitWorkload
from ...store import ACTIVE_STATES, PENDING_STATES, Repository
from ...store.tables import EventRow, WorkloadRow
from ..access import Access, follow_up_of
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from .arrays import parse_array, task_of
from .enqueue import Enqueuer
from .explain import explanation
from .job_spec import JobSpecs, duration_s

__all__ = ["Workloads", "event_json", "workload_json"]

FINAL_STATES = ("succeeded", "failed", "cancelled", "lost")
# Reads of a workload a cancel may take while the scheduler keeps moving it on (each move is a tick).
_CANCEL_TRIES = 5
# How many tasks one array may have, unless the server says (HeteroApp.max_array_tasks).
MAX_ARRAY_TASKS = 10_000


class Workloads(ReadsLiveCatalog):
    """The workloads API: everything but the scheduling loop."""

    def __init__(self, catalog: Catalog | LiveCatalog, repository: Repository, access: Access, root_dir: Path,
                 pending_info: Callable[[int], Pending | None], wake: Callable[[], None], user_root_template: str = "",
                 max_array_tasks: int = MAX_ARRAY_TASKS):
        self.live_catalog = LiveCatalog.of(catalog)
        self.max_array_tasks = max_array_tasks
        self.repository = repository
        self.access = access
        # What a job runs and where, inside the submitter's own root.
        self.specs = JobSpecs(root_dir, user_root_template)
        self.pending_info = pending_info
        self.wake = wake
        # Every kind is queued through it: jobs here, kernels, servers and service replicas by their services.
        self.enqueuer = Enqueuer(catalog=self.live_catalog, repository=repository, access=access, wake=wake)
        # Whether a follow-up job may be live (see end_orphaned_follow_ups); unknown, so True, after a restart.
        self._follow_ups_live = True

    # -- submit ------------------------------------------------------------------------------

    def submit(self, identity: Identity, body: SubmitWorkload, request_key: str | None = None, *,
               schedule: int | None = None) -> dict[str, Any]:
        """Store the submission; ``request_key`` (the caller's Idempotency-Key) makes sending it again store it once:
        a second try answers with the workload the first stored. ``schedule``: the schedule whose run it is."""
        # A 400 naming ``array`` for a malformed one, or ``name`` when its tasks' names would be too long.
        array = None if body.array is None else parse_array(body.array, max_tasks=self.max_array_tasks, name=body.name)
        checked = self.enqueuer.check(identity, WorkloadKind(body.kind), body.template, body.parameters, body.queue)
        spec = self.specs.build(body, self.specs.root_of(identity))
        if schedule is not None:
            spec["schedule"] = schedule
        if body.after:
            spec["after"] = self._awaited(identity, body)
        if identity.own_work_only:  # a follow-up of the workload whose credential submitted it: it ends with that one
            spec["parent"] = identity.workload
            self._follow_ups_live = True
        what = f"a {body.payload} job" if array is None else f"a {body.payload} job array of {len(array.indices)} tasks"
        fields = dict(
            name=body.name, spec=spec, runtime_s=duration_s(body.runtime, "runtime"), request_key=request_key,
            reason=f"{identity.user} submitted {what} to queue {checked.queue}",
            data={"template": checked.template.name, "parameters": body.parameters,
                  "flavors": list(checked.resolved.flavors)},
        )
        # An array is checked once, as one submission, and stored whole: a task per index, one transaction.
        stored = (self.enqueuer.enqueue(checked, **fields) if array is None
                  else self.enqueuer.enqueue_array(checked, array, **fields))
        return workload_json(stored, viewer=identity.user)

    def check(self, identity: Identity, body: SubmitWorkload) -> None:
        """Every check :meth:`submit` makes of ``body``, nothing stored: a schedule's job, when it is defined."""
        if body.array is not None:
            parse_array(body.array, max_tasks=self.max_array_tasks, name=body.name)
        self.enqueuer.check(identity, WorkloadKind(body.kind), body.template, body.parameters, body.queue)
        self.specs.build(body, self.specs.root_of(identity))
        duration_s(body.runtime, "runtime")

    async def submit_off_loop(self, identity: Identity, body: SubmitWorkload,
                              request_key: str | None = None) -> dict[str, Any]:
        """:meth:`submit` in a worker thread (a notebook is read and parsed to be checked, which takes as long as
        the file is big; an array's tasks are stored in one write, as long as it has tasks), then the scheduling
        loop woken here, on the event loop: a wake-up from that thread cannot start a loop that has not started
        yet (it starts with the server, or with the first wake-up on the loop)."""
        submitted = await asyncio.get_running_loop().run_in_executor(None, self.submit, identity, body, request_key)
        self.wake()
        return submitted

    def resubmit(self, identity: Identity, workload_id: int) -> dict[str, Any]:
        """A new job with the same template, queue, parameters and payload, submitted by the caller; for the job's own
        submitter, also where it ran, its Python and what it waited for (``after``, checked again as a submission's
        is: a workload gone since is a 404 naming ``after.N.workload``, one that ended the wrong way fails the new job
        at its first tick with the reason, as Slurm's requeue keeps a job's dependencies and evaluates them again)."""
        row = self.get(identity, workload_id, "workload.resubmit")
        if row.kind != "job":
            raise InvalidRequest(Message(N_("workload {workload} is a {kind}; only jobs can be re-submitted"),
                                         workload=workload_id, kind=row.kind), field="id")
        spec = row.spec
        # The env values are the submitter's (they may hold their secrets): another user's new job starts without them.
        env = (spec.get("env") or {}) if identity.user == row.user else {}
        body = {"kind": "job", "template": row.template, "queue": row.queue, "name": row.name,
                "parameters": row.request.get("parameters") or {}, "env": env}
        if identity.user == row.user:  # where, with which Python and after what: the submitter's, inside their root
            body.update({"cwd": spec.get("cwd") or None, "python": spec.get("python"),
                         "after": spec.get("after") or None})
        if "command" in spec:
            body["command"] = spec["command"]
        elif "script" in spec:
            body["script"] = spec["script"]
        elif "code" in spec:
            body["code"] = spec["code"]
        else:
            body["notebook"] = {"path": spec["notebook"]["path"], "parameters": spec["notebook"]["parameters"]}
        return self.submit(identity, SubmitWorkload.model_validate({k: v for k, v in body.items() if v is not None}))

    def _awaited(self, identity: Identity, body: SubmitWorkload) -> list[dict[str, Any]]:
        """The workloads a job waits for, as stored in its spec: each must exist (404) and be one the submitter may
        see (403, audited), as describing it would ask, each named by its place in ``after``."""
        for index, after in enumerate(body.after):
            field = f"after.{index}.workload"
            row = self.repository.workload(after.workload)
            if row is None:
                raise NotFound(Message(N_("workload {workload} does not exist"), workload=after.workload), field=field)
            self.access.require_see(identity, row, "workload.read")
        return [{"workload": after.workload, "condition": after.condition} for after in body.after]

    def check_access(self, identity: Identity, template: str, queue: str) -> None:
        """404 for an unknown queue; 403 (audited) for a template or queue the tenant may not use."""
        self.enqueuer.check_access(identity, template, queue)

    # -- read --------------------------------------------------------------------------------

    def get(self, identity: Identity, workload_id: int, action: str = "workload.read") -> WorkloadRow:
        return self._seen(identity, workload_id, self.repository.workload(workload_id), action)

    def _seen(self, identity: Identity, workload_id: int, row: WorkloadRow | None, action: str) -> WorkloadRow:
        """``row``, if it exists and ``identity`` may see it (a 404 or an audited 403 otherwise)."""
        if row is None:
            raise NotFound(Message(N_("workload {workload} does not exist"), workload=workload_id))
        self.access.require_see(identity, row, action)
        return row

    def list(self, identity: Identity, query: ListWorkloadsQuery) -> list[dict[str, Any]]:
        tenant = query.tenant
        if tenant is not None and tenant != identity.tenant.name and not identity.is_platform_admin:
            self.access.deny(identity, "workload.list", f"tenant/{tenant}",
                             Message(N_("you may list only your tenant's workloads ({tenant})"),
                                     tenant=identity.tenant.name))
        if tenant is None and not identity.is_platform_admin:
            tenant = identity.tenant.name
        rows = self.repository.workloads(
            tenant=tenant, user=identity.user if query.mine or identity.own_work_only else None, queue=query.queue,
            states=(query.state,) if query.state else None, kind=query.kind.value if query.kind else None,
            limit=None if identity.own_work_only else query.limit, array=query.array,
        )
        if identity.own_work_only:  # its own workload and its follow-ups, newest first when limited, as the query's
            rows = [row for row in rows if self.access.may_see(identity, row)]
            rows = sorted(rows, key=lambda row: -row.id)[:query.limit] if query.limit else rows
        last_nodes = self.repository.last_attempt_nodes([row.id for row in rows])
        return [workload_json(row, pending=self.pending_info(row.id), viewer=identity.user, last_node=last_nodes.get(row.id))
                for row in rows]

    def describe(self, identity: Identity, workload_id: int, language: str = "en") -> dict[str, Any]:
        found, attempted = self.repository.workload_with_attempts(workload_id)  # one transaction, not two
        row = self._seen(identity, workload_id, found, "workload.read")
        attempts = [
            {"number": a.number, "node": a.node, "started_at": a.started_at, "ended_at": a.ended_at,
             "exit_code": a.exit_code, "outcome": a.outcome, "reason": a.reason, "metrics": a.metrics,
             "archive": a.archive_path, "placement": a.placement}
            for a in attempted
        ]
        return workload_json(row, attempts=attempts, pending=self.pending_info(row.id), language=language,
                             viewer=identity.user, last_node=attempted[-1].node if attempted else None)

    def explain(self, identity: Identity, workload_id: int, language: str = "en") -> dict[str, Any]:
        """Why the workload waits, as numbered lines of its blockers, or what it is doing or how it ended."""
        return explanation(self.describe(identity, workload_id, language), language)

    def events(self, identity: Identity, workload_id: int) -> list[dict[str, Any]]:
        self.get(identity, workload_id, "workload.events")
        return [event_json(e) for e in self.repository.events(workload_id=workload_id)]

    def log_file(self, identity: Identity, workload_id: int, attempt: int | None) -> tuple[Path | None, bool]:
        """The log file of an attempt (the latest by default), and whether that attempt is still running."""
        self.get(identity, workload_id, "workload.logs")
        attempts = self.repository.attempts(workload_id)
        if attempt is not None:
            chosen = next((a for a in attempts if a.number == attempt), None)
            if chosen is None:
                raise NotFound(Message(N_("workload {workload} has no attempt {attempt} (it has {count})"),
                                       workload=workload_id, attempt=attempt, count=len(attempts)), field="attempt")
        else:
            chosen = attempts[-1] if attempts else None
        if chosen is None:
            return None, False
        return Path(chosen.log_path), chosen.ended_at is None

    def archived_file(self, identity: Identity, workload_id: int, relative: str, attempt: int | None) -> Path:
        """A file an attempt left in its archive (the latest attempt by default)."""
        self.get(identity, workload_id, "workload.files")
        attempts = [a for a in self.repository.attempts(workload_id) if a.archive_path]
        chosen = next((a for a in attempts if a.number == attempt), None) if attempt else (attempts[-1] if attempts else None)
        if chosen is None:
            missing = (Message(N_("workload {workload} has no archived attempt {attempt}"), workload=workload_id,
                               attempt=attempt) if attempt else
                       Message(N_("workload {workload} has no archived attempt"), workload=workload_id))
            raise NotFound(missing, field="attempt")
        root = Path(chosen.archive_path).resolve()
        path = (root / relative).resolve()
        if not path.is_relative_to(root):
            raise InvalidRequest(Message(N_("path: {path!r} is outside the attempt's archive"), path=relative),
                                 field="path")
        if not path.is_file():
            raise NotFound(Message(N_("attempt {attempt} of workload {workload} archived no file {path!r}"),
                                   attempt=chosen.number, workload=workload_id, path=relative), field="path")
        return path

    # -- stop --------------------------------------------------------------------------------

    def cancel(self, identity: Identity, workload_id: int, now: float) -> dict[str, Any]:
        """Stop a workload for good (``now`` is wall time). A cancel always wins: over a preemption,
        a time limit or a lost node being handled, the workload ends cancelled, never requeued."""
        row = self.get(identity, workload_id, "workload.cancel")
        self.access.require_stop(identity, row, "workload.cancel")
        if row.state in FINAL_STATES:
            return workload_json(row, viewer=identity.user)
        if identity.user != row.user:
            self.access.record(identity, "workload.cancel", f"workload/{row.id}", {"owner": row.user})
        return workload_json(self.end(row, f"cancelled by {identity.user}", now), viewer=identity.user)

    def cancel_array(self, identity: Identity, workload_id: int, now: float) -> dict[str, Any]:
        """Cancel every unfinished task of the array ``workload_id`` is one of (``now`` is wall time), as one cancel
        of each would, the waiting ones in one write; the named task as it is then. Who may cancel one task may
        cancel its array: every task has the same owner."""
        row = self.get(identity, workload_id, "workload.cancel")
        task = task_of(row)
        if task is None:
            raise InvalidRequest(Message(N_("workload {workload} is not a task of an array: cancel it without "
                                            "array=true"), workload=workload_id), field="array")
        self.access.require_stop(identity, row, "workload.cancel")
        tasks = self.repository.workloads(array=task["id"])
        if identity.user != row.user:
            self.access.record(identity, "workload.cancel", f"array/{task['id']}", {"owner": row.user,
                                                                                   "tasks": len(tasks)})
        why = f"cancelled by {identity.user} with its array {task['id']}"
        waiting = [t.id for t in tasks if t.state in PENDING_STATES]
        ended = {t.id for t in self.repository.update_workloads_if(
            waiting, lambda current: current.state in PENDING_STATES, event="cancelled", reason=f"{why} while waiting",
            state="cancelled", finished_at=now)}
        for other in tasks:  # running ones stop within their grace period; one admitted meanwhile is read again
            if other.state not in FINAL_STATES and other.id not in ended:
                self.end(other, why, now)
        self.wake()
        return workload_json(self.repository.workload(workload_id), viewer=identity.user)

    def end_orphaned_follow_ups(self, now: float) -> int:
        """Cancel every follow-up job whose parent (the workload whose credential submitted it) no longer runs:
        nothing a workload's credential creates outlives it. How many were cancelled."""
        if not self._follow_ups_live:
            return 0  # none submitted since the last look found none: no query on every tick
        live = self.repository.workloads(kind=WorkloadKind.JOB.value, states=(*PENDING_STATES, *ACTIVE_STATES))
        follow_ups = [(row, parent) for row in live if (parent := follow_up_of(row)) is not None]
        self._follow_ups_live = bool(follow_ups)
        ended = 0
        for row, parent in follow_ups:
            found = self.repository.workload(parent)
            if (found is None or found.state not in ACTIVE_STATES) and row.stopping != "cancel":
                try:
                    self.end(row, f"its parent workload {parent} ended (a follow-up job ends with the workload "
                                  "that submitted it)", now)
                except Conflict:
                    continue  # it kept changing state: the next tick tries again
                ended += 1
        return ended

    def end(self, row: WorkloadRow, why: str, now: float) -> WorkloadRow:
        """Cancel ``row`` for good with the reason ``why`` (a user's cancel, a service scaled down)."""
        # The scheduler's tick writes this row from its own thread: each write below happens only if
        # the row is still as read (else it is read again), so an admission or a stop recorded
        # meanwhile is never overwritten blindly, and the cancel still lands.
        for _ in range(_CANCEL_TRIES):
            written = self._cancel_as_read(why, row, now)
            if written is not None:
                row = written
                break
            row = self.repository.workload(row.id)
        else:
            raise Conflict(Message(N_("workload {workload} changed state {tries} times while being cancelled; try again"),
                                   workload=row.id, tries=_CANCEL_TRIES))
        self.wake()
        return row

    def _cancel_as_read(self, why: str, row: WorkloadRow, now: float) -> WorkloadRow | None:
        """Record the cancel if the workload is still as ``row`` shows it; None when it changed."""
        if row.state in FINAL_STATES or row.stopping == "cancel":
            return row
        if row.state in PENDING_STATES:
            return self.repository.update_workload_if(
                row.id, lambda current: current.state == row.state, event="cancelled",
                reason=f"{why} while waiting", state="cancelled", finished_at=now,
            )
        deadline = now + self._grace(row)
        if row.preempting_until is not None:  # a stop already under way keeps its (earlier) deadline
            deadline = min(deadline, row.preempting_until)
        return self.repository.update_workload_if(
            row.id, lambda current: current.state in ACTIVE_STATES and current.stopping == row.stopping,
            event="cancelling",
            reason=why + (f" while stopping ({row.stopping})" if row.stopping else ""),
            data={"was_stopping": row.stopping} if row.stopping else None,
            stopping="cancel", preempting_until=deadline,
        )

    def _grace(self, row: WorkloadRow) -> float:
        queue = self.catalog.queue(row.queue)
        return queue.preemption.grace_s if queue else 30


def event_json(event: EventRow) -> dict[str, Any]:
    """An event as the API shows it."""
    return {"id": event.id, "at": event.at, "type": event.type, "reason": event.reason, "data": event.data}


def workload_json(row: WorkloadRow, *, attempts: list[dict] | None = None, pending: Pending | None = None,
                  language: str = "en", viewer: str | None = None, last_node: str | None = None) -> dict[str, Any]:
    """A workload as ``viewer`` (a user name) sees it through the API: the values of its env only if they
    submitted it (they may be their secrets); anyone else sees the names, each with a null value. ``last_node``:
    its latest attempt's node, which a list shows after the workload ended (its own ``node`` is cleared then)."""
    spec = row.spec
    if viewer != row.user and (spec or {}).get("env"):
        spec = {**spec, "env": dict.fromkeys(spec["env"])}
    data: dict[str, Any] = {
        "id": row.id, "kind": row.kind, "name": row.name, "tenant": row.tenant, "user": row.user,
        "template": row.template, "queue": row.queue, "state": row.state, "reason": row.reason,
        "request": row.request, "spec": spec,
        "placement": row.placement, "flavor": row.flavor, "node": row.node, "last_node": last_node,
        "attempt_count": row.attempts, "failures": row.failures or 0, "preemptions": row.preemptions or 0,
        "node_losses": row.node_losses or 0, "created_at": row.created_at, "updated_at": row.updated_at,
        "admitted_at": row.admitted_at, "started_at": row.started_at, "finished_at": row.finished_at,
        "time_limit_s": row.time_limit_s, "priority_boost": row.priority_boost, "escalated": row.escalated,
        "stopping": row.stopping, "not_before": row.not_before,
        "schedule": (row.spec or {}).get("schedule"),
        "active": row.state in ACTIVE_STATES, "array": task_of(row),
    }
    if attempts is not None:
        data["attempts"] = attempts
    if pending is not None and (row.state in PENDING_STATES or pending.held_by):
        if pending.held_by:
            data["held_by"] = pending.held_by
        data.update({
            "position": pending.position,
            "eta": pending.eta,
            "eta_because": pending.eta_because,
            "blockers": [
                {"kind": b.kind, "flavor": b.flavor, "message": render(b, language), "params": b.params}
                for b in pending.blockers
            ],
        })
    return data
