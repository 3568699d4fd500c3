"""Service names on real databases (a SQLite file, a PostgreSQL): unique among a tenant's active services, free
again once deleted, and a database from before schema 9 (names unique across tenants) upgraded in place."""

from __future__ import annotations

import pytest

from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from jupyter_hetero.store import Repository
from jupyter_hetero.store.migrations import MIGRATIONS, migrate
from jupyter_hetero.store.tables import SchemaVersionRow, ServiceRow


def _service(tenant: str, name: str = "resnet") -> ServiceRow:
    spec = {"command": ["serve"], "env": {}, "readiness_path": "/"}
    return ServiceRow(name=name, tenant=tenant, user="ada", template="online-inference", queue="inference", spec=spec,
                      replicas=1, min_replicas=1, max_replicas=1, revision=1, rollout=None, state="active",
                      revisions=[{"revision": 1, "spec": spec, "outcome": "created", "at": 0.0, "by": "ada"}])


def test_a_name_is_unique_among_a_tenants_active_services_and_free_again_once_deleted(repo):
    vision = repo.add_service(_service("vision"))
    nlp = repo.add_service(_service("nlp"))
    assert repo.service("vision", "resnet").id == vision.id and repo.service("nlp", "resnet").id == nlp.id
    with pytest.raises(IntegrityError):
        repo.add_service(_service("vision"))
    repo.update_service(vision.id, state="deleted")
    again = repo.add_service(_service("vision"))
    assert repo.service("vision", "resnet").id == again.id != vision.id
    assert repo.service_by_id(vision.id).state == "deleted"  # kept, for audit and usage
    repo.update_service(again.id, state="deleted")
    assert repo.service("vision", "resnet").id == again.id  # with none active: the latest deleted one


def test_a_version_8_database_scopes_service_names_per_tenant_keeping_rows_and_history(db_url):
    engine = create_engine(db_url)
    with engine.begin() as connection:  # what release 8 left: vision's service resnet with one event of its own
        SchemaVersionRow.__table__.create(connection)
        for version, step in MIGRATIONS[:8]:
            step(connection)
            connection.execute(text("INSERT INTO schema_version VALUES (:v, 0)"), {"v": version})
        connection.execute(text(
            'INSERT INTO services (name, tenant, "user", template, queue, spec, replicas, min_replicas, max_replicas,'
            " revision, revisions, state, created_at, updated_at) VALUES ('resnet', 'vision', 'ada',"
            " 'online-inference', 'inference', '{\"command\": [\"serve\"], \"readiness_path\": \"/\"}', 1, 1, 1, 1,"
            " '[]', 'active', 1, 1)"))
        connection.execute(text("INSERT INTO events (at, type, reason, data) VALUES"
                                " (1, 'autoscaled', 'scaled', '{\"service\": \"resnet\"}')"))
        with pytest.raises(IntegrityError), connection.begin_nested():  # before: one name across every tenant
            connection.execute(text(
                'INSERT INTO services (name, tenant, "user", template, queue, spec, replicas, min_replicas,'
                " max_replicas, revision, revisions, state, created_at, updated_at) VALUES ('resnet', 'nlp', 'bob',"
                " 'online-inference', 'inference', '{}', 1, 1, 1, 1, '[]', 'active', 1, 1)"))
    with engine.begin() as connection:
        assert migrate(connection, now=2.0) == [version for version, _step in MIGRATIONS[8:]]
    engine.dispose()
    repository = Repository(db_url, clock=lambda: 3.0)
    old = repository.service("vision", "resnet")
    assert (old.user, old.spec["command"], old.state) == ("ada", ["serve"], "active")
    nlp = repository.add_service(_service("nlp"))  # the same name in another tenant
    with pytest.raises(IntegrityError):
        repository.add_service(_service("vision"))
    repository.update_service(old.id, state="deleted")
    new = repository.add_service(_service("vision"))
    # The event from before names no service id: it is the first resnet's, not a later one's.
    assert [event.type for event in repository.service_events(repository.service_by_id(old.id))] == ["autoscaled"]
    assert repository.service_events(new) == [] and repository.service_events(nlp) == []
    repository.close()
