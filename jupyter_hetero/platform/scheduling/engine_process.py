"""The engine's cycles in a child process, so that CPU-heavy scheduling never holds the server's
interpreter lock.

    process = EngineProcess(engine, timeout_s=60)
    reply = process.call(take_delta, Cycle(now))    # take_delta(full) -> SnapshotDelta; from the tick's thread
    reply.value.decisions                           # the cycle's Decisions
    reply = process.call(take_delta, DryRuns(now, [[hypothetical]], capacity=True, pending_of=frozenset({-1})))
    process.close()                                 # at the server's stop: the child ends

Why a process: a tick runs pure Python for a tenth of a second or more at thousands of nodes. In a
thread of the server it holds the GIL, and every request on the event loop gives the GIL up many
times per answer (each SQLite step, each socket write) and waits up to the switch interval to get it
back each time: answers took five to ten times longer during ticks. In a child the cycle runs on
its own interpreter; the server only pickles what changed and waits on a pipe, which frees the GIL.

The child owns an :class:`Engine` (unpickled from the server's, so the same placement policy,
typical mix and damping) and a :class:`SnapshotMirror`. Every request carries the delta since the
previous one, taken under the same lock as the exchange, so deltas arrive in the order they were
taken. A child that dies or does not answer within ``timeout_s`` (a new one gets
``start_s`` more to start) is killed; the request fails with :class:`EngineUnavailable`,
and the next one starts a new child and sends it a full snapshot.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from typing import Any

from ...engine import Decisions, Engine, Pending, Res, Workload, free_capacity
from ...i18n import N_
from .engine_mirror import SnapshotDelta, SnapshotMirror

__all__ = [
    "ENGINE_RESTARTING",
    "Cycle",
    "DryRuns",
    "EngineProcess",
    "EngineReply",
    "EngineUnavailable",
    "only_pending_of",
]

log = logging.getLogger(__name__)

# Seconds between the child's checks that its server is still there: a server killed outright
# (SIGKILL) cannot close the pipe, and the child must not outlive it.
PARENT_CHECK_S = 2.0
# Seconds a stopping child gets to leave on its own before it is terminated, then killed.
STOP_GRACE_S = 3.0


# What a client is told when its dry run met a dead or stuck engine process (HTTP 503).
ENGINE_RESTARTING = N_("The scheduler's engine is restarting; try again in a few seconds.")


class EngineUnavailable(RuntimeError):
    """The engine process died or did not answer in time; it is restarted on the next request."""


@dataclass(frozen=True, slots=True)
class Cycle:
    """A tick's cycle over the mirror at ``now``, with ``examined``: the inadmissible workloads this
    cycle looks at again (the mirror holds only what the scheduler schedules)."""

    now: float
    examined: list[Workload] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class DryRuns:
    """Cycles that change nothing, one per set of hypothetical waiting workloads; with ``capacity``,
    also each flavor's (total, free) capacity. ``pending_of``: whose place, blockers and ETA to
    return (None: everyone's, thousands on a busy cluster, when a preview needs one)."""

    now: float
    extra_pending: list[list[Workload]] = field(default_factory=lambda: [[]])
    capacity: bool = False
    pending_of: frozenset[int] | None = None


@dataclass(frozen=True, slots=True)
class CycleResult:
    """A tick's decisions. Their ``pending`` holds only the entries that changed since the previous
    cycle's answer, ``pending_gone`` the ids that left it: what waits barely changes from one tick to
    the next, and unpickling thousands of unchanged entries cost the server's interpreter time."""

    decisions: Decisions
    running: int
    pending: int
    pending_gone: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class DryRunResult:
    decisions: list[Decisions]
    capacity: dict[str, tuple[Res, Res]] | None


@dataclass(frozen=True, slots=True)
class EngineReply:
    """The child's answer and where the time went: building the delta here, and the round trip."""

    value: Any
    delta_s: float
    exchange_s: float
    delta_size: int
    restarted: bool


class EngineProcess:
    """A long-lived child that runs the engine; thread-safe (one request at a time)."""

    def __init__(self, engine: Engine, *, timeout_s: float = 60.0, start_s: float = 30.0):
        """``start_s``: what a new child may take on top of ``timeout_s`` for its first answer (a fresh
        interpreter imports the engine, and whatever its class needs, and builds its mirror)."""
        # Pickled once, now: every child, restarted or not, starts from the server's configuration.
        self._engine = pickle.dumps(engine, protocol=pickle.HIGHEST_PROTOCOL)
        self.timeout_s, self.start_s = timeout_s, start_s
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._connection: Connection | None = None
        self._closed = False
        self._pid: int | None = None
        self._fresh = True
        self._pending: dict[int, Pending] = {}  # the last cycle's pending entries (see CycleResult)
        self.starts = 0

    @property
    def pid(self) -> int | None:
        """The child's pid while one runs."""
        return self._pid

    def call(self, delta: Callable[[bool], SnapshotDelta], request: Cycle | DryRuns) -> EngineReply:
        """Send ``delta(full)`` and ``request``, return the answer. ``full`` is True when the child
        is new and needs every node, queue, tenant and workload."""
        with self._lock:
            self._ensure_started()
            fresh = self._fresh
            started = time.perf_counter()
            try:
                message = delta(fresh)
                built = time.perf_counter()
                self._connection.send((message, request))
                allowed = self.timeout_s + (self.start_s if fresh else 0.0)
                if not self._connection.poll(allowed):
                    raise EngineUnavailable(f"the engine process did not answer within {allowed:g} s; "
                                            "it was killed and starts again on the next request")
                status, value = self._connection.recv()
            except (EOFError, OSError) as exc:
                self._end(kill=True)
                raise EngineUnavailable(f"the engine process ended unexpectedly ({exc or type(exc).__name__}); "
                                        "it starts again on the next request") from exc
            except BaseException:
                # The delta was taken but may not have arrived: only a new child with a full snapshot
                # is sure to see what it carried.
                self._end(kill=True)
                raise
            self._fresh = False  # the child has applied the delta, whatever the engine then did
            if status == "error":
                if isinstance(request, Cycle):
                    self._pending = {}  # the child starts its pending entries over too
                raise value  # the engine's own exception; the child and its mirror are fine
            if isinstance(value, CycleResult):
                value = self._complete(value)
            return EngineReply(value, built - started, time.perf_counter() - built, message.size, fresh)

    def _complete(self, result: CycleResult) -> CycleResult:
        """The cycle's full pending entries: the ones held from earlier answers, updated by this one."""
        pending = self._pending
        for workload in result.pending_gone:
            pending.pop(workload, None)
        pending.update(result.decisions.pending)
        result.decisions.pending = dict(pending)
        return replace(result, pending_gone=[])

    def start(self) -> None:
        """Start the child now (it loads while the server does other things); the first request
        sends it everything. Requests start it anyway when none runs."""
        with self._lock:
            self._ensure_started()

    def _ensure_started(self) -> None:
        if self._closed:
            raise EngineUnavailable("the engine process is stopped")
        if self._process is None or self._process.poll() is not None:
            self._start()

    def close(self) -> None:
        """End the child (it finishes the request in progress first, for a few seconds at most)."""
        self._closed = True
        acquired = self._lock.acquire(timeout=STOP_GRACE_S)
        try:
            self._end(kill=not acquired)
        finally:
            if acquired:
                self._lock.release()

    def _start(self) -> None:
        """A new child: a fresh interpreter (fork and exec, never a bare fork: the server has threads,
        and a forked child would inherit their locks) that imports only the engine, with this
        process's import path, so it runs the same code."""
        self._end(kill=True)  # whatever is left of a dead child: its pipe, its process entry
        ours, theirs = socket.socketpair()
        with theirs:
            process = subprocess.Popen(
                [sys.executable, "-c", _CHILD, CHILD_NAME, str(theirs.fileno()), str(os.getpid()),
                 json.dumps(sys.path)],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, close_fds=True,
            )
        connection = Connection(ours.detach())
        try:
            connection.send_bytes(self._engine)
        except OSError:
            pass  # the child is already gone: the request's send fails and says so
        self._process, self._connection, self._pid = process, connection, process.pid
        self._fresh = True  # its mirror is empty: the next request sends everything
        self._pending = {}  # and it has sent no pending entries yet
        self.starts += 1
        if self.starts > 1:
            log.warning("jupyter-hetero: engine process restarted (pid %s); resyncing it from a full snapshot",
                        process.pid)
        else:
            log.info("jupyter-hetero: engine process started (pid %s)", process.pid)

    def _end(self, *, kill: bool) -> None:
        process, connection = self._process, self._connection
        self._process = self._connection = self._pid = None
        if connection is not None:
            if not kill:
                try:
                    connection.send(None)  # asks the child to leave
                except OSError:
                    pass
            connection.close()
        if process is None:
            return
        if kill:
            process.kill()
        for stop in (None, process.terminate, process.kill):
            if stop is not None:
                stop()
            try:
                process.wait(STOP_GRACE_S)
                return
            except subprocess.TimeoutExpired:
                continue


# The child's program: the parent's import path first, then only this module (and the engine).
_CHILD = """
import json, sys
sys.path[:] = json.loads(sys.argv[4])
from jupyter_hetero.platform.scheduling.engine_process import main
main(int(sys.argv[2]), int(sys.argv[3]))
"""
CHILD_NAME = "hetero-engine"  # argv[1] of the child: how it shows in ps


def main(fd: int, parent_pid: int) -> None:
    """The child's entry point: serve the engine on the connection at ``fd``."""
    connection = Connection(fd)
    try:
        engine_bytes = connection.recv_bytes()
    except (EOFError, OSError):
        return
    serve(connection, engine_bytes, parent_pid)


def serve(connection: Connection, engine_bytes: bytes, parent_pid: int) -> None:
    """The child's main loop: apply each delta to the mirror, answer the request, until told to stop,
    the pipe closes, or the server is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the server's terminal is the server's to handle
    engine: Engine = pickle.loads(engine_bytes)
    mirror = SnapshotMirror()
    sent: dict[int, Pending] = {}  # the pending entries the server holds (see CycleResult)
    while True:
        if not connection.poll(PARENT_CHECK_S):
            if os.getppid() != parent_pid:
                return
            continue
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        delta, request = message
        try:
            mirror.apply(delta)
            answer = ("ok", _answer(engine, mirror, request, sent))
            if delta.replace_workloads:
                # The mirror is new: leave it out of the full collections that would otherwise walk it
                # during every few cycles (see platform/scheduling/loop.py freeze_long_lived).
                gc.collect()
                gc.freeze()
        except Exception as exc:  # noqa: BLE001 - the server logs it; the child stays for the next request
            answer = ("error", exc)
        try:
            connection.send(answer)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            answer = ("error", RuntimeError(f"the engine's answer could not be sent: {exc!r}"))
            connection.send(answer)
        except OSError:
            return
        if answer[0] == "error" and isinstance(request, Cycle):
            sent.clear()  # as the server does on an error: both start the pending entries over


def _answer(engine: Engine, mirror: SnapshotMirror, request: Cycle | DryRuns, sent: dict[int, Pending],
            ) -> CycleResult | DryRunResult:
    """The child's answer; ``sent``: the pending entries the server holds from earlier answers."""
    if isinstance(request, Cycle):
        snapshot = mirror.snapshot(request.now, request.examined)
        decisions = engine.cycle(snapshot)
        pending = decisions.pending
        gone = [workload for workload in sent if workload not in pending]
        changed = {workload: entry for workload, entry in pending.items() if sent.get(workload) != entry}
        sent.clear()
        sent.update(pending)
        return CycleResult(replace(decisions, pending=changed), len(snapshot.running), len(snapshot.pending), gone)
    decisions = [only_pending_of(engine.cycle(mirror.snapshot(request.now, extra)), request.pending_of)
                 for extra in request.extra_pending]
    capacity = free_capacity(mirror.snapshot(request.now)) if request.capacity else None
    return DryRunResult(decisions, capacity)


def only_pending_of(decisions: Decisions, workloads: frozenset[int] | None) -> Decisions:
    """``decisions`` with the pending entries of ``workloads`` only (all of them for None)."""
    if workloads is None:
        return decisions
    return replace(decisions, pending={w: p for w, p in decisions.pending.items() if w in workloads})
