"""The alert rules, pure: what each kind finds in one look at the platform, keyed by rule and subject."""

from __future__ import annotations

import re

from jupyter_hetero.catalog.models import DEFAULT_ALERTS, AlertRule
from jupyter_hetero.platform.governance.alerting import Observed, findings, message_of


def test_every_default_rule_finds_its_subject_and_says_it():
    seen = Observed(
        now=10_000.0, oldest_pending={"batch": (9_000.0, 7), "urgent": (9_990.0, 8)},
        max_wait={"batch": 600, "urgent": 60},
        nodes={"gpu-1": "lost", "gpu-2": "ready", "gpu-3": "cordoned"},
        outcomes=[("batch", "failed", 9_500.0)] * 3 + [("batch", "succeeded", 9_500.0)] * 2
        + [("urgent", "failed", 1.0)] * 9,  # urgent's failures are older than the window
        quota=[("vision", "a100-80g", 4.0, 4.0), ("nlp", "a100-80g", 1.0, 4.0), ("ops", "t4", 1.0, 0.0)],
        device_memory=[(11, "vision", 75_000.0, 81_920.0), (12, "nlp", 1_000.0, 81_920.0)],
        rejected=[("tenant", "ops", "quota", "no quota for any flavor")],
    )
    found = findings(DEFAULT_ALERTS, seen)
    assert sorted(found) == [("device-memory-near-limit", "workload/11"), ("failure-rate", "queue/batch"),
                             ("node-lost", "node/gpu-1"), ("onboarding-failed", "tenant/ops"),
                             ("queue-wait", "queue/batch"), ("quota-nearly-exhausted", "tenant/vision/a100-80g")]
    assert found[("onboarding-failed", "tenant/ops")].tenant == "ops"
    assert found[("queue-wait", "queue/batch")].message == \
        "queue batch: workload 7 has waited 1000.0 s, past its max wait of 600 s"
    assert found[("failure-rate", "queue/batch")].message == \
        "queue batch: 3 of the last 5 attempts failed (60%), over 25% in 3600 s"
    assert found[("quota-nearly-exhausted", "tenant/vision/a100-80g")].tenant == "vision"
    assert found[("device-memory-near-limit", "workload/11")].figures["share_pct"] == 92
    assert found[("node-lost", "node/gpu-1")].severity == "critical"
    assert message_of("node-lost", {"node": "gpu-1", "state": "lost"}, "zh").startswith("节点 gpu-1")


def test_a_rule_keeps_to_its_queues_and_needs_enough_attempts():
    seen = Observed(now=100.0, oldest_pending={"batch": (0.0, 1), "urgent": (0.0, 2)}, max_wait={"batch": 10,
                    "urgent": 10}, outcomes=[("batch", "failed", 99.0)] * 4)
    only_urgent = AlertRule(name="urgent-wait", kind="queue-wait", queues=["urgent"])
    assert list(findings([only_urgent], seen)) == [("urgent-wait", "queue/urgent")]
    picky = AlertRule(name="failures", kind="failure-rate", threshold=0.5, min_attempts=5)
    assert findings([picky], seen) == {}  # four attempts, all failed: not enough to judge


def test_a_chinese_alert_carries_no_english_word_but_the_names_it_quotes():
    # Issue 37: the node-lost alert said "状态为 lost"; the state is one of our words, said in the reader's language.
    lost = message_of("node-lost", {"node": "gpu-1", "state": "lost"}, "zh")
    assert re.search(r"[A-Za-z]{2,}", lost.replace("gpu-1", "")) is None, lost
    for kind, figures in [
        ("queue-wait", {"queue": "batch", "workload": 7, "waited_s": 90.0, "max_wait_s": 60}),
        ("failure-rate", {"queue": "batch", "failed": 3, "ended": 5, "rate_pct": 60, "threshold_pct": 25,
                          "window_s": 3600}),
        ("quota-nearly-exhausted", {"tenant": "vision", "flavor": "a100-80g", "used": "4", "nominal": "4",
                                    "share_pct": 100}),
    ]:
        said = message_of(kind, figures, "zh")
        for name in ("batch", "vision", "a100-80g"):
            said = said.replace(name, "")
        assert re.search(r"[A-Za-z]{2,}", said) is None, said
    # English stays as it was.
    assert message_of("node-lost", {"node": "gpu-1", "state": "lost"}) == (
        "node gpu-1 is lost: it takes no work, and work on it follows its queue's node-loss policy")
