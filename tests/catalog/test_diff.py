"""diff_catalogs: two catalogs in, one change per thing that changed out, in the audit log's words (pure)."""

from __future__ import annotations

import pytest
import yaml

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, parse_catalog
from jupyter_hetero.catalog.diff import diff_catalogs


def shipped(change=None):
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    if change is not None:
        change(data)
    return parse_catalog(yaml.safe_dump(data, allow_unicode=True))


def first_tenant(data):
    return data["tenants"][0]


def _raise_quota(data):
    quotas = first_tenant(data)["quotas"]
    flavor = next(f for f, q in quotas.items() if q["nominal"].get("devices"))
    quotas[flavor]["nominal"]["devices"] = quotas[flavor]["nominal"]["devices"] + 4


def _queue_removed(data):
    gone = data["queues"].pop()
    for template in data["templates"]:
        if template["queue"] == gone["name"]:
            template["queue"] = data["queues"][0]["name"]
    for queue in data["queues"]:
        preemption = queue.get("preemption") or {}
        if gone["name"] in preemption.get("may_preempt", []):
            preemption["may_preempt"].remove(gone["name"])


CASES = [
    pytest.param(lambda d: first_tenant(d).setdefault("users", []).append("zoe"),
                 [("tenant.member-added", {"user": "zoe"})], id="a member added"),
    pytest.param(lambda d: d.setdefault("platform_admins", []).append("ops"),
                 [("platform-admin.added", {"user": "ops"})],
                 id="a platform admin added"),
    pytest.param(lambda d: d["tenants"].append({"name": "speech", "display": {"en": "Speech", "zh": "语音"}}),
                 [("tenant.added", {"tenant": "speech"})], id="a tenant added"),
    pytest.param(_raise_quota, [("quota.changed", {})], id="a quota raised"),
    pytest.param(lambda d: d["queues"][0].update(priority=d["queues"][0]["priority"] + 1),
                 [("queue.changed", {})], id="a queue's priority changed"),
    pytest.param(_queue_removed, [("queue.removed", {}), ("queue.changed", {}), ("template.changed", {})],
                 id="a queue removed (its templates and preemptors changed with it)"),
    pytest.param(lambda d: d["flavors"][0].update(price_per_hour=99.0), [("flavor.changed", {})],
                 id="a flavor's price changed"),
]


@pytest.mark.parametrize(("change", "expected"), CASES)
def test_each_change_is_one_entry_of_its_kind(change, expected):
    after = shipped(change)
    changes = diff_catalogs(shipped(), after)
    kinds = sorted({c.action for c in changes})
    assert kinds == sorted({action for action, _ in expected}), [(c.action, c.target) for c in changes]
    for action, detail in expected:
        found = next(c for c in changes if c.action == action)
        assert detail.items() <= found.detail.items(), found.detail


def test_the_same_catalog_has_no_changes_and_a_quota_change_says_before_and_after():
    assert diff_catalogs(shipped(), shipped()) == []
    before, after = shipped(), shipped(_raise_quota)
    [change] = diff_catalogs(before, after)
    tenant = before.tenants[0]
    assert change.target == f"tenant/{tenant.name}/{change.detail['flavor']}"
    was = change.detail["before"]["nominal"]["device_milli"]
    assert change.detail["after"]["nominal"]["device_milli"] == was + 4000
    assert change.message.text("en") == (f"quota of {tenant.name} on {change.detail['flavor']} raised from "
                                         f"{was / 1000:g} devices to {was / 1000 + 4:g} devices")
    [back] = diff_catalogs(after, before)
    assert "lowered" in back.message.text("en")


def test_a_tenant_removed_is_the_reverse_of_one_added():
    more = shipped(lambda d: d["tenants"].append({"name": "speech", "display": {"en": "Speech", "zh": "语音"}}))
    [removed] = diff_catalogs(more, shipped())
    assert (removed.action, removed.target, removed.detail["tenant"]) == ("tenant.removed", "tenant/speech", "speech")
