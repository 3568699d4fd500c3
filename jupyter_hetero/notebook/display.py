"""Rich tables for the notebook: HTML where it renders, aligned plain text everywhere else.

    Table(["queue", "pending"], [["training", 3]], title="Queues")   # display() it, or print() it
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..i18n import N_, translate

__all__ = [
    "Table",
    "array_label",
    "array_states",
    "attempts_line",
    "eta_text",
    "explanation_lines",
    "inadmissible_words",
    "nodes_table",
    "queues_table",
    "quota_table",
    "schedule_job_words",
    "schedule_runs_table",
    "schedule_state",
    "schedules_table",
    "services_table",
    "status_line",
    "templates_table",
    "wall_time",
    "workloads_table",
]


class Table:
    def __init__(self, columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str = ""):
        self.columns = list(columns)
        self.rows = [["" if cell is None else str(cell) for cell in row] for row in rows]
        self.title = title

    def __repr__(self) -> str:
        widths = [max([len(c)] + [len(row[i]) for row in self.rows]) for i, c in enumerate(self.columns)]
        line = "  ".join(c.upper().ljust(w) for c, w in zip(self.columns, widths))
        body = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in self.rows]
        return "\n".join(([self.title] if self.title else []) + [line] + body)

    def _repr_html_(self) -> str:
        head = "".join(f"<th style='text-align:left'>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td style='text-align:left'>{html.escape(cell)}</td>" for cell in row) + "</tr>"
            for row in self.rows
        )
        title = f"<caption style='text-align:left'><b>{html.escape(self.title)}</b></caption>" if self.title else ""
        return f"<table class='jp-hetero-table'>{title}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _mem(mib: int | None) -> str:
    if not mib:
        return "-"
    return f"{mib / 1024:g}Gi" if mib >= 1024 else f"{mib}Mi"


def _request(request: dict) -> str:
    parts = [f"{request['cpu_milli'] / 1000:g} CPU", _mem(request["memory_mib"])]
    if request.get("devices"):
        parts.append(f"{request['devices']}x device" + (f" >= {_mem(request['device_memory_mib'])}" if request.get("device_memory_mib") else ""))
    elif request.get("device_milli"):
        parts.append(f"{request['device_milli'] / 1000:g} device")
    if request.get("replicas", 1) > 1:
        parts.append(f"x{request['replicas']} replicas")
    return ", ".join(parts)


def _localized(text: dict, language: str) -> str:
    return text.get("zh" if language.startswith("zh") else "en", text.get("en", ""))


def _in(language: str, *texts: str) -> list[str]:
    return [translate(text, language) for text in texts]


def templates_table(templates: list[dict], language: str = "en") -> Table:
    return Table(
        _in(language, N_("template"), N_("task"), N_("default request"), N_("flavors (in order)"), N_("queue"),
            N_("kinds")),
        [[t["name"], _localized(t["display"], language), _request(t["request"]), ", ".join(t["flavors"]), t["queue"],
          ", ".join(t["kinds"])] for t in templates],
        title=translate(N_("Templates"), language),
    )


def queues_table(queues: list[dict], language: str = "en") -> Table:
    return Table(
        _in(language, N_("queue"), N_("class"), N_("priority"), N_("pending"), N_("running"), N_("max wait"),
            N_("preempts"), N_("retries")),
        [[q["name"], q["class"], q["priority"], q["pending"], q["running"],
          translate(N_("{minutes} min"), language).format(minutes=q["max_wait_s"] // 60),
          ", ".join(q["preemption"]["may_preempt"]) or "-", q["failure"]["retries"]] for q in queues],
        title=translate(N_("Queues"), language),
    )


def quota_table(tenant: dict) -> Table:
    rows = []
    for quota in tenant["quota"]:
        nominal, used = quota["nominal"], quota["used"]
        rows.append([quota["flavor"], f"{used['device_milli'] / 1000:g} / {nominal['device_milli'] / 1000:g}",
                     f"{used['cpu_milli'] / 1000:g} / {nominal['cpu_milli'] / 1000:g}",
                     f"{_mem(used['memory_mib'])} / {_mem(nominal['memory_mib'])}"])
    return Table(["flavor", "devices used / quota", "CPU used / quota", "memory used / quota"], rows,
                 title=f"Tenant {tenant['tenant']} ({tenant['role']})")


def nodes_table(nodes: list[dict]) -> Table:
    rows = []
    for node in nodes:
        accelerator = node.get("accelerator")
        devices = f"{accelerator['count']}x {accelerator['model']} {_mem(accelerator['memory_mib'])}" if accelerator else "-"
        rows.append([node["name"], node["flavor"] or "-", f"{node['cpu_milli'] // 1000}", _mem(node["memory_mib"]),
                     devices, node["state"], "yes" if node["emulated"] else "no"])
    return Table(["node", "flavor", "CPU", "memory", "accelerators", "state", "emulated"], rows, title="Nodes")


def eta_text(eta: float | None, now: float | None = None) -> str:
    if eta is None:
        return "ETA unknown"
    minutes = round(max(0.0, eta - (now or time.time())) / 60)
    return f"ETA ~{minutes} min" if minutes else "ETA now"


# Why an inadmissible workload waits, by what its blockers have in common, and what lifts it: the headline above its
# blockers (which give the figures), as the server's reason (platform/scheduling/inadmissible.py) tells them apart.
_INADMISSIBLE = {
    "exceeds-quota": (N_("request exceeds the tenant's quota: it can never run as asked"),
                      N_("it is queued again when the catalog's quota grows")),
    "node-lost": (N_("the nodes of its flavor were lost"),
                  N_("it waits until one is back or another node joins the flavor")),
    "cordoned": (N_("the nodes of its flavor are cordoned"),
                 N_("it waits until one is uncordoned or another node joins the flavor")),
    "lost-or-cordoned": (N_("the nodes of its flavors are lost or cordoned"),
                         N_("it waits until one is back or uncordoned, or another node joins")),
    "nodes-and-quota": (N_("no node or quota can ever give it what it asks"),
                        N_("it is queued again when the inventory or the catalog's quota changes")),
    "nodes": (N_("no node can ever hold it"), N_("it is queued again when the inventory changes")),
    "stranded": (N_("the reloaded catalog no longer has its queue, tenant or template"),
                 N_("it waits until they are back, or until it is cancelled")),
}
# The reason's first words where the blockers are not at hand (a list of workloads answers without them).
_REASON_STARTS = (("its tenant's quota can never give it", "exceeds-quota"),
                  ("no node or quota can ever give it", "nodes-and-quota"), ("its nodes were lost", "node-lost"),
                  ("its nodes are cordoned", "cordoned"), ("its nodes are lost or cordoned", "lost-or-cordoned"),
                  ("the reloaded catalog has no ", "stranded"))


def inadmissible_words(workload: dict, language: str = "en") -> tuple[str, str]:
    """Why an inadmissible workload waits and what lifts it, in ``language``, from its blockers' kinds (else its
    reason): ``("request exceeds the tenant's quota: it can never run as asked", "it is queued again when ...")``."""
    kinds = {blocker["kind"] for blocker in workload.get("blockers") or ()}
    if not kinds:
        reason = workload.get("reason") or ""
        case = next((case for start, case in _REASON_STARTS if reason.startswith(start)), "nodes")
    elif all(kind.startswith("exceeds-quota") for kind in kinds):
        case = "exceeds-quota"
    elif any(kind.startswith("exceeds-quota") for kind in kinds):
        case = "nodes-and-quota"
    elif kinds & {"node-lost", "cordoned"}:  # a node back (or uncordoned) lifts it, whatever the other flavors lack
        back = kinds & {"node-lost", "cordoned"}
        case = back.pop() if len(back) == 1 else "lost-or-cordoned"
    else:
        case = "nodes"
    headline, lifted = _INADMISSIBLE[case]
    return translate(headline, language), translate(lifted, language)


def status_line(workload: dict) -> str:
    """One line a person can read: "queued in training - position 3, ETA ~12 min; quota: ..."; for work
    no node could ever hold, "inadmissible in training - no node can ever hold it (capacity: ...); ..."."""
    state = workload["state"]
    if state == "inadmissible":
        why = workload["blockers"][0]["message"] if workload.get("blockers") else workload.get("reason") or ""
        headline, lifted = inadmissible_words(workload)
        return f"inadmissible in {workload['queue']} - {headline}" + (f" ({why})" if why else "") + f"; {lifted}"
    if state in ("queued", "preempted") and "position" in workload:
        line = f"{state} in {workload['queue']} - position {workload['position']}, {eta_text(workload.get('eta'))}"
        if workload.get("blockers"):
            line += f" ({workload['blockers'][0]['message']})"
        return line
    if workload.get("placement"):
        slot = workload["placement"]["slots"][0]
        devices = ",".join(str(d["index"]) for d in slot["devices"])
        return f"{state} on {slot['node']} ({workload['placement']['flavor']}{': devices ' + devices if devices else ''})"
    return f"{state}" + (f": {workload['reason']}" if workload.get("reason") else "")


# The order an array's tasks' states are counted in: what runs, what waits, how they ended.
_TASK_STATE_ORDER = ("running", "starting", "admitted", "queued", "preempted", "inadmissible", "succeeded", "failed",
                     "cancelled", "lost")


def array_label(array: dict) -> str:
    """An array as Slurm names it, from a task's ``array``: its id, its indices and its limit, ``12[0-99%10]``."""
    return f"{array['id']}[{array['indices']}" + (f"%{array['limit']}" if array.get("limit") else "") + "]"


def array_states(tasks: list[dict]) -> str:
    """An array's tasks' states counted, as ``ls`` and ``%hetero_cancel --array`` show them:
    ``running 10, queued 80, succeeded 10``."""
    counts = {state: sum(task["state"] == state for task in tasks) for state in _TASK_STATE_ORDER}
    return ", ".join(f"{state} {count}" for state, count in counts.items() if count)


def attempts_line(workload: dict) -> str:
    """How many attempts a workload made and why they ended; only failures count against its retries."""
    return (f"attempts {workload.get('attempt_count') or 0}: {workload.get('failures') or 0} failed, "
            f"{workload.get('preemptions') or 0} preempted, {workload.get('node_losses') or 0} lost with their node")


def explanation_lines(explanation: dict, preview: dict | None = None) -> list[str]:
    """``GET /workloads/{id}/explain`` (and a preemption preview) as lines for a terminal or a cell."""
    lines = [f"workload {explanation['id']}: {explanation['summary']}"]
    lines += [f"  {text}" for text in explanation["lines"]]
    if explanation.get("eta"):
        because = explanation.get("eta_because")
        lines.append(f"  {eta_text(explanation['eta'])}" + (f", when workload {because} ends" if because else ""))
    if preview is not None:
        victims = ", ".join(f"{v['id']} ({v['reason']})" for v in preview["victims"]) or "none"
        lines.append(f"  a preemption now would evict: {victims}")
    return lines


def workloads_table(workloads: list[dict]) -> Table:
    return Table(
        ["id", "kind", "state", "queue", "template", "where / why"],
        [[w["id"], w["kind"], w["state"], w["queue"], w["template"], status_line(w)] for w in workloads],
        title="Workloads",
    )


def services_table(services: list[dict], title: str = "Services") -> Table:
    rows = []
    for service in services:
        traffic, rollout = service["traffic"], service["rollout"]
        latency = traffic["latency_ms"]
        rows.append([service["name"], f"r{service['revision']}", f"{service['ready_replicas']}/{service['replicas']}",
                     f"{traffic['requests_per_s']:.2f}", latency["p95"] if latency else "-",
                     "-" if traffic["error_rate"] is None else f"{traffic['error_rate']:.1%}",
                     f"{service['device_utilisation']['device_util_pct']:g}%" if service["device_utilisation"] else "-",
                     f"canary r{rollout['revision']} ({rollout['traffic']:.0%})" if rollout else "-",
                     service["endpoint"]])
    return Table(["service", "revision", "ready", "req/s", "p95 ms", "errors", "devices", "rollout", "endpoint"],
                 rows, title=title)


def wall_time(epoch_s: float | None, zone: str) -> str:
    """``epoch_s`` as the wall time in ``zone`` ("2026-12-08 02:00"); "-" for none; UTC where the zone is unknown."""
    if epoch_s is None:
        return "-"
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        tz = ZoneInfo("UTC")
    return datetime.fromtimestamp(epoch_s, tz).strftime("%Y-%m-%d %H:%M")


_SCHEDULE_STATES = {"active": N_("active"), "paused": N_("paused"), "deleted": N_("deleted")}


def schedule_state(state: str, language: str = "en") -> str:
    """A schedule's state (active, paused, deleted) in ``language``."""
    return translate(_SCHEDULE_STATES.get(state, state), language)


def schedule_job_words(job: dict) -> str:
    """What a schedule's job runs, its kind first: ``command python x.py``, ``script /w/s.py 1``, ``code``."""
    kind, payload = job["payload"], job[job["payload"]]
    if kind == "command":
        return f"{kind} " + " ".join(payload)
    if kind in ("script", "notebook"):
        return f"{kind} {payload['path']}" + "".join(f" {arg}" for arg in payload.get("args") or ())
    return kind


def schedule_runs_table(schedule: dict, language: str = "en") -> Table:
    """A schedule's latest runs, newest first, their times in its zone: the workload (an array's id), when it was
    due and submitted, its state, and whether it was a late run for missed due times."""
    zone = schedule["timezone"]
    late, array = translate(N_("late"), language), translate(N_("array"), language)
    rows = [[f"{run['workload']} ({array})" if run.get("array") else run["workload"], wall_time(run["due_at"], zone),
             wall_time(run["submitted_at"], zone), run["state"], late if run["late"] else ""]
            for run in schedule["runs"]]
    return Table(_in(language, N_("workload"), N_("due"), N_("submitted"), N_("state"), N_("late")), rows,
                 title=translate(N_("Runs of schedule {schedule}"), language).format(schedule=schedule["id"]))


def schedules_table(schedules: list[dict], language: str = "en") -> Table:
    """``GET /schedules`` as a table: cadence in words (as the server wrote it, in ``language``), zone, next and
    last run in the schedule's zone, the last run's workload and state, and why a due run was not submitted."""
    rows = []
    for schedule in schedules:
        zone = schedule["timezone"]
        last = schedule["runs"][0] if schedule["runs"] else None
        state = schedule_state(schedule["state"], language)
        rows.append([schedule["id"], schedule["name"], state, schedule["description"], zone,
                     wall_time(schedule["next_run_at"], zone),
                     f"{wall_time(last['submitted_at'], zone)} #{last['workload']} {last['state']}" if last else "-",
                     schedule["last_error"] or ""])
    return Table(
        _in(language, N_("id"), N_("schedule"), N_("state"), N_("when"), N_("time zone"), N_("next run"),
            N_("last run"), N_("last error")),
        rows,
        title=translate(N_("Schedules"), language),
    )
