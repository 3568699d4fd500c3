"""The acceptance report as one self-contained HTML file: tables, and charts drawn as inline SVG (no script, no
file or network fetch), in English or Simplified Chinese.

    html = render_report(report, lang="zh")     # the dict ``Reports.build`` answers

Each workload id it names links to that workload's evidence chain (``evidence_href``, relative to ``GET /report``
by default).

Pure: no I/O, no clock.
"""

from __future__ import annotations

import html
import re
import time
from typing import Any

from ..i18n import N_, translate

__all__ = ["render_report"]

# Texts that appear inside f-strings, marked here where the catalog's extractor finds them.
_TEXT = {
    "title": N_("jupyter-hetero acceptance report"),
    "period": N_("Period"),
    "checkpoints": N_("Checkpoints"),
    "met": N_("met"),
    "failed": N_("failed"),
    "not-measured": N_("not measured"),
    "needs": N_("Needs"),
    "task_types": N_("Task types"),
    "queue_waits": N_("Queue waits"),
    "wait_distribution": N_("Wait distribution"),
    "device_allocation_over_time": N_("Device allocation over time"),
    "devices": N_("{devices} devices"),
    "usage_and_cost_per_tenant": N_("Usage and cost per tenant"),
    "alerts": N_("Alerts"),
    "none": N_("none"),
    "release_records": N_("Release records"),
    "capacity_advice": N_("Capacity advice"),
    "no_queue_over": N_("No queue waits past its max wait."),
    "nothing_to_release": N_("Nothing to release."),
}

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC",sans-serif;margin:24px;color:#1f2328;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}table{border-collapse:collapse;margin:6px 0;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f6f8fa}
.met{color:#1a7f37;font-weight:600}.failed{color:#cf222e;font-weight:600}.not-measured{color:#9a6700;font-weight:600}
.muted{color:#656d76}
.charts{display:flex;flex-wrap:wrap;gap:16px}figure{margin:0}figcaption{font-size:12px;color:#656d76}
svg text{font-size:10px;fill:#424a53}
"""


# Where a workload's evidence is, from the report's own address (``GET /report``); ``{id}`` is the workload's.
EVIDENCE_HREF = "workloads/{id}/evidence?format=html&lang={lang}"
# Workload ids named in a checkpoint's evidence: "workloads 3, 5, 8", in Chinese "工作负载 3, 5, 8".
_NAMED_IDS = re.compile(r"((?:workloads?|工作负载) ?)(\d+(?:, \d+)*)")


def render_report(report: dict[str, Any], lang: str = "en", evidence_href: str = EVIDENCE_HREF) -> str:
    def t(text: str) -> str:
        return html.escape(translate(text, lang))

    def linked(escaped: str) -> str:
        """Escaped text with each workload id it names linked to that workload's evidence."""
        return _NAMED_IDS.sub(lambda m: m.group(1) + ", ".join(
            _evidence_link(int(i), evidence_href, lang) for i in m.group(2).split(", ")), escaped)

    parts = [f"<!doctype html><html lang=\"{'zh-CN' if lang.startswith('zh') else 'en'}\"><head><meta charset=\"utf-8\">"
             f"<title>{t(_TEXT['title'])}</title><style>{_CSS}</style></head><body>",
             f"<h1>{t(_TEXT['title'])}</h1>",
             f"<p class=\"muted\">{t(_TEXT['period'])}: {_when(report['since'])} – {_when(report['until'])}</p>"]

    parts.append(f"<h2 id=\"checkpoints\">{t(_TEXT['checkpoints'])}</h2>")
    # Each item by its own evidence: met, failed, or not measured with what would measure it.
    rows = [[html.escape(check["task_type"]), html.escape(item["name"]),
             f"<span class=\"{item['status']}\">{t(_TEXT[item['status']])}</span>",
             linked(html.escape(item["evidence"])) + _needs(item.get("needs"), t)]
            for check in report["checkpoints"] for item in check["items"]]
    parts.append(_table([t(N_("Task type")), t(N_("Checkpoint")), t(N_("Result")), t(N_("Evidence"))], rows))

    parts.append(f"<h2 id=\"task-types\">{t(_TEXT['task_types'])}</h2>")
    for task in report["task_types"]:
        parts.append(f"<h3>{html.escape(task['task_type'])}</h3>")
        parts.append(_table([t(N_("Figure")), t(N_("Value"))], [
            [t(N_("Templates")), html.escape(", ".join(task["templates"]))],
            [t(N_("Submissions")), str(task["submissions"])],
            [t(N_("States")), html.escape(_pairs(task["states"]))],
            [t(N_("Attempts")), html.escape(_pairs(task["attempts"]))],
            [t(N_("Retries")), str(task["retries"])], [t(N_("Preemptions")), str(task["preemptions"])],
            [t(N_("Images")), html.escape(", ".join(task["images"]) or "-")],
            [t(N_("Device utilisation")), _value(task["device_util_pct_mean"], "%", t(N_("not measured")))],
            [t(N_("Memory watermark")), _value(task["memory_peak_mib"], " MiB", "-")],
            [t(N_("Device memory watermark")), _value(task["device_memory_peak_mib"], " MiB", t(N_("not measured")))],
        ]))
        parts.append(_table([t(N_("Node")), t(N_("Flavor")), t(N_("Chip")), t(N_("Driver")), t(N_("Runtime")),
                             t(N_("Labels"))],
                            [[html.escape(str(node.get(k) or "-")) for k in ("name", "flavor", "chip", "driver", "runtime")]
                             + [html.escape(_pairs(node.get("labels") or {}))] for node in task["nodes"]]))
        if task.get("metrics"):  # its templates' declared metrics, over its workloads' latest figures
            parts.append(_table([t(N_("Declared metric")), t(N_("Workloads measured")), t(N_("Least")), t(N_("Mean")),
                                 t(N_("Most")), t(N_("Unit")), t(N_("Source"))],
                                [[html.escape(m["name"]), str(m["workloads"])]
                                 + [_value(m[k], "", t(N_("not measured"))) for k in ("min", "mean", "max")]
                                 + [html.escape(m["unit"] or "-"), html.escape(", ".join(m["sources"]) or "-")]
                                 for m in task["metrics"]]))
        if task["errors"]:
            parts.append(_table([t(N_("Workload")), t(N_("Attempt")), t(N_("Exit code")), t(N_("Reason"))],
                                [[_evidence_link(e["workload"], evidence_href, lang), str(e["attempt"]),
                                  str(e["exit_code"]),
                                  html.escape(e["reason"] or "")] for e in task["errors"]]))

    parts.append(f"<h2 id=\"queues\">{t(_TEXT['queue_waits'])}</h2>")
    parts.append(_table([t(N_("Queue")), t(N_("Workloads")), "p50 s", "p95 s", t(N_("Max wait s")),
                         t(N_("Over max wait"))],
                        [[html.escape(q["queue"]), str(q["workloads"]), _value(q["p50_s"], "", "-"),
                          _value(q["p95_s"], "", "-"), f"{q['max_wait_s']:g}", t(N_("yes")) if q["over_max_wait"] else
                          t(N_("no"))] for q in report["queues"]]))
    parts.append("<div class=\"charts\">" + "".join(
        _figure(_histogram(q["histogram"]), f"{t(_TEXT['wait_distribution'])}: {html.escape(q['queue'])}")
        for q in report["queues"] if q["workloads"]) + "</div>")

    parts.append(f"<h2 id=\"utilisation\">{t(_TEXT['device_allocation_over_time'])}</h2><div class=\"charts\">")
    parts += [_figure(_timeline(f["timeline"], f["devices"]), f"{html.escape(f['flavor'])}: "
                      + t(_TEXT["devices"]).format(devices=f["devices"])) for f in report["utilisation"]]
    parts.append("</div>")

    usage = report["usage"]
    parts.append(f"<h2 id=\"usage\">{t(_TEXT['usage_and_cost_per_tenant'])}</h2>")
    parts.append(_table([t(N_("Tenant")), t(N_("Cost centre")), t(N_("Device-hours")), t(N_("Accelerator-hours")),
                         t(N_("Idle device-hours")), t(N_("Unmeasured device-hours")), t(N_("Core-hours")),
                         t(N_("Cost"))],
                        [[html.escape(r["key"]), html.escape(r.get("cost_centre") or "-")]
                         + [f"{r[k]:.4g}" for k in ("device_hours", "accelerator_hours", "idle_device_hours",
                                                    "unmeasured_device_hours", "core_hours", "cost")]
                         for r in usage["rows"]]))
    parts.append(_figure(_bars([(r["key"], r["cost"]) for r in usage["rows"]]), t(N_("Cost per tenant"))))

    parts.append(f"<h2 id=\"alerts\">{t(_TEXT['alerts'])}</h2>")
    parts.append(_table([t(N_("Fired")), t(N_("Severity")), t(N_("State")), t(N_("Message"))],
                        [[_when(a["fired_at"]), a["severity"], a["state"],
                          html.escape(a["message_zh"] if lang.startswith("zh") else a["message"])]
                         for a in report["alerts"]]) if report["alerts"] else f"<p class=\"muted\">{t(_TEXT['none'])}</p>")

    parts.append(f"<h2 id=\"releases\">{t(_TEXT['release_records'])}</h2>")
    parts.append(_table([t(N_("Service")), t(N_("Revision")), t(N_("Outcome")), t(N_("When")), t(N_("By")),
                         t(N_("Canary")), t(N_("Stable"))],
                        [[html.escape(r["service"]), str(r["revision"]), html.escape(r["outcome"]), _when(r["at"]),
                          html.escape(r.get("by") or "-"), _traffic(r.get("canary")), _traffic(r.get("stable"))]
                         for r in report["releases"]]) if report["releases"]
                 else f"<p class=\"muted\">{t(_TEXT['none'])}</p>")
    advice = report["capacity"]
    parts.append(f"<h2 id=\"capacity\">{t(_TEXT['capacity_advice'])}</h2>")
    parts.append(_table([t(N_("Queue")), t(N_("Add")), t(N_("Flavor")), t(N_("Like")), t(N_("Replayed p95 s"))],
                        [[html.escape(a["queue"]), str(a["nodes"] if a["nodes"] is not None else "-"),
                          html.escape(a["flavor"] or "-"), html.escape(a["like"] or "-"),
                          _value(a["replayed_p95_s"], "", "-")] for a in advice["add"]])
                 if advice["add"] else f"<p class=\"muted\">{t(_TEXT['no_queue_over'])}</p>")
    if advice.get("shift"):
        parts.append(_table([t(N_("Queue")), t(N_("Template")), t(N_("Also offer flavor")), t(N_("Replayed p95 s"))],
                            [[html.escape(a["queue"]), html.escape(a["template"]), html.escape(a["to_flavor"]),
                              _value(a["replayed_p95_s"], "", "-")] for a in advice["shift"]]))
    parts.append(_table([t(N_("Flavor")), t(N_("Release node")), t(N_("Devices")), t(N_("Allocated share"))],
                        [[html.escape(r["flavor"]), html.escape(r["node"]), str(r["devices"]),
                          f"{r['allocated_share']:.1%}"] for r in advice["release"]])
                 if advice["release"] else f"<p class=\"muted\">{t(_TEXT['nothing_to_release'])}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _needs(needs: str | None, t) -> str:
    """What would measure a checkpoint that nothing measured, under its evidence."""
    return f"<br><span class=\"muted\">{t(_TEXT['needs'])}: {t(needs)}</span>" if needs else ""


def _evidence_link(workload: int, href: str, lang: str) -> str:
    url = href.replace("{id}", str(int(workload))).replace("{lang}", "zh" if lang.startswith("zh") else "en")
    return f"<a href=\"{html.escape(url)}\">{int(workload)}</a>"


def _table(head: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return "<p class=\"muted\">-</p>"
    header = "".join(f"<th>{cell}</th>" for cell in head)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{caption}</figcaption></figure>"


def _histogram(buckets: list[list]) -> str:
    """Bars of how many waits fell in each bucket (from the cumulative counts)."""
    counts, previous = [], 0
    for bound, cumulative in buckets:
        counts.append((f"≤{bound}" if bound != "+Inf" else ">", cumulative - previous))
        previous = cumulative
    return _bars(counts)


def _bars(values: list[tuple[str, float]], width: int = 460, height: int = 120) -> str:
    if not values:
        return ""
    top = max(value for _label, value in values) or 1
    step = width / len(values)
    bars = "".join(
        f"<rect x=\"{i * step + 2:.1f}\" y=\"{height - 20 - (value / top) * (height - 30):.1f}\" width=\"{step - 4:.1f}\" "
        f"height=\"{(value / top) * (height - 30):.1f}\" fill=\"#0969da\"><title>{html.escape(label)}: {value:g}</title></rect>"
        f"<text x=\"{i * step + step / 2:.1f}\" y=\"{height - 6}\" text-anchor=\"middle\">{html.escape(label)}</text>"
        for i, (label, value) in enumerate(values))
    return f"<svg class=\"chart\" width=\"{width}\" height=\"{height}\" role=\"img\">{bars}</svg>"


def _timeline(points: list[list[float]], devices: int, width: int = 320, height: int = 120) -> str:
    start, end = points[0][0], points[-1][0]
    span = (end - start) or 1
    top = max([devices] + [level for _at, level in points]) or 1
    path, last = [], None
    for at, level in points:
        x, y = (at - start) / span * width, height - 14 - level / top * (height - 24)
        path.append(f"{'M' if last is None else 'L'}{x:.1f},{last if last is not None else y:.1f} L{x:.1f},{y:.1f}")
        last = y
    ceiling = height - 14 - devices / top * (height - 24)
    return (f"<svg class=\"chart timeline\" width=\"{width}\" height=\"{height}\" role=\"img\">"
            f"<line x1=\"0\" x2=\"{width}\" y1=\"{ceiling:.1f}\" y2=\"{ceiling:.1f}\" stroke=\"#cf222e\" "
            f"stroke-dasharray=\"4 3\"/><path d=\"{' '.join(path)}\" fill=\"none\" stroke=\"#0969da\" stroke-width=\"2\"/>"
            f"<text x=\"2\" y=\"{height - 2}\">{_when(start)}</text>"
            f"<text x=\"{width - 2}\" y=\"{height - 2}\" text-anchor=\"end\">{_when(end)}</text></svg>")


def _traffic(figures: dict | None) -> str:
    if not figures:
        return "-"
    latency = figures.get("latency_ms") or {}
    rate = figures.get("error_rate")
    return html.escape(f"{figures.get('requests', 0)} req, {figures.get('requests_per_s', 0):g}/s, "
                       f"p95 {latency.get('p95', '-')} ms, errors {'-' if rate is None else f'{rate:.1%}'}")


def _pairs(mapping: dict) -> str:
    return ", ".join(f"{key}: {value}" for key, value in sorted(mapping.items(), key=lambda kv: str(kv[0])))


def _value(value: float | None, unit: str, missing: str) -> str:
    return missing if value is None else f"{value:g}{unit}"


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
