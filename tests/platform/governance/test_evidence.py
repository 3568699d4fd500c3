"""``platform/governance/evidence.py`` over a real store: which alerts concern a workload (its tenant, queue, nodes or
itself, while it waited or ran), a preemption by a platform admin, waits through an inadmissible spell, a log's
bounded tail, and what a workload recorded before the evidence existed still reads."""

from __future__ import annotations

import pytest

from jupyter_hetero.platform.governance.evidence import evidence_of, log_tail, series_json
from jupyter_hetero.store import MetricSeries
from jupyter_hetero.store import Repository
from jupyter_hetero.store.tables import AlertRow, AttemptRow, WorkloadRow


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path):
    clock = Clock()
    repository = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=clock)
    yield repository, clock
    repository.close()


def alert(subject: str, tenant: str | None, fired: float, resolved: float | None) -> AlertRow:
    return AlertRow(rule="r", kind="queue-wait", subject=subject, tenant=tenant, severity="warning",
                    state="resolved" if resolved else "firing", message="m", figures={"queue": "batch", "workload": 1, "waited_s": 1,
                                                                                       "max_wait_s": 1},
                    fired_at=fired, resolved_at=resolved)


def test_the_chain_of_a_workload_admitted_after_an_inadmissible_spell_and_preempted_by_an_admin(store, tmp_path):
    repository, clock = store
    row = repository.add_workload(WorkloadRow(kind="kernel", tenant="vision", user="ada", template="interactive",
                                              queue="interactive", request={"parameters": {"devices": 1},
                                                                            "flavors": ["t4"]}, spec={},
                                              state="queued"), reason="submitted")
    blockers = [{"kind": "quota", "flavor": "t4", "params": {"tenant": "vision", "used": 1, "nominal": 1,
                                                               "resource": "devices", "flavor": "t4",
                                                               "queue": "interactive", "borrowing_limit": 0}}]
    clock.now = 1010.0
    repository.update_workload(row.id, event="inadmissible", reason="no node", data={"blockers": blockers},
                               state="inadmissible")
    clock.now = 1020.0
    repository.update_workload(row.id, event="requeued", reason="the inventory changed", state="queued")
    repository.update_workload(row.id, event="admitted", reason="placed", state="admitted")
    log = tmp_path / "log.txt"
    log.write_text("".join(f"line {i}\n" for i in range(200)))
    repository.add_attempt(AttemptRow(workload_id=row.id, number=1, node="gpu-t4-0", placement={"slots": [
        {"node": "gpu-t4-0", "devices": []}]}, processes=[], started_at=1021.0, log_path=str(log), metrics={}))
    repository.update_workload(row.id, event="started", reason="attempt 1", data={"attempt": 1}, state="running")
    clock.now = 1030.0
    repository.record_audit(actor="root", action="workload.preempt", target=f"workload/{row.id}", outcome="allowed")
    repository.update_workload(row.id, event="preempting", reason="preempted by platform admin root (grace 30 s)",
                               stopping="preempt")
    repository.record_audit(actor="root", action="workload.preempt", target="workload/999", outcome="allowed")
    for fired in (alert("queue/interactive", None, 1005.0, 1015.0),         # while it waited: in
                  alert("node/gpu-t4-0", None, 1025.0, None),                # its node, still firing: in
                  alert("tenant/vision/t4", "vision", 900.0, 950.0),         # resolved before it came: out
                  alert("queue/batch", None, 1001.0, None),                  # another queue: out
                  alert("tenant/nlp/t4", "nlp", 1002.0, None)):              # another tenant: out
        repository.fire_alert(fired)

    record = repository.evidence_record(row.id, now=1040.0)
    chain = evidence_of(record, {"intact": True, "entries": 2, "first_break": None, "problem": None},
                        {1: log_tail(str(log), lines=50, limit=120)}, series=None, viewer="bob", language="zh")

    assert chain["request"]["parameters"] == {"devices": 1} and chain["request"]["flavors"] == ["t4"]
    assert chain["request"]["idempotency_key"] is None
    assert [a["subject"] for a in chain["alerts"]] == ["queue/interactive", "node/gpu-t4-0"]
    [wait] = chain["wait"]
    assert (wait["attempt"], wait["from_event"], wait["waited_s"]) == (1, "submitted", 20.0)
    [inadmissible] = wait["blockers"]
    assert inadmissible["event"] == "inadmissible" and inadmissible["blockers"][0]["message"].startswith("配额")
    [preemption] = chain["preemptions"]
    assert (preemption["by_workload"], preemption["by_admin"], preemption["why"], preemption["attempt"]) == \
        (None, "root", "admin", 1)
    assert [e["target"] for e in chain["audit"]["entries"]] == [f"workload/{row.id}"]
    assert chain["attempts"][0]["node_labels"] == {}  # started before the labels were recorded
    tail = chain["attempts"][0]["log_tail"]
    assert tail["truncated"] and tail["lines"][-1] == "line 199" and len("\n".join(tail["lines"])) <= 120
    assert (chain["release"]["final"], chain["release"]["state"], chain["release"]["event"]) == (False, "running", None)
    assert chain["utilisation"] == {"attempts": [{"attempt": 1, "device_util_pct_mean": None,
                                                  "device_memory_peak_mib": None, "peak_rss_mib": None,
                                                  "device_note": None}], "series_recorded": False, "series": []}


def test_a_long_series_is_thinned_evenly_and_keeps_its_last_point():
    series = MetricSeries("device_util_pct", "%", "measured", [(float(i), float(i % 7), 1 + i // 600) for i in range(1200)])
    [shown] = series_json({"device_util_pct": series}, limit=100)
    assert (shown["name"], shown["unit"], shown["source"], shown["count"]) == ("device_util_pct", "%", "measured", 1200)
    assert len(shown["points"]) == 100 and shown["points"][0] == [0.0, 0.0, 1] and shown["points"][-1] == [1199.0, 2.0, 2]
    assert [p[0] for p in shown["points"]] == sorted(p[0] for p in shown["points"])
    assert series_json({}) == []
