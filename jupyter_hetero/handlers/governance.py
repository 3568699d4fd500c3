"""Governance: the audit log (``GET /audit``, filtered and paged; ``GET /audit/verify``) and the metrics in
Prometheus' text format (``GET /metrics``) for platform admins; alerts (``GET /alerts``) for everyone, each
seeing the platform's and their tenant's; usage and cost (``GET /usage``), everyone's for admins, a tenant's for
its admins, one's own for members; capacity advice (``GET /capacity``) and the acceptance report (``GET /report``), platform admins; onboarding
(``GET /onboarding``, ``POST /onboarding/nodes|tenants|chips|models/{name}``, ``.../frameworks/{template}/{family}``) and ``POST /catalog/reload``, platform admins."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from prometheus_client import CONTENT_TYPE_LATEST
from tornado import web

from ..export.report_html import render_report
from ..models import AlertsQuery, AuditQuery, CapacityQuery, ReportQuery, UsageQuery
from .base import API_PREFIX, HeteroHandler


class AuditHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply(self.platform.audit.entries(self.identity, self.query(AuditQuery)))


class AuditVerifyHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        # Every entry is read and hashed: in a worker thread, not on the event loop.
        identity = self.identity
        self.reply(await self.off_loop(lambda: self.platform.audit.verify(identity)))


class MetricsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        platform = self.platform
        platform.access.require_platform_admin(self.identity, "metrics.read", "metrics")
        # Counted from the store, real nodes measured: in a worker thread, not on the event loop.
        body = await self.off_loop(platform.metrics.exposition)
        self.finish(body, set_content_type=CONTENT_TYPE_LATEST)


class AlertsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply(self.platform.alerts.list(self.identity, self.query(AlertsQuery).state))


class UsageHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        query, identity = self.query(UsageQuery), self.identity
        # Every attempt of the period is read and summed: in a worker thread.
        self.reply(await self.off_loop(lambda: self.platform.usage.report(identity, query)))


class CapacityHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        query, identity = self.query(CapacityQuery), self.identity
        # It replays the recorded workload through the engine, several times: in a worker thread.
        self.reply(await self.off_loop(lambda: self.platform.capacity.advice(identity, query)))


class ReportHandler(HeteroHandler):
    @property
    def content_security_policy(self) -> str:
        # The HTML report styles itself inline and runs nothing: its style and its inline SVG may show, no script.
        return super().content_security_policy + "; style-src 'unsafe-inline'; img-src data:; sandbox"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        query, identity = self.query(ReportQuery), self.identity
        # It reads every workload of the period and looks at their archives: in a worker thread.
        report = await self.off_loop(lambda: self.platform.reports.build(identity, query.since, query.lang))
        if query.format == "json":
            self.reply(report)
            return
        self.set_header("Content-Disposition", 'inline; filename="hetero-acceptance-report.html"')
        self.finish(render_report(report, query.lang), set_content_type="text/html; charset=utf-8")


class OnboardingHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply(self.platform.onboarding.list(self.identity))


class OnboardNodeHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        platform, identity = self.platform, self.identity
        platform.access.require_platform_admin(identity, "onboarding.node", f"node/{name}")
        # Its sample jobs run on the node and are waited for: in a worker thread.
        self.reply(await self.off_loop(lambda: platform.onboarding.verify_node(name, identity.user)))


class OnboardTenantHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def post(self, name: str) -> None:
        self.reply(self.platform.onboarding.verify_tenant(self.identity, name))


class OnboardChipHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def post(self, model: str) -> None:
        self.reply(self.platform.onboarding.verify_chip(self.identity, model))


class OnboardModelHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        platform, identity = self.platform, self.identity
        # The model runs on a node and is waited for: in a worker thread.
        self.reply(await self.off_loop(lambda: platform.onboarding.verify_model(identity, name)))


class OnboardFrameworkHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self, template: str, family: str) -> None:
        platform, identity = self.platform, self.identity
        # Its imports run on a node and are waited for: in a worker thread.
        self.reply(await self.off_loop(lambda: platform.onboarding.verify_framework(identity, template, family)))


class CatalogReloadHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        identity = self.identity
        self.reply(await self.off_loop(lambda: self.platform.reload_catalog(identity)))


default_handlers = [(rf"/{API_PREFIX}/audit", AuditHandler), (rf"/{API_PREFIX}/audit/verify", AuditVerifyHandler),
                    (rf"/{API_PREFIX}/metrics", MetricsHandler), (rf"/{API_PREFIX}/alerts", AlertsHandler),
                    (rf"/{API_PREFIX}/usage", UsageHandler), (rf"/{API_PREFIX}/capacity", CapacityHandler),
                    (rf"/{API_PREFIX}/report", ReportHandler), (rf"/{API_PREFIX}/onboarding", OnboardingHandler),
                    (rf"/{API_PREFIX}/onboarding/nodes/(?P<name>[^/]+)", OnboardNodeHandler),
                    (rf"/{API_PREFIX}/onboarding/tenants/(?P<name>[^/]+)", OnboardTenantHandler),
                    (rf"/{API_PREFIX}/onboarding/chips/(?P<model>[^/]+)", OnboardChipHandler),
                    (rf"/{API_PREFIX}/onboarding/models/(?P<name>[^/]+)", OnboardModelHandler),
                    (rf"/{API_PREFIX}/onboarding/frameworks/(?P<template>[^/]+)/(?P<family>[^/]+)",
                     OnboardFrameworkHandler),
                    (rf"/{API_PREFIX}/catalog/reload", CatalogReloadHandler)]
