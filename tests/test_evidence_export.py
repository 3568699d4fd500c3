"""``export/evidence.py``: one workload's evidence chain as text and as one HTML page, by value: every section in
order, a hostile job name and log line escaped in HTML and shown as is in text, the two languages."""

from __future__ import annotations

import re

from jupyter_hetero.export.evidence import SECTIONS, render_evidence_html, render_evidence_text

HOSTILE = "<script>alert('x')</script> & co"


def chain(*, intact: bool = True) -> dict:
    event = {"id": 9, "at": 1_700_000_300.0, "type": "succeeded", "reason": "exit code 0", "data": {}}
    return {
        "id": 7, "name": HOSTILE, "state": "succeeded",
        "request": {"kind": "job", "name": HOSTILE, "template": "training", "queue": "batch",
                    "parameters": {"devices": 2}, "flavors": ["a100-80g"], "resolved": {"devices": 2},
                    "payload": "script", "submitter": "alice", "tenant": "vision", "submitted_at": 1_700_000_000.0,
                    "idempotency_key": "k-1"},
        "attempts": [{
            "number": 1, "nodes": ["gpu-a100-0"], "placement": None,
            "node_labels": {"gpu-a100-0": {"flavor": "a100-80g", "vendor": "nvidia", "chip": "A100-SXM4-80GB",
                                           "driver": "550.54", "runtime": "12.4", "labels": {"zone": HOSTILE}}},
            "image": "nvcr.io/pytorch:24.05", "runtime": {"family": "nvidia", "image": "nvcr.io/pytorch:24.05"},
            "started_at": 1_700_000_010.0, "ended_at": 1_700_000_200.0, "outcome": "preempted", "exit_code": None,
            "reason": "preempted by urgent workload 8", "metrics": {"peak_rss_mib": 100.0},
            "log_tail": {"lines": ["step 1", HOSTILE], "truncated": True}}],
        "wait": [{"attempt": 1, "from": 1_700_000_000.0, "from_event": "submitted", "admitted_at": 1_700_000_005.0,
                  "waited_s": 5.0, "blockers": [{"at": 1_700_000_001.0, "event": "waiting", "blockers": [
                      {"kind": "quota", "flavor": "a100-80g", "message": f"quota: {HOSTILE}", "params": {}}]}]}],
        "utilisation": {"attempts": [{"attempt": 1, "device_util_pct_mean": 71.5, "device_memory_peak_mib": 2048,
                                      "peak_rss_mib": 100.0, "device_note": None}],
                        "series_recorded": False, "series": []},
        "alerts": [{"id": 1, "rule": "wait", "kind": "queue-wait", "subject": "queue/batch", "tenant": None,
                    "severity": "warning", "state": "resolved", "message": "batch waits", "message_zh": "batch 等待",
                    "figures": {}, "fired_at": 1_700_000_002.0, "resolved_at": 1_700_000_004.0, "deliveries": []}],
        "preemptions": [{"at": 1_700_000_100.0, "attempt": 1, "by_workload": 8, "by_admin": None, "why": "priority",
                         "message": "preempted by urgent workload 8", "grace_deadline": 1_700_000_130.0}],
        "release": {"final": True, "state": "succeeded", "reason": "exit code 0", "finished_at": 1_700_000_300.0,
                    "event": event, "attempts": 2, "failures": 0, "preemptions": 1, "node_losses": 0},
        "events": [event],
        "audit": {"entries": [{"id": 3, "at": 1_700_000_100.0, "actor": "scheduler", "action": "workload.preempt",
                               "target": "workload/7", "outcome": "done", "detail": {}, "prev_hash": "a" * 64,
                               "hash": "b" * 64}],
                  "verification": {"intact": intact, "entries": 12, "first_break": None if intact else 3,
                                   "problem": None if intact else "entry 3 was changed after it was written"}},
    }


def test_the_html_page_has_a_collapsible_block_per_section_in_order_and_escapes_every_value():
    page = render_evidence_html(chain())
    assert [m for m in re.findall(r'<details open id="([a-z]+)">', page)] == [key for key, _ in SECTIONS]
    assert "<script>" not in page and "alert(&#x27;x&#x27;)" in page
    assert page.count("&lt;script&gt;") >= 5  # name, label, log line, blocker, request
    assert "audit chain intact: 12 entries checked" in page


def test_the_text_has_a_heading_per_section_and_says_what_it_found():
    text = render_evidence_text(chain())
    assert [line for line in text.splitlines() if line.startswith("== ")] == [f"== {h} ==" for _k, h in
                                                                              [(k, h) for k, h in SECTIONS]]
    assert "attempt 1 on gpu-a100-0: preempted (preempted by urgent workload 8)" in text
    assert "chip A100-SXM4-80GB" in text and f"| {HOSTILE}" in text
    assert "priority (By: workload 8)" in text and "audit chain intact: 12 entries checked" in text
    assert "per-workload metric samples are not recorded by this server" in text


def test_recorded_metric_series_read_as_their_last_and_peak_values():
    recorded = chain()
    recorded["utilisation"].update(series_recorded=True, series=[
        {"name": "device_util_pct", "unit": "%", "source": "measured", "count": 3,
         "points": [[1.0, 40.0, 1], [2.0, 90.0, 1], [3.0, 70.5, 2]]}])
    assert "device_util_pct (measured): 3 samples, last 70.5 %, peak 90 %" in render_evidence_text(recorded)
    page = render_evidence_html(recorded)
    assert "<td>device_util_pct</td><td>measured</td><td>3</td><td>70.5 %</td><td>90 %</td>" in page
    recorded["utilisation"]["series"] = []
    assert "no metric samples were recorded for it" in render_evidence_text(recorded)


def test_a_broken_chain_is_said_so_and_chinese_reads_chinese():
    broken = chain(intact=False)
    assert "audit chain broken at entry 3: entry 3 was changed" in render_evidence_text(broken)
    page = render_evidence_html(broken, lang="zh")
    assert '<html lang="zh-CN">' in page and 'class="bad"' in page and "batch 等待" in page
