"""What the audit log keeps of the catalog a server starts with: its sections' digests, and which sections changed
since the last start (quotas and roles live in tenants and platform_admins); a start with the same catalog adds
nothing. A real SQLite store."""

from __future__ import annotations

import yaml

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, parse_catalog
from jupyter_hetero.platform.governance.reload import record_catalog
from jupyter_hetero.store import Repository


def catalog(**changes):
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    for section, change in changes.items():
        change(data.setdefault(section, []))
    return parse_catalog(yaml.safe_dump(data))


def test_each_start_records_the_sections_that_changed_and_a_same_start_records_nothing(tmp_path):
    repository = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=lambda: 1.0)
    shipped = catalog()
    assert record_catalog(repository, shipped, "catalog.yaml") == []
    assert record_catalog(repository, shipped, "catalog.yaml") == []  # the same: nothing new
    more_quota = catalog(tenants=lambda tenants: tenants[0]["quotas"].update({"t4": {"nominal": {"devices": 99}}}),
                         platform_admins=lambda admins: admins.append("ops-lead"))
    assert record_catalog(repository, more_quota, "catalog.yaml") == ["platform_admins", "tenants"]
    entries = [e for e in repository.audit_log() if e.action == "catalog.loaded"]
    assert [e.detail["changed"] for e in entries] == [[], ["platform_admins", "tenants"]]
    assert repository.verify_audit()[1] is None
    repository.close()


def test_a_file_changed_while_the_server_was_down_is_audited_change_by_change_at_the_next_start(tmp_path):
    repository = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=lambda: 1.0)
    record_catalog(repository, catalog(), "catalog.yaml")
    changed = catalog(tenants=lambda tenants: tenants[0].setdefault("users", []).append("zoe"),
                      platform_admins=lambda admins: admins.append("ops-lead"))
    assert record_catalog(repository, changed, "catalog.yaml") == ["platform_admins", "tenants"]
    entries = {e.action: e for e in repository.audit_log()}
    member, admin = entries["tenant.member-added"], entries["platform-admin.added"]
    assert (member.actor, member.detail["user"], admin.detail["user"]) == ("server", "zoe", "ops-lead")
    assert member.detail["because"] == "the catalog file changed while the server was down"
    assert record_catalog(repository, changed, "catalog.yaml") == []  # the same again: nothing new
    assert sum(e.action == "tenant.member-added" for e in repository.audit_log()) == 1
    repository.close()
