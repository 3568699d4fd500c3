"""Thin REST handlers, one module per resource, under ``/hetero/api/v1``."""

from . import catalog, governance, kernels, meta, nodes, schedules, servers, services, tenants, workloads

__all__ = ["default_handlers", "endpoint_handlers", "service_handlers"]

default_handlers = [
    *meta.default_handlers,
    *catalog.default_handlers,
    *tenants.default_handlers,
    *nodes.default_handlers,
    *workloads.default_handlers,
    *kernels.default_handlers,
    *servers.default_handlers,
    *services.default_handlers,
    *schedules.default_handlers,
    *governance.default_handlers,
]

endpoint_handlers = services.endpoint_handlers
service_handlers = meta.service_handlers
