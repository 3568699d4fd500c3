"""Workloads: submit, list, describe, cancel, logs (optionally followed), events, explain, preempt."""

from __future__ import annotations

import asyncio
import codecs
from functools import partial

from jupyter_server.auth.decorator import authorized
from tornado import web
from tornado.iostream import StreamClosedError

from ..errors import Conflict, NotFound
from ..models import (
    ExplainQuery,
    FilesQuery,
    ListWorkloadsQuery,
    LogsQuery,
    PreemptQuery,
    PreviewWorkload,
    SubmitWorkload,
)
from ..services.preview import preemption_preview, preview
from .base import API_PREFIX, HeteroHandler

# How often a followed log is read again while its attempt runs.
FOLLOW_POLL_S = 0.5


class WorkloadsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply(self.platform.workloads.list(self.identity, self.query(ListWorkloadsQuery)))

    @web.authenticated
    @authorized
    def post(self) -> None:
        body = self.body(SubmitWorkload)
        self.reply(self.platform.workloads.submit(self.identity, body), status=201)


class WorkloadHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self, workload_id: str) -> None:
        query = self.query(ExplainQuery)
        self.reply(self.platform.workloads.describe(self.identity, _id(workload_id), query.lang))

    @web.authenticated
    @authorized
    def delete(self, workload_id: str) -> None:
        self.reply(self.platform.workloads.cancel(self.identity, _id(workload_id), self.platform.clock.wall()))


class EventsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self, workload_id: str) -> None:
        self.reply(self.platform.workloads.events(self.identity, _id(workload_id)))


class LogsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self, workload_id: str) -> None:
        query = self.query(LogsQuery)
        workloads = self.platform.workloads
        path, running = workloads.log_file(self.identity, _id(workload_id), query.attempt)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        if path is None:
            self.finish("")
            return
        offset = 0
        if query.tail and not query.follow:
            self.finish(_tail(path, query.tail))
            return
        # A read may end inside a multi-byte character; the decoder keeps its first bytes for the next.
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while True:
            data, offset = _read_from(path, offset)
            chunk = decoder.decode(data)
            if chunk:
                try:
                    self.write(chunk)
                    await self.flush()
                except StreamClosedError:
                    return
            if not (query.follow and running):
                break
            await asyncio.sleep(FOLLOW_POLL_S)
            _path, running = workloads.log_file(self.identity, _id(workload_id), query.attempt)
        data, offset = _read_from(path, offset)
        self.finish(decoder.decode(data, final=True))


class FilesHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self, workload_id: str) -> None:
        query = self.query(FilesQuery)
        path = self.platform.workloads.archived_file(self.identity, _id(workload_id), query.path, query.attempt)
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(path.read_bytes())


class ResubmitHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def post(self, workload_id: str) -> None:
        self.reply(self.platform.workloads.resubmit(self.identity, _id(workload_id)), status=201)


class PreviewHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body(PreviewWorkload)
        platform = self.platform
        # Its dry cycles take as long as a tick's: never on the event loop.
        self.reply(await self.off_loop(partial(
            preview, catalog=platform.catalog, scheduler=platform.scheduler, workloads=platform.workloads,
            identity=self.identity, template=body.template, parameters=body.parameters, queue=body.queue,
            kind=body.kind, now=platform.scheduler.clock(), language=body.lang,
        )))


class ExplainHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self, workload_id: str) -> None:
        query = self.query(ExplainQuery)
        self.reply(self.platform.workloads.explain(self.identity, _id(workload_id), query.lang))


class PreemptHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self, workload_id: str) -> None:
        query = self.query(PreemptQuery)
        identity = self.identity
        wid = _id(workload_id)
        row = self.platform.workloads.get(identity, wid, "workload.preempt")
        self.platform.access.require_platform_admin(identity, "workload.preempt" + (".dry-run" if query.dry_run else ""),
                                                    f"workload/{wid}")
        scheduler = self.platform.scheduler
        if query.dry_run:
            # Its dry cycle takes as long as a tick's: never on the event loop.
            self.reply(await self.off_loop(partial(preemption_preview, scheduler, wid, row.state, scheduler.clock())))
            return
        if row.state not in ("running", "starting"):
            raise Conflict(f"workload {wid} is {row.state}; only running workloads can be preempted")
        self.reply(scheduler.preempt_by_admin(wid, identity.user))


def _id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise NotFound(f"workload {text!r} does not exist") from None


def _read_from(path, offset: int) -> tuple[bytes, int]:
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            data = log.read()
    except FileNotFoundError:
        return b"", offset
    return data, offset + len(data)


def _tail(path, lines: int) -> str:
    data, _ = _read_from(path, 0)
    return "".join(data.decode("utf-8", errors="replace").splitlines(keepends=True)[-lines:])


default_handlers = [
    (rf"/{API_PREFIX}/workloads", WorkloadsHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)", WorkloadHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/events", EventsHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/logs", LogsHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/explain", ExplainHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/files", FilesHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/resubmit", ResubmitHandler),
    (rf"/{API_PREFIX}/previews", PreviewHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/preempt", PreemptHandler),
]
