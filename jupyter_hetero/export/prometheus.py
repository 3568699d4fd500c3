"""The catalog's alert rules as Prometheus alerting rules, for teams that alert from Prometheus, over the metrics
``GET /hetero/api/v1/metrics`` exposes.

    rule_groups(catalog)     # {"groups": [{"name": "jupyter-hetero", "rules": [{"alert": ..., "expr": ...}]}]}

The server evaluates the same rules itself (``platform/governance/alerting.py``) on the store's exact figures; here each
rule becomes its nearest PromQL over scraped metrics: a queue's p95 wait over the last 15 minutes past its
max wait, a node not up, a queue's failed share of attempts over the rule's window, a tenant's devices in use
against its quota, a flavor's device-memory watermark against its devices' memory. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from ..catalog import Catalog
from ..catalog.models import AlertRule

__all__ = ["rule_groups"]


def rule_groups(catalog: Catalog) -> dict[str, Any]:
    rules = []
    for rule in catalog.alerts:
        for name, expr, summary, *queue in _expressions(rule, catalog):
            rules.append({"alert": name, "expr": expr, "for": "1m" if rule.kind != "node-lost" else "0m",
                          "labels": {"severity": rule.severity, "source": "jupyter-hetero", "rule": rule.name,
                                     **({"queue": queue[0]} if queue else {})},
                          "annotations": {"summary": summary}})
    return {"groups": [{"name": "jupyter-hetero", "rules": rules}]}


def _queues(rule: AlertRule, catalog: Catalog) -> list:
    return [queue for queue in catalog.queues if not rule.queues or queue.name in rule.queues]


def _expressions(rule: AlertRule, catalog: Catalog):
    title = "".join(part.capitalize() for part in rule.name.split("-"))
    if rule.kind == "queue-wait":
        for queue in _queues(rule, catalog):
            yield (f"Hetero{title}", f'histogram_quantile(0.95, sum by (le) (rate(hetero_queue_wait_seconds_bucket'
                   f'{{queue="{queue.name}"}}[15m]))) > {queue.max_wait_s:g}',
                   f"queue {queue.name}: p95 wait past its max wait of {queue.max_wait_s:g} s", queue.name)
    elif rule.kind == "node-lost":
        yield f"Hetero{title}", "hetero_node_up == 0", "node {{ $labels.node }} is {{ $labels.state }}"
    elif rule.kind == "failure-rate":
        window, scope = f"{int(rule.window_s)}s", _queue_matcher(rule)
        yield (f"Hetero{title}",
               f'sum by (queue) (increase(hetero_attempts_total{{outcome="failed"{scope}}}[{window}])) / '
               f"sum by (queue) (increase(hetero_attempts_total{{{scope.lstrip(',')}}}[{window}])) "
               f"> {rule.threshold if rule.threshold is not None else 0.25:g} and "
               f"sum by (queue) (increase(hetero_attempts_total{{{scope.lstrip(',')}}}[{window}])) "
               f">= {rule.min_attempts}",
               "queue {{ $labels.queue }}: failed share of attempts over the threshold")
    elif rule.kind == "quota-nearly-exhausted":
        yield (f"Hetero{title}", "hetero_tenant_devices_in_use / on (tenant, flavor) (hetero_tenant_quota_devices > 0)"
               f" >= {rule.threshold if rule.threshold is not None else 0.9:g}",
               "tenant {{ $labels.tenant }} near its {{ $labels.flavor }} quota")
    elif rule.kind == "onboarding-failed":
        yield (f"Hetero{title}", 'hetero_onboarding{state="rejected"} == 1',
               "{{ $labels.kind }} {{ $labels.name }} failed onboarding at {{ $labels.failed_step }}")
    elif rule.kind == "device-memory-near-limit":
        # The scrape has no running replica's memory, only each flavor's watermark against a device's memory.
        yield (f"Hetero{title}", "hetero_device_memory_watermark_bytes / on (flavor) group_left "
               "max by (flavor) (hetero_node_device_memory_bytes) "
               f">= {rule.threshold if rule.threshold is not None else 0.9:g}",
               "flavor {{ $labels.flavor }}: an attempt used most of a device's memory")


def _queue_matcher(rule: AlertRule) -> str:
    return f',queue=~"{"|".join(rule.queues)}"' if rule.queues else ""
