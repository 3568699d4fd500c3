"""One workload's evidence chain as text (for a terminal) or as one self-contained HTML page (no script, no fetch),
in English or Simplified Chinese.

    text = render_evidence_text(chain, lang="en")   # the dict ``GET /workloads/{id}/evidence`` answers
    page = render_evidence_html(chain, lang="zh")

Pure: no I/O, no clock (times are printed in the local time zone, as the acceptance report's).
"""

from __future__ import annotations

import html
import time
from typing import Any

from ..i18n import N_, translate

__all__ = ["SECTIONS", "render_evidence_html", "render_evidence_text"]

# The chain's sections in order: (key, heading).
SECTIONS = (
    ("request", N_("Request")),
    ("attempts", N_("Attempts")),
    ("wait", N_("Waits and blockers")),
    ("utilisation", N_("Utilisation")),
    ("alerts", N_("Alerts")),
    ("preemptions", N_("Preemptions")),
    ("release", N_("Release")),
    ("events", N_("Events")),
    ("audit", N_("Audit")),
)
_TEXT = {
    "title": N_("Evidence of workload {id}"),
    "attempt_line": N_("attempt {number} on {nodes}: {outcome}"),
    "attempt_heading": N_("Attempt {number}: {outcome}"),
    "running": N_("running"),
    "by_workload": N_("workload {workload}"),
    "by_admin": N_("platform admin {user}"),
    "hidden": N_("(the submitter's)"),
    "series_line": N_("{count} samples, last {last}, peak {peak}"),
    "no_samples": N_("no metric samples were recorded for it"),
    "emulated": N_("emulated"),
    "none": N_("none"),
    "intact": N_("audit chain intact: {entries} entries checked"),
    "broken": N_("audit chain broken at entry {entry}: {problem}"),
    "not_recorded": N_("per-workload metric samples are not recorded by this server"),
    "not_admitted": N_("not admitted"),
    "not_final": N_("not final yet"),
    "log_tail": N_("log tail"),
    "truncated": N_("(earlier lines left out)"),
}
# Labels of the tables and lines, in the reader's language.
_L = {
    "kind": N_("Kind"), "name": N_("Name"), "template": N_("Template"), "queue": N_("Queue"),
    "submitter": N_("Submitter"), "tenant": N_("Tenant"), "submitted_at": N_("Submitted"),
    "parameters": N_("Parameters"), "flavors": N_("Flavors"), "resolved": N_("Resolved request"),
    "payload": N_("Payload"), "idempotency_key": N_("Idempotency key"), "attempt": N_("Attempt"),
    "nodes": N_("Nodes"), "started": N_("Started"), "ended": N_("Ended"), "exit_code": N_("Exit code"),
    "reason": N_("Reason"), "image": N_("Image"), "runtime": N_("Runtime"), "metrics": N_("Metrics"),
    "node": N_("Node"), "flavor": N_("Flavor"), "chip": N_("Chip"), "driver": N_("Driver"), "labels": N_("Labels"),
    "from": N_("Waiting from"), "admitted": N_("Admitted"), "blockers": N_("Blockers"),
    "device_util": N_("Device utilisation"), "device_memory": N_("Device memory watermark"),
    "memory": N_("Memory watermark"), "note": N_("Note"), "fired": N_("Fired"), "severity": N_("Severity"),
    "state": N_("State"), "subject": N_("Subject"), "message": N_("Message"), "at": N_("When"), "why": N_("Why"),
    "by": N_("By"), "finished": N_("Finished"), "failures": N_("Failures"), "preemptions": N_("Preemptions"),
    "node_losses": N_("Node losses"), "type": N_("Type"), "actor": N_("Actor"), "action": N_("Action"),
    "outcome": N_("Outcome"), "hash": N_("Hash"), "prev_hash": N_("Previous hash"), "attempts": N_("Attempts"),
    "series": N_("Samples"), "metric": N_("Metric"), "last": N_("Last"), "peak": N_("Peak"), "source": N_("Source"),
}

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC",sans-serif;margin:24px;color:#1f2328;max-width:1100px}
h1{font-size:22px}details{margin:10px 0;border:1px solid #d0d7de;border-radius:6px;padding:4px 10px}
summary{font-size:16px;font-weight:600;cursor:pointer}table{border-collapse:collapse;margin:6px 0;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f6f8fa}
pre{background:#f6f8fa;padding:6px;font-size:12px;overflow-x:auto;white-space:pre-wrap}
.ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}.muted{color:#656d76}
td code{word-break:break-all;font-size:11px}h3{font-size:14px;margin:12px 0 4px}
"""


class _Reader:
    """Texts in the reader's language: ``t(N_("Attempt {number}"), number=2)``; ``t.zh`` for texts kept in both."""

    def __init__(self, lang: str):
        self.lang = lang
        self.zh = lang.startswith("zh")

    def __call__(self, text: str, **params: Any) -> str:
        translated = translate(text, self.lang)
        return translated.format(**params) if params else translated


# -- text ---------------------------------------------------------------------------------------------------------


def render_evidence_text(chain: dict[str, Any], lang: str = "en") -> str:
    """The chain as plain text: a heading per section, one line per fact."""
    t = _Reader(lang)
    out = [t(_TEXT["title"], id=chain["id"]) + (f" ({chain['name']})" if chain.get("name") else "")
           + f": {chain['state']}"]
    for key, heading in SECTIONS:
        out += ["", f"== {t(heading)} =="]
        out += _TEXT_SECTIONS[key](chain[key], t) or [f"  {t(_TEXT['none'])}"]
    return "\n".join(out) + "\n"


def _pairs_text(pairs: list[tuple[str, Any]], t, indent: str = "  ") -> list[str]:
    return [f"{indent}{t(_L[key])}: {value}" for key, value in pairs]


def _request_lines(request: dict[str, Any], t) -> list[str]:
    return _pairs_text(_request_pairs(request, t), t)


def _request_pairs(request: dict[str, Any], t) -> list[tuple[str, str]]:
    key = request.get("idempotency_key")
    return [("kind", request["kind"]), ("name", request["name"] or "-"), ("template", request["template"]),
            ("queue", request["queue"]), ("submitter", request["submitter"]), ("tenant", request["tenant"]),
            ("submitted_at", _when(request["submitted_at"])), ("parameters", _flat(request["parameters"])),
            ("flavors", ", ".join(request["flavors"]) or "-"), ("resolved", _flat(request["resolved"])),
            ("payload", request.get("payload") or "-"),
            ("idempotency_key", "-" if key is None else (key or t(_TEXT["hidden"])))]


def _outcome(attempt: dict[str, Any], t) -> str:
    return attempt["outcome"] or t(_TEXT["running"])


def _attempt_lines(attempts: list[dict[str, Any]], t) -> list[str]:
    lines = []
    for attempt in attempts:
        lines.append("  " + t(_TEXT["attempt_line"], number=attempt["number"], nodes=", ".join(attempt["nodes"]),
                                outcome=_outcome(attempt, t))
                     + (f" ({attempt['reason']})" if attempt["reason"] else ""))
        lines += _pairs_text([("started", _when(attempt["started_at"])), ("ended", _when(attempt["ended_at"])),
                              ("exit_code", _flat(attempt["exit_code"])), ("image", attempt["image"] or "-"),
                              ("runtime", _flat(attempt["runtime"]))], t, "    ")
        for node, facts in attempt["node_labels"].items():
            lines.append(f"    {t(_L['node'])} {node}: {_node_summary(facts, t)}")
            if facts.get("labels"):
                lines.append(f"      {t(_L['labels'])}: {_flat(facts['labels'])}")
        if attempt["metrics"]:
            lines.append(f"    {t(_L['metrics'])}: {_flat(attempt['metrics'])}")
        tail = attempt["log_tail"]
        if tail["lines"]:
            lines.append(f"    {t(_TEXT['log_tail'])}" + (f" {t(_TEXT['truncated'])}" if tail["truncated"] else "")
                         + ":")
            lines += [f"      | {line}" for line in tail["lines"]]
    return lines


def _admitted(wait: dict[str, Any], t) -> str:
    if wait["admitted_at"] is not None:
        return f"{_when(wait['admitted_at'])} ({wait['waited_s']:g} s)"
    return t(_TEXT["not_admitted"]) + (f" ({wait['ended_by']})" if wait.get("ended_by") else "")


def _wait_lines(waits: list[dict[str, Any]], t) -> list[str]:
    lines = []
    for wait in waits:
        lines.append(f"  {t(_L['attempt'])} {wait['attempt']}: {t(_L['from'])} {_when(wait['from'])} "
                     f"({wait['from_event']}) -> {t(_L['admitted'])} {_admitted(wait, t)}")
        for step in wait["blockers"]:
            for i, blocker in enumerate(step["blockers"], 1):
                lines.append(f"    {_when(step['at']) if i == 1 else ' ' * 19} {i}. {blocker['message']}")
    return lines


def _utilisation_lines(utilisation: dict[str, Any], t) -> list[str]:
    lines = [f"  {t(_L['attempt'])} {u['attempt']}: {t(_L['device_util'])} {_unit(u['device_util_pct_mean'], '%')}, "
             f"{t(_L['device_memory'])} {_unit(u['device_memory_peak_mib'], ' MiB')}, "
             f"{t(_L['memory'])} {_unit(u['peak_rss_mib'], ' MiB')}"
             + (f" ({u['device_note']})" if u.get("device_note") else "") for u in utilisation["attempts"]]
    if not utilisation["series_recorded"]:
        lines.append(f"  {t(_TEXT['not_recorded'])}")
    elif not utilisation["series"]:
        lines.append(f"  {t(_TEXT['no_samples'])}")
    for series in utilisation["series"]:
        last, peak = _last_and_peak(series)
        lines.append(f"  {series['name']} ({series['source']}): "
                     + t(_TEXT["series_line"], count=series.get("count", len(series["points"])), last=last, peak=peak))
    return lines


def _alert_lines(alerts: list[dict[str, Any]], t) -> list[str]:
    return [f"  {_when(a['fired_at'])} {a['severity']} {a['state']} {a['subject']}: {_alert_text(a, t)}"
            for a in alerts]


def _by(preemption: dict[str, Any], t) -> str:
    if preemption["by_workload"] is not None:
        return t(_TEXT["by_workload"], workload=preemption["by_workload"])
    return t(_TEXT["by_admin"], user=preemption["by_admin"] or "?")


def _preemption_lines(preemptions: list[dict[str, Any]], t) -> list[str]:
    return [f"  {_when(p['at'])} {t(_L['attempt'])} {p['attempt'] or '-'}: {p['why'] or '-'} ({t(_L['by'])}: "
            f"{_by(p, t)})" + (f" - {p['message']}" if p["message"] else "") for p in preemptions]


def _release_pairs(release: dict[str, Any], t) -> list[tuple[str, str]]:
    return [("state", release["state"] + ("" if release["final"] else f" ({t(_TEXT['not_final'])})")),
            ("reason", release["reason"] or "-"), ("finished", _when(release["finished_at"])),
            ("attempts", str(release["attempts"])), ("failures", str(release["failures"])),
            ("preemptions", str(release["preemptions"])), ("node_losses", str(release["node_losses"]))]


def _release_lines(release: dict[str, Any], t) -> list[str]:
    return _pairs_text(_release_pairs(release, t), t)


def _event_lines(events: list[dict[str, Any]], t) -> list[str]:
    return [f"  {_when(e['at'])} {e['type']:<13} {e['reason'] or ''}".rstrip() for e in events]


def _audit_lines(audit: dict[str, Any], t) -> list[str]:
    lines = [f"  {_verdict(audit['verification'], t)}"]
    lines += [f"  #{e['id']} {_when(e['at'])} {e['actor']} {e['action']} {e['outcome']} {t(_L['hash'])} "
              f"{e['hash'][:16]}... {t(_L['prev_hash'])} {e['prev_hash'][:16]}..." for e in audit["entries"]]
    return lines


_TEXT_SECTIONS = {"request": _request_lines, "attempts": _attempt_lines, "wait": _wait_lines,
                  "utilisation": _utilisation_lines, "alerts": _alert_lines, "preemptions": _preemption_lines,
                  "release": _release_lines, "events": _event_lines, "audit": _audit_lines}


# -- HTML ---------------------------------------------------------------------------------------------------------


def render_evidence_html(chain: dict[str, Any], lang: str = "en") -> str:
    """The chain as one page: a collapsible block per section, every value escaped."""
    t = _Reader(lang)
    title = html.escape(t(_TEXT["title"], id=chain["id"]))
    parts = [f"<!doctype html><html lang=\"{'zh-CN' if t.zh else 'en'}\"><head><meta charset=\"utf-8\">"
             f"<title>{title}</title><style>{_CSS}</style></head><body>",
             f"<h1>{title}" + (f" <span class=\"muted\">{html.escape(chain['name'])}</span>"
                               if chain.get("name") else "") + f" — {html.escape(chain['state'])}</h1>"]
    for key, heading in SECTIONS:
        body = _HTML_SECTIONS[key](chain[key], t)
        parts.append(f"<details open id=\"{key}\"><summary>{html.escape(t(heading))}</summary>{body}</details>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _none(t) -> str:
    return f"<p class=\"muted\">{html.escape(t(_TEXT['none']))}</p>"


def _head(t, *keys: str) -> list[str]:
    return [t(_L[key]) for key in keys]


def _pairs_html(pairs: list[tuple[str, str]], t) -> str:
    return _table([], [[html.escape(t(_L[key])), html.escape(value)] for key, value in pairs])


def _request_html(request: dict[str, Any], t) -> str:
    return _pairs_html(_request_pairs(request, t), t)


def _attempts_html(attempts: list[dict[str, Any]], t) -> str:
    if not attempts:
        return _none(t)
    parts = []
    for a in attempts:
        parts.append(f"<h3>{html.escape(t(_TEXT['attempt_heading'], number=a['number'], outcome=_outcome(a, t)))}</h3>")
        parts.append(_pairs_html([
            ("nodes", ", ".join(a["nodes"])), ("started", _when(a["started_at"])), ("ended", _when(a["ended_at"])),
            ("exit_code", _flat(a["exit_code"])), ("reason", a["reason"] or "-"), ("image", a["image"] or "-"),
            ("runtime", _flat(a["runtime"])), ("metrics", _flat(a["metrics"]))], t))
        if a["node_labels"]:
            parts.append(_table(_head(t, "node", "flavor", "chip", "driver", "runtime", "labels"), [
                [html.escape(node), *(html.escape(str(facts.get(k) or "-")) for k in ("flavor", "chip", "driver",
                                                                                     "runtime")),
                 html.escape(_flat(facts.get("labels") or {}))] for node, facts in a["node_labels"].items()]))
        tail = a["log_tail"]
        if tail["lines"]:
            parts.append(f"<p class=\"muted\">{html.escape(t(_TEXT['log_tail']))}"
                         + (f" {html.escape(t(_TEXT['truncated']))}" if tail["truncated"] else "") + "</p>")
            parts.append("<pre>" + html.escape("\n".join(tail["lines"])) + "</pre>")
    return "".join(parts)


def _wait_html(waits: list[dict[str, Any]], t) -> str:
    rows = []
    for w in waits:
        blockers = "<br>".join(f"{_when(step['at'])}: " + "; ".join(html.escape(b["message"]) for b in step["blockers"])
                               for step in w["blockers"]) or "-"
        rows.append([str(w["attempt"]), f"{_when(w['from'])} ({html.escape(w['from_event'])})",
                     html.escape(_admitted(w, t)), blockers])
    return _table(_head(t, "attempt", "from", "admitted", "blockers"), rows) if rows else _none(t)


def _utilisation_html(utilisation: dict[str, Any], t) -> str:
    table = _table(_head(t, "attempt", "device_util", "device_memory", "memory", "note"), [
        [str(u["attempt"]), _unit(u["device_util_pct_mean"], "%"), _unit(u["device_memory_peak_mib"], " MiB"),
         _unit(u["peak_rss_mib"], " MiB"), html.escape(u.get("device_note") or "-")] for u in utilisation["attempts"]])
    if not utilisation["series_recorded"]:
        return table + f"<p class=\"muted\">{html.escape(t(_TEXT['not_recorded']))}</p>"
    if not utilisation["series"]:
        return table + f"<p class=\"muted\">{html.escape(t(_TEXT['no_samples']))}</p>"
    return table + _table(_head(t, "metric", "source", "series", "last", "peak"), [
        [html.escape(series["name"]), html.escape(series["source"]), str(series.get("count", len(series["points"]))),
         *(html.escape(value) for value in _last_and_peak(series))] for series in utilisation["series"]])


def _alerts_html(alerts: list[dict[str, Any]], t) -> str:
    return _table(_head(t, "fired", "severity", "state", "subject", "message"), [
        [_when(a["fired_at"]), html.escape(a["severity"]), html.escape(a["state"]), html.escape(a["subject"]),
         html.escape(_alert_text(a, t))] for a in alerts]) if alerts else _none(t)


def _preemptions_html(preemptions: list[dict[str, Any]], t) -> str:
    return _table(_head(t, "at", "attempt", "why", "by", "message"), [
        [_when(p["at"]), str(p["attempt"] or "-"), html.escape(p["why"] or "-"), html.escape(_by(p, t)),
         html.escape(p["message"] or "")] for p in preemptions]) if preemptions else _none(t)


def _release_html(release: dict[str, Any], t) -> str:
    return _pairs_html(_release_pairs(release, t), t)


def _events_html(events: list[dict[str, Any]], t) -> str:
    return _table(_head(t, "at", "type", "reason"), [
        [_when(e["at"]), html.escape(e["type"]), html.escape(e["reason"] or "")] for e in events]) if events \
        else _none(t)


def _audit_html(audit: dict[str, Any], t) -> str:
    verdict = audit["verification"]
    head = f"<p class=\"{'ok' if verdict['intact'] else 'bad'}\">{html.escape(_verdict(verdict, t))}</p>"
    return head + _table(_head(t, "attempt", "at", "actor", "action", "outcome", "hash", "prev_hash")[1:], [
        [_when(e["at"]), html.escape(e["actor"]), html.escape(e["action"]), html.escape(e["outcome"]),
         f"<code>{html.escape(e['hash'])}</code>", f"<code>{html.escape(e['prev_hash'])}</code>"]
        for e in audit["entries"]])


_HTML_SECTIONS = {"request": _request_html, "attempts": _attempts_html, "wait": _wait_html,
                  "utilisation": _utilisation_html, "alerts": _alerts_html, "preemptions": _preemptions_html,
                  "release": _release_html, "events": _events_html, "audit": _audit_html}


# -- shared -------------------------------------------------------------------------------------------------------


def _last_and_peak(series: dict[str, Any]) -> tuple[str, str]:
    """A series' last and largest values, with its unit."""
    values = [point[1] for point in series["points"]]
    unit = f" {series['unit']}" if series.get("unit") else ""
    if not values:
        return "-", "-"
    return f"{values[-1]:g}{unit}", f"{max(values):g}{unit}"


def _alert_text(alert: dict[str, Any], t) -> str:
    return alert["message_zh"] if t.zh else alert["message"]


def _verdict(verdict: dict[str, Any], t) -> str:
    if verdict["intact"]:
        return t(_TEXT["intact"], entries=verdict["entries"])
    return t(_TEXT["broken"], entry=verdict["first_break"], problem=verdict["problem"])


def _node_summary(facts: dict[str, Any], t) -> str:
    if facts.get("known") is False:
        return "-"
    return ", ".join(f"{key} {facts[key]}" for key in ("flavor", "vendor", "chip", "driver", "runtime", "arch")
                     if facts.get(key)) + (f" ({t(_TEXT['emulated'])})" if facts.get("emulated") else "")


def _table(head: list[str], rows: list[list[str]]) -> str:
    """``head`` is plain text; the cells are already escaped (or are markup this module made)."""
    if not rows:
        return "<p class=\"muted\">-</p>"
    header = "<thead><tr>" + "".join(f"<th>{html.escape(cell)}</th>" for cell in head) + "</tr></thead>" if head else ""
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table>{header}<tbody>{body}</tbody></table>"


def _flat(value: Any, nested: bool = False) -> str:
    """A value on one line: ``key=value, ...``, what is nested inside parentheses."""
    if value is None:
        return "-"
    if isinstance(value, (dict, list)):
        items = ([f"{key}={_flat(item, True)}" for key, item in value.items()] if isinstance(value, dict)
                 else [_flat(item, True) for item in value])
        text = ", ".join(items)
        return f"({text})" if nested and len(items) > 1 else (text or "-")
    return str(value)


def _unit(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:g}{unit}"


def _when(at: float | None) -> str:
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
