"""What is wrong now, pure: the catalog's alert rules over one look at the platform.

>>> from jupyter_hetero.catalog.models import AlertRule
>>> seen = Observed(now=100.0, oldest_pending={"batch": (10.0, 7)}, max_wait={"batch": 60})
>>> [f.message for f in findings([AlertRule(name="wait", kind="queue-wait")], seen).values()]
['queue batch: workload 7 has waited 90 s, past its max wait of 60 s']

Each finding is keyed by (rule, subject): the same key found again is the same alert, still firing; a key no
longer found is an alert resolved. Messages are the catalog's sentences (``MESSAGES``, by kind), filled from the
finding's figures, so they read in any language later.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ...catalog.models import AlertRule
from ...i18n import N_, Message

__all__ = ["MESSAGES", "Finding", "Observed", "findings", "message_of"]

MESSAGES = {
    "queue-wait": N_("queue {queue}: workload {workload} has waited {waited_s} s, past its max wait of {max_wait_s} s"),
    "node-lost": N_("node {node} is {state}: it takes no work, and work on it follows its queue's node-loss policy"),
    "failure-rate": N_("queue {queue}: {failed} of the last {ended} attempts failed ({rate_pct}%), over "
                       "{threshold_pct}% in {window_s} s"),
    "quota-nearly-exhausted": N_("tenant {tenant} uses {used} of its {nominal} {flavor} devices ({share_pct}%)"),
    "device-memory-near-limit": N_("workload {workload} of tenant {tenant} uses {used_mib} MiB of its devices' "
                                   "{limit_mib} MiB ({share_pct}%)"),
    "onboarding-failed": N_("{kind} {name} failed onboarding at step {step}: {evidence}"),
}


@dataclass(frozen=True)
class Observed:
    """One look at the platform, as the rules need it."""

    now: float
    oldest_pending: dict[str, tuple[float, int]] = field(default_factory=dict)  # queue -> (submitted, workload)
    max_wait: dict[str, float] = field(default_factory=dict)  # queue -> its max_wait_s
    nodes: dict[str, str] = field(default_factory=dict)  # node -> state (ready, onboarding, cordoned, lost)
    outcomes: list[tuple[str, str, float]] = field(default_factory=list)  # (queue, outcome, ended at)
    quota: list[tuple[str, str, float, float]] = field(default_factory=list)  # tenant, flavor, devices used, nominal
    device_memory: list[tuple[int, str, float, float]] = field(default_factory=list)  # workload, tenant, MiB, limit
    rejected: list[tuple[str, str, str, str]] = field(default_factory=list)  # onboarding: kind, name, step, evidence


@dataclass(frozen=True)
class Finding:
    rule: str
    kind: str
    subject: str
    severity: str
    figures: dict[str, Any]
    tenant: str | None = None

    @property
    def message(self) -> str:
        return message_of(self.kind, self.figures)


# Figures that are words of ours (a node's state, what failed onboarding), not names: said in the reader's language,
# so a Chinese alert carries no English word but the names it quotes.
_WORDS: dict[str, dict[str, str]] = {
    "state": {"lost": N_("lost"), "cordoned": N_("cordoned"), "onboarding": N_("onboarding"), "ready": N_("ready")},
    "kind": {"node": N_("node"), "tenant": N_("tenant"), "model": N_("model"), "chip": N_("chip"),
             "framework": N_("framework")},
}


def message_of(kind: str, figures: dict[str, Any], language: str = "en") -> str:
    said = {name: Message(_WORDS[name][value]) if isinstance(value, str) and value in _WORDS.get(name, {}) else value
            for name, value in figures.items()}
    return Message(MESSAGES[kind], **said).text(language)


def findings(rules: Iterable[AlertRule], seen: Observed) -> dict[tuple[str, str], Finding]:
    found: dict[tuple[str, str], Finding] = {}
    for rule in rules:
        for subject, figures, tenant in _CHECKS[rule.kind](rule, seen):
            found[(rule.name, subject)] = Finding(rule.name, rule.kind, subject, rule.severity, figures, tenant)
    return found


def _in_scope(rule: AlertRule, queue: str) -> bool:
    return not rule.queues or queue in rule.queues


def _queue_wait(rule: AlertRule, seen: Observed):
    for queue, (submitted, workload) in sorted(seen.oldest_pending.items()):
        limit = seen.max_wait.get(queue)
        waited = seen.now - submitted
        if limit is not None and waited > limit and _in_scope(rule, queue):
            yield f"queue/{queue}", {"queue": queue, "workload": workload, "waited_s": round(waited, 1),
                                     "max_wait_s": round(limit)}, None


def _node_lost(rule: AlertRule, seen: Observed):
    for node, state in sorted(seen.nodes.items()):
        if state == "lost":
            yield f"node/{node}", {"node": node, "state": state}, None


def _failure_rate(rule: AlertRule, seen: Observed):
    since = seen.now - rule.window_s
    ended, failed = Counter(), Counter()
    for queue, outcome, at in seen.outcomes:
        if at >= since and _in_scope(rule, queue):
            ended[queue] += 1
            failed[queue] += outcome == "failed"
    threshold = rule.threshold if rule.threshold is not None else 0.25
    for queue in sorted(ended):
        rate = failed[queue] / ended[queue]
        if ended[queue] >= rule.min_attempts and rate > threshold:
            yield f"queue/{queue}", {"queue": queue, "failed": failed[queue], "ended": ended[queue],
                                     "rate_pct": round(rate * 100), "threshold_pct": round(threshold * 100),
                                     "window_s": round(rule.window_s)}, None


def _quota(rule: AlertRule, seen: Observed):
    threshold = rule.threshold if rule.threshold is not None else 0.9
    for tenant, flavor, used, nominal in sorted(seen.quota):
        if nominal > 0 and used / nominal >= threshold:
            yield f"tenant/{tenant}/{flavor}", {"tenant": tenant, "flavor": flavor, "used": f"{used:g}",
                                               "nominal": f"{nominal:g}", "share_pct": round(used / nominal * 100)}, \
                tenant


def _device_memory(rule: AlertRule, seen: Observed):
    threshold = rule.threshold if rule.threshold is not None else 0.9
    for workload, tenant, used, limit in sorted(seen.device_memory):
        if limit > 0 and used / limit >= threshold:
            yield f"workload/{workload}", {"workload": workload, "tenant": tenant, "used_mib": round(used),
                                           "limit_mib": round(limit), "share_pct": round(used / limit * 100)}, tenant


def _onboarding(rule: AlertRule, seen: Observed):
    for kind, name, step, evidence in sorted(seen.rejected):
        yield f"{kind}/{name}", {"kind": kind, "name": name, "step": step, "evidence": evidence}, \
            name if kind == "tenant" else None


_CHECKS = {"queue-wait": _queue_wait, "node-lost": _node_lost, "failure-rate": _failure_rate,
           "quota-nearly-exhausted": _quota, "device-memory-near-limit": _device_memory,
           "onboarding-failed": _onboarding}
