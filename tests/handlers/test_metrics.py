"""The metrics endpoint through a real server after real jobs: it parses with prometheus-client's own parser, has
every family of the three groups, its figures agree with the store, only platform admins may read it; the
Grafana dashboard in the repo asks only for metrics the endpoint has, and for each of them; and so do the
Prometheus alerting rules ``jupyter hetero export prometheus-rules`` writes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from jupyter_hetero.platform.governance.metrics import FAMILIES

pytestmark = pytest.mark.usefixtures("team")

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "jupyter-hetero.json"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def python_job(code: str, **extra) -> dict:
    return {"kind": "job", "template": "data-preprocessing", "command": [sys.executable, "-c", code], **extra}


async def scrape(jp_fetch, user: str = "root") -> dict:
    from ..conftest import _token

    response = await jp_fetch("hetero", "api", "v1", "metrics", headers={"Authorization": f"token {_token(user)}"})
    assert response.headers["Content-Type"].startswith("text/plain; version=")  # the exposition format
    return {family.name: family for family in text_string_to_metric_families(response.body.decode())}


def value(family, **labels) -> float:
    """The sum of a family's samples whose labels include ``labels`` (buckets, sums and counts left out)."""
    return sum(sample.value for sample in family.samples
               if all(sample.labels.get(k) == v for k, v in labels.items())
               and not sample.name.endswith(("_bucket", "_sum", "_created")))


async def test_the_metrics_parse_have_every_family_and_agree_with_the_store(api, api_error, jp_fetch, wait_for):
    done = [await api("workloads", "POST", python_job("print('ok')"), as_user="alice") for _ in range(2)]
    failing = await api("workloads", "POST", python_job("import sys; sys.exit(3)"), as_user="bob")
    for workload in done:
        await wait_for(workload["id"], lambda w: w["state"] == "succeeded", as_user="root")
    # Its first attempt fails; the queue's failure policy may try it again later.
    await wait_for(failing["id"], lambda w: w["attempts"] and w["attempts"][0]["outcome"] == "failed", as_user="root")
    status, error = await api_error("metrics", as_user="alice")
    assert status == 403 and "platform-admin" in error["message"], error

    families = await scrape(jp_fetch)
    for group, names in FAMILIES.items():
        missing = [name for name in names if name not in families]
        assert not missing, f"{group} families missing: {missing}"
    workloads = await api("workloads", as_user="root")
    assert value(families["hetero_workloads_submitted"]) == len(workloads) == 3
    assert value(families["hetero_workloads"], state="succeeded") == 2
    ended = [a for w in workloads for a in (await api(f"workloads/{w['id']}", as_user="root"))["attempts"]
             if a["outcome"]]
    failed = [a for a in ended if a["outcome"] == "failed"]
    assert failed and value(families["hetero_attempt_failures"], reason="exit-code") == len(failed)
    assert value(families["hetero_attempts"]) == len(ended)
    assert value(families["hetero_attempts"], outcome="succeeded") == 2
    # The queue wait histogram counts each workload's latest admission, per queue; its buckets are cumulative.
    admitted = [w for w in workloads if w["admitted_at"] is not None]
    waits = families["hetero_queue_wait_seconds"]
    count = next(s.value for s in waits.samples if s.name.endswith("_count") and s.labels["queue"] == "batch")
    buckets = [s.value for s in waits.samples if s.name.endswith("_bucket") and s.labels["queue"] == "batch"]
    assert count == len(admitted) >= 2 and buckets == sorted(buckets) and buckets[-1] == count
    total = next(s.value for s in waits.samples if s.name.endswith("_sum") and s.labels["queue"] == "batch")
    assert total == pytest.approx(sum(w["admitted_at"] - w["created_at"] for w in admitted))
    nodes = await api("nodes", as_user="root")
    assert value(families["hetero_node_devices"]) == sum(n["accelerator"]["count"] if n["accelerator"] else 0
                                                         for n in nodes)
    assert value(families["hetero_node_up"]) == sum(n["state"] == "ready" for n in nodes)
    # Governance: each tenant's attempts ran on the CPU flavor, at its price per core-hour.
    tenants = {s.labels["tenant"] for s in families["hetero_tenant_cost"].samples}
    assert tenants == {"vision", "nlp"}
    audit = await api("audit", as_user="root", limit=5000)
    # Every entry up to the scrape is counted (the audit read just now came after it).
    assert value(families["hetero_audit_entries"]) == len(audit["entries"]) - 1
    assert value(families["hetero_audit_entries"], outcome="denied") == 1  # alice's attempt


def asked_for(expressions: list[str]) -> set[str]:
    return {name for expr in expressions for name in re.findall(r"\bhetero_[a-z_]+", expr)}


async def test_the_grafana_dashboard_and_the_alerting_rules_ask_only_for_metrics_that_exist(api, jp_fetch):
    families = await scrape(jp_fetch)
    known = {family.name + suffix for family in families.values() for suffix in SUFFIXES[family.type]}
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    names = asked_for([target["expr"] for panel in dashboard["panels"] for target in panel["targets"]])
    assert names and not names - known, f"the dashboard asks for metrics the endpoint lacks: {sorted(names - known)}"
    shown = {family.name for family in families.values()
             if any(family.name + suffix in names for suffix in SUFFIXES[family.type])}
    assert shown == set(families), f"families no panel shows: {sorted(set(families) - shown)}"

    exported = subprocess.run([sys.executable, "-m", "jupyter_hetero.cli", "export", "prometheus-rules"],
                              capture_output=True, text=True, timeout=60, check=True)
    [group] = yaml.safe_load(exported.stdout)["groups"]
    rules = group["rules"]
    assert {rule["labels"]["rule"] for rule in rules} == {"queue-wait", "node-lost", "failure-rate",
                                                          "quota-nearly-exhausted", "device-memory-near-limit",
                                                          "onboarding-failed"}
    assert all(rule["alert"].startswith("Hetero") and rule["labels"]["severity"] in ("info", "warning", "critical")
               for rule in rules)
    names = asked_for([rule["expr"] for rule in rules])
    assert names and not names - known, f"the alerting rules ask for metrics the endpoint lacks: {sorted(names - known)}"
    waits = [rule for rule in rules if rule["labels"]["rule"] == "queue-wait"]
    assert {rule["labels"]["queue"] for rule in waits} == {queue["name"] for queue in await api("queues")}
