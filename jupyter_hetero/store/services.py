"""Online services: their rows and the events of their rollouts, canaries, rollbacks and scaling."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from .sessions import Sessions
from .tables import EventRow, ServiceRow

__all__ = ["ServiceRecords"]


class ServiceRecords(Sessions):
    """The repository's services; each method is one transaction."""

    def add_service(self, row: ServiceRow) -> ServiceRow:
        """Insert a service; a name active in its tenant already is an IntegrityError (the caller checked first)."""
        with self.session(write=True) as session:
            row.created_at = row.updated_at = self.clock()
            session.add(row)
            session.flush()
            return row

    def service(self, tenant: str, name: str) -> ServiceRow | None:
        """The tenant's active service of that name; with none, its latest deleted one (still described)."""
        query = (select(ServiceRow).where(ServiceRow.tenant == tenant, ServiceRow.name == name)
                 .order_by((ServiceRow.state == "active").desc(), ServiceRow.id.desc()).limit(1))
        with self.session() as session:
            return session.scalar(query)

    def service_by_id(self, service_id: int) -> ServiceRow | None:
        with self.session() as session:
            return session.get(ServiceRow, service_id)

    def services(self, *, tenant: str | None = None, state: str | None = "active") -> list[ServiceRow]:
        query = select(ServiceRow).order_by(ServiceRow.name, ServiceRow.tenant, ServiceRow.id)
        if tenant is not None:
            query = query.where(ServiceRow.tenant == tenant)
        if state is not None:
            query = query.where(ServiceRow.state == state)
        with self.session() as session:
            return list(session.scalars(query))

    def update_service(self, service_id: int, **fields: Any) -> ServiceRow:
        with self.session(write=True) as session:
            row = session.get(ServiceRow, service_id)
            if row is None:
                raise KeyError(service_id)
            for key, value in fields.items():
                setattr(row, key, value)
            row.updated_at = self.clock()
            return row

    def service_events(self, row: ServiceRow) -> list[EventRow]:
        """A service's own events (rollouts, canary verdicts with their figures, rollbacks, scaling), oldest first;
        not those of an earlier service of the same name (events from before schema 9 name no service id: they
        belong to the first service ever of that name, names being unique then)."""
        service_id = EventRow.data["service_id"].as_integer()
        first = self.first_service_id(row.name)
        mine = service_id == row.id
        if first == row.id:
            mine = mine | (service_id.is_(None) & (EventRow.data["service"].as_string() == row.name))
        query = select(EventRow).where(EventRow.workload_id.is_(None), mine).order_by(EventRow.id)
        with self.session() as session:
            return list(session.scalars(query))

    def first_service_id(self, name: str) -> int | None:
        """The first service ever of that name, any tenant: the one records from before schema 9 belong to."""
        with self.session() as session:
            return session.scalar(select(func.min(ServiceRow.id)).where(ServiceRow.name == name))
