"""Workloads: submit, list, describe, cancel, logs (optionally followed), events, explain, preempt, evidence,
metrics (reported and read)."""

from __future__ import annotations

import asyncio
import codecs
import os
from functools import partial

from jupyter_server.auth.decorator import authorized
from tornado import web
from tornado.iostream import StreamClosedError

from ..export.evidence import render_evidence_html
from ..models import (
    CancelQuery,
    EvidenceQuery,
    ExplainQuery,
    FilesQuery,
    ListWorkloadsQuery,
    LogsQuery,
    PreemptQuery,
    PreviewWorkload,
    ReportMetrics,
    SubmitWorkload,
)
from .base import API_PREFIX, HeteroHandler, parse_workload_id

# How often a followed log is read again while its attempt runs.
FOLLOW_POLL_S = 0.5
# Logs and archived files are sent in pieces this large, each read in a worker thread: the server's
# memory stays bounded whatever a file's size, and a slow disk never holds up the event loop.
CHUNK_BYTES = 64 * 1024


class WorkloadsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.reply(self.platform.workloads.list(self.identity, self.query(ListWorkloadsQuery)))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body, key = self.body(SubmitWorkload), self.request_key()
        self.admit_submission(self.identity.user)
        if body.notebook is None and body.array is None:
            self.reply(self.platform.workloads.submit(self.identity, body, key), status=201)
            return
        # A notebook is read and parsed to be checked, which takes as long as the file is big, and an array's tasks
        # are stored in one write as long as it has tasks: not on the loop.
        self.reply(await self.platform.workloads.submit_off_loop(self.identity, body, key), status=201)


class WorkloadHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self, workload_id: str) -> None:
        query = self.query(ExplainQuery)
        self.reply(self.platform.workloads.describe(self.identity, parse_workload_id(workload_id), query.lang))

    @web.authenticated
    @authorized
    async def delete(self, workload_id: str) -> None:
        query, workloads, wid = self.query(CancelQuery), self.platform.workloads, parse_workload_id(workload_id)
        if not query.array:
            self.reply(workloads.cancel(self.identity, wid, self.platform.clock.wall()))
            return
        # Every task of an array, as many writes as it has running tasks: not on the loop.
        now = self.platform.clock.wall()
        self.reply(await self.off_loop(partial(workloads.cancel_array, self.identity, wid, now)))


class EventsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self, workload_id: str) -> None:
        self.reply(self.platform.workloads.events(self.identity, parse_workload_id(workload_id)))


class LogsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self, workload_id: str) -> None:
        query = self.query(LogsQuery)
        workloads = self.platform.workloads
        path, running = workloads.log_file(self.identity, parse_workload_id(workload_id), query.attempt)
        text = "text/plain; charset=utf-8"  # APIHandler.finish would say JSON otherwise
        self.set_header("Content-Type", text)
        if path is None:
            self.finish("", set_content_type=text)
            return
        if query.tail and not query.follow:
            self.finish(await self.off_loop(partial(_tail, path, query.tail)), set_content_type=text)
            return
        # A read may end inside a multi-byte character; the decoder keeps its first bytes for the next.
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        offset: int | None = 0
        while True:
            offset = await _stream(self, path, offset, decoder.decode)
            if offset is None or not (query.follow and running):
                break
            await asyncio.sleep(FOLLOW_POLL_S)
            _path, running = workloads.log_file(self.identity, parse_workload_id(workload_id), query.attempt)
        if offset is not None:
            self.finish(decoder.decode(b"", final=True), set_content_type=text)


class FilesHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self, workload_id: str) -> None:
        query = self.query(FilesQuery)
        path = self.platform.workloads.archived_file(self.identity, parse_workload_id(workload_id), query.path,
                                                     query.attempt)
        self.set_header("Content-Type", "application/octet-stream")
        if await _stream(self, path, 0) is not None:
            self.finish()


class ResubmitHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def post(self, workload_id: str) -> None:
        self.admit_submission(self.identity.user)
        self.reply(self.platform.workloads.resubmit(self.identity, parse_workload_id(workload_id)), status=201)


class PreviewHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        self.reply(await self.platform.previews.submission(self.identity, self.body(PreviewWorkload)))


class ExplainHandler(HeteroHandler):
    @web.authenticated
    @authorized
    def get(self, workload_id: str) -> None:
        query = self.query(ExplainQuery)
        self.reply(self.platform.workloads.explain(self.identity, parse_workload_id(workload_id), query.lang))


class EvidenceHandler(HeteroHandler):
    @property
    def content_security_policy(self) -> str:
        # The HTML page styles itself inline and runs nothing, as the acceptance report.
        return super().content_security_policy + "; style-src 'unsafe-inline'; sandbox"

    @web.authenticated
    @authorized
    async def get(self, workload_id: str) -> None:
        query, identity, wid = self.query(EvidenceQuery), self.identity, parse_workload_id(workload_id)
        # It reads the logs' tails and verifies the whole audit chain: in a worker thread.
        chain = await self.off_loop(partial(self.platform.evidence.chain, identity, wid, query.lang))
        if query.format == "json":
            self.reply(chain)
            return
        self.set_header("Content-Disposition", f'inline; filename="hetero-evidence-{wid}.html"')
        self.finish(render_evidence_html(chain, query.lang), set_content_type="text/html; charset=utf-8")


class MetricsHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def get(self, workload_id: str) -> None:
        query, identity, wid = self.query(ExplainQuery), self.identity, parse_workload_id(workload_id)
        self.reply(await self.off_loop(partial(self.platform.workload_metrics.describe, identity, wid, query.lang)))

    @web.authenticated
    @authorized
    async def post(self, workload_id: str) -> None:
        body, identity, wid = self.body(ReportMetrics), self.identity, parse_workload_id(workload_id)
        # A write that may wait for the scheduler's tick to commit: in a worker thread.
        self.reply(await self.off_loop(partial(self.platform.workload_metrics.report, identity, wid, body)))


class PreemptHandler(HeteroHandler):
    @web.authenticated
    @authorized
    async def post(self, workload_id: str) -> None:
        dry_run = self.query(PreemptQuery).dry_run
        self.reply(await self.platform.previews.preemption(self.identity, parse_workload_id(workload_id),
                                                           dry_run=dry_run))


async def _stream(handler: HeteroHandler, path, offset: int, decode=None) -> int | None:
    """Send ``path`` from ``offset`` to its current end, a chunk at a time; the offset reached, or
    None when the client has gone."""
    while True:
        data = await handler.off_loop(partial(_read_at, path, offset))
        if not data:
            return offset
        offset += len(data)
        chunk = decode(data) if decode else data
        if not chunk:
            continue
        try:
            handler.write(chunk)
            await handler.flush()  # waits for the client: a slow one holds back the reads, not memory
        except StreamClosedError:
            return None


def _read_at(path, offset: int, size: int = CHUNK_BYTES) -> bytes:
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            return handle.read(size)
    except FileNotFoundError:
        return b""


def _tail(path, lines: int) -> str:
    """The last ``lines`` lines, read backwards a chunk at a time (a log may be far larger than its tail)."""
    try:
        with open(path, "rb") as handle:
            end = handle.seek(0, os.SEEK_END)
            start, data = end, b""
            # One newline more than asked for: the last line may end with one.
            while start > 0 and data.count(b"\n") <= lines:
                start = max(0, start - CHUNK_BYTES)
                handle.seek(start)
                data = handle.read(end - start)
    except FileNotFoundError:
        return ""
    return "".join(data.decode("utf-8", errors="replace").splitlines(keepends=True)[-lines:])


default_handlers = [
    (rf"/{API_PREFIX}/workloads", WorkloadsHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)", WorkloadHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/events", EventsHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/logs", LogsHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/explain", ExplainHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/evidence", EvidenceHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/files", FilesHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/metrics", MetricsHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/resubmit", ResubmitHandler),
    (rf"/{API_PREFIX}/previews", PreviewHandler),
    (rf"/{API_PREFIX}/workloads/(?P<workload_id>[^/]+)/preempt", PreemptHandler),
]
