"""Stand-ins for what cannot run here, configured into a real server through traitlets (never patched in);
the only place fakes live (builders are in builders.py).

    hetero_config["clock_class"] = "tests.fakes.SteppingClock"
    SteppingClock.step(3600)          # the wall clock jumps an hour, as an NTP step or a resume would
    hetero_config["backend_class"] = "tests.fakes.GatedBackend"
    backend.launching.wait(); ...; backend.gate.set()     # a tick held inside a launch, then let go
    --HeteroApp.backend_class=tests.fakes.CutOffGang      # a server to kill in the middle of a gang's launch


    JoiningNodes.join(nodes)                              # the next tick sees these nodes, as a cluster's
    repository.before_next_write(7, cancel)               # a cancel lands just before the tick writes row 7
    EngineProcess(TroubledEngine(stall_at=5.0))           # an engine process that hangs on the cycle at now=5
    recorded_tool(bin_dir, "npu-smi", {"info": DATA / "info-910b4.txt"})  # a vendor tool replaying outputs
    with StarvedKernels(runtime_glob, seconds=2.0) as starved: ...         # each new kernel held off the CPU 2 s
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path


from typing import ClassVar

import psutil
from jupyter_server.auth.identity import IdentityProvider, User
from traitlets import Unicode
from traitlets.config import Configurable

from jupyter_hetero.backends.base import Launch, NodesSeen, ProcessHandle
from jupyter_hetero.backends.local import load_emulated_nodes
from jupyter_hetero.backends.local.processes import LocalBackend
from jupyter_hetero.capability import NodeCapability
from jupyter_hetero.engine import Decisions, Engine, Snapshot
from jupyter_hetero.platform.clock import Clock
from jupyter_hetero.store import Repository

__all__ = ["CutOffGang", "DiesBeforeScheduleRecord", "FileClock", "FixedClock", "GatedBackend", "HeaderIdentityProvider", "HeldScheduler", "HubStyleUser",
           "HubUser", "InterposingRepository", "JoiningNodes", "KilledHere", "ListedNodes", "SecondReplicaFails", "StarvedKernels",
           "SteppingClock", "TroubledEngine", "installed", "recorded_tool", "replay"]


class HubStyleUser(User):
    """Shaped like jupyterhub.singleuser's ``JupyterHubUser``: the hub's user model, groups included,
    is kept in ``hub_user``, not in attributes of the user."""

    def __init__(self, hub_user: dict):
        self.hub_user = hub_user
        super().__init__(username=hub_user["name"])


class HeaderIdentityProvider(IdentityProvider):
    """Another site's identity provider, which trusts a header to name the user.

    ``X-Test-User: mallory`` is a plain ``User``; ``X-Test-Hub-User: dave`` with
    ``X-Test-Hub-Groups: nlp-team,x`` is a hub-style user; anything else is the server's token as usual.
    Configure it with ``c.ServerApp.identity_provider_class = "tests.fakes.HeaderIdentityProvider"``."""

    def get_user(self, handler):
        headers = handler.request.headers
        if headers.get("X-Test-User"):
            user = User(username=headers["X-Test-User"])
        elif headers.get("X-Test-Hub-User"):
            groups = [group for group in headers.get("X-Test-Hub-Groups", "").split(",") if group]
            user = HubStyleUser({"kind": "user", "name": headers["X-Test-Hub-User"], "groups": groups})
        else:
            return super().get_user(handler)
        handler._token_authenticated = True  # a header, like a token: no cookie, so no XSRF check
        return user



class SteppingClock(Clock):
    """The system's clocks, except that a test can step the wall clock; the monotonic clock never steps."""

    offset = 0.0  # on the class: the server builds its own instance from config

    @classmethod
    def step(cls, seconds: float) -> None:
        cls.offset += seconds

    @classmethod
    def reset(cls) -> None:
        cls.offset = 0.0

    def wall(self) -> float:
        return time.time() + type(self).offset


class HurriedClock(SteppingClock):
    """Both clocks step: time passes for durations too (a rate's refill), without the test sleeping."""

    offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + type(self).offset


class FixedClock(Clock):
    """Clocks that stand still until the test moves them: two cycles a moment apart see the same ``now``."""

    def __init__(self, at: float = 1_800_000_000.0):
        self.at = at
        self._start = at

    def advance(self, seconds: float) -> None:
        self.at += seconds

    def wall(self) -> float:
        return self.at

    def monotonic(self) -> float:
        return self.at - self._start


class FileClock(Clock):
    """The system's clocks, except that the wall clock runs ahead by the seconds written in the file that
    ``HETERO_TEST_WALL_OFFSET`` names: a server in a process of its own, stepped by its test, the same after a
    restart (``start_hetero_server(..., "--HeteroApp.clock_class=tests.fakes.FileClock", env={...})``)."""

    def wall(self) -> float:
        path = os.environ.get("HETERO_TEST_WALL_OFFSET")
        try:
            offset = float(Path(path).read_text(encoding="utf-8")) if path else 0.0
        except (OSError, ValueError):
            offset = 0.0
        return time.time() + offset


class KilledHere(BaseException):
    """A process dying at this point: no ``except Exception`` stops it."""


class DiesBeforeScheduleRecord(Repository):
    """The store, except that the first run of a schedule recorded after its submission kills the process at that
    point (:class:`KilledHere`): its workload stored, its run and next due time not."""

    died = False

    def record_schedule_run(self, schedule_id: int, **fields):
        if fields.get("run") is not None and not type(self).died:
            type(self).died = True
            raise KilledHere(f"killed before schedule {schedule_id}'s run was recorded")
        return super().record_schedule_run(schedule_id, **fields)


class TroubledEngine(Engine):
    """The engine, except that the cycle at ``now == stall_at`` hangs and the one at ``now == fail_at``
    raises: what a stuck or broken engine process looks like from the server. Picklable, so it runs
    in the engine process."""

    def __init__(self, *, stall_at: float | None = None, fail_at: float | None = None, **settings):
        super().__init__(**settings)
        self.stall_at, self.fail_at = stall_at, fail_at

    def cycle(self, snapshot: Snapshot) -> Decisions:
        if snapshot.now == self.fail_at:
            raise ValueError(f"a cycle that fails at {snapshot.now}")
        if snapshot.now == self.stall_at:
            time.sleep(3600)
        return super().cycle(snapshot)


# Seconds a held launch or tick waits for its gate at most: a scheduler that blocks the event
# loop also blocks the test that would open the gate, so the hold must end on its own.
GATE_TIMEOUT_S = 3.0


class GatedBackend(LocalBackend):
    """The local backend, except that each launch waits at a gate the test opens: the tick that
    launches stays in progress meanwhile. ``launching`` is set on entry, ``launched`` on return."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.launching = threading.Event()
        self.launched = threading.Event()

    def launch(self, launch: Launch) -> ProcessHandle:
        self.launching.set()
        self.gate.wait(GATE_TIMEOUT_S)
        try:
            return super().launch(launch)
        finally:
            self.launched.set()


class HeldScheduler:
    """Stands in for the scheduler under :class:`SchedulerLoop`: each tick waits at ``gate`` (unless
    it is open), ticks are counted with their threads, and ``fail_next`` makes the next tick raise.
    It has no tick log, so the loop's ``stats()`` is not for it."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()
        self.ticking = threading.Event()  # set while a tick is inside
        self.succeeded = 0
        self.threads: set[int] = set()
        self.overlaps = 0
        self.fail_next = False
        self.finished = 0
        self.hold_s = 0.0  # how long each tick works
        self.starts: list[float] = []  # monotonic start of each tick
        self.call_on_loop = lambda callback, *args: callback(*args)

    def clock(self) -> float:
        return time.time()

    def reconcile(self) -> None:
        pass

    def tick(self) -> None:
        if self.ticking.is_set():
            self.overlaps += 1
        self.ticking.set()
        self.threads.add(threading.get_ident())
        self.starts.append(time.monotonic())
        try:
            self.gate.wait(GATE_TIMEOUT_S)
            time.sleep(self.hold_s)
            if self.fail_next:
                self.fail_next = False
                raise RuntimeError("a tick that fails")
            self.succeeded += 1
        finally:
            self.ticking.clear()
            self.finished += 1


class SecondReplicaFails(LocalBackend):
    """The local backend, except that launching a gang's second replica raises what a broken device
    plugin or runtime might (not an ``OSError``): the first replica is already running then."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list[ProcessHandle] = []

    def launch(self, launch: Launch) -> ProcessHandle:
        if launch.replica == 1:
            raise ValueError("device plugin answered garbage")
        handle = super().launch(launch)
        self.started.append(handle)
        return handle


class CutOffGang(LocalBackend):
    """The local backend, except that a gang's launch stops for good inside its second replica's: that replica
    runs, its handle is never returned, and the later ones are never launched. A file ``cut-off`` in the attempt's
    folder says so, for a test to kill the server there, as a crash mid-launch would."""

    def launch(self, launch: Launch) -> ProcessHandle:
        handle = super().launch(launch)
        if launch.replica == 1:
            (launch.log_path.parent / "cut-off").write_text(str(handle.pid))
            threading.Event().wait(60)  # the test kills the server meanwhile; should it not, the launch fails
            raise RuntimeError("the server was not killed mid-launch")
        return handle


class JoiningNodes(LocalBackend):
    """The local backend, except that nodes join as a cluster's do: after ``JoiningNodes.join(nodes)`` the next
    tick's ``poll_nodes`` reports them as the whole inventory, as the Kubernetes backend does when a node
    registers. Class-level, because the server builds its backend itself."""

    _joined: ClassVar[list[NodeCapability] | None] = None

    @classmethod
    def join(cls, nodes: list[NodeCapability]) -> None:
        cls._joined = list(nodes)

    def poll_nodes(self, placed_servers: frozenset[int] = frozenset()) -> NodesSeen | None:
        joined, JoiningNodes._joined = JoiningNodes._joined, None
        return None if joined is None else NodesSeen(joined, {node.name: "ready" for node in joined})


class ListedNodes(Configurable, LocalBackend):
    """A backend of a kind of its own, as a platform team plugs one in through ``HeteroApp.backend_class``:
    configured by its own traits (``c.ListedNodes.nodes_file``), it discovers its nodes as a cluster's backend
    does (the nodes of that file, listed once) and runs their replicas as local processes."""

    name = "listed"
    nodes_file = Unicode(config=True, help="YAML file of the nodes it lists, in the emulated nodes' shape.")

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._listed = False

    def poll_nodes(self, placed_servers: frozenset[int] = frozenset()) -> NodesSeen | None:
        if self._listed:
            return None
        self._listed = True
        nodes = load_emulated_nodes(self.nodes_file)
        return NodesSeen(nodes, {node.name: "ready" for node in nodes})


class InterposingRepository(Repository):
    """The store, except that a test can run something (a cancel from the event loop) just before the
    next write to one workload: after the tick read the row and decided, before its write begins, the
    worst moment for a race, made deterministic."""

    def __init__(self, url: str, clock) -> None:
        super().__init__(url, clock)
        self._before: dict[int, object] = {}
        self.interposed: list[int] = []

    def before_next_write(self, workload_id: int, callback) -> None:
        self._before[workload_id] = callback

    def _interpose(self, workload_id: int) -> None:
        callback = self._before.pop(workload_id, None)
        if callback is not None:
            self.interposed.append(workload_id)
            callback()

    def workload_transaction(self, workload_id: int):
        # Every write to a workload (update_workload, update_workload_if, an attempt's end) begins here.
        self._interpose(workload_id)
        return super().workload_transaction(workload_id)


class StarvedKernels:
    """A loaded machine as a starting kernel meets it: each kernel whose connection file appears (``pattern``, a glob
    from the root, such as ``/tmp/run-*/runtime/kernel-*.json``) is stopped (SIGSTOP), every process of it, for
    ``seconds`` from when its first process is seen, then let go; ``held`` counts the kernels so held. Between kernels
    only the files are polled; while one is held, the process table is read every 50 ms for its processes (a sandbox
    starts them one after another, each naming the connection file)."""

    def __init__(self, pattern: str, seconds: float) -> None:
        self.pattern, self.seconds, self.held = pattern.lstrip("/"), seconds, 0
        self._seen: set[Path] = set()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="starved-kernels")

    def __enter__(self) -> StarvedKernels:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._done.set()
        self._thread.join(30)

    def _watch(self) -> None:
        while not self._done.wait(0.01):
            for connection in sorted(set(Path("/").glob(self.pattern)) - self._seen):
                self._seen.add(connection)
                self._hold(connection)

    def _hold(self, connection: Path) -> None:
        stopped: dict[int, psutil.Process] = {}
        until = time.monotonic() + 5  # for its first process: the file is written just before the kernel starts
        while not self._done.is_set() and time.monotonic() < until:
            for process in psutil.process_iter(["cmdline"]):
                if process.pid not in stopped and str(connection) in (process.info["cmdline"] or []):
                    with contextlib.suppress(psutil.NoSuchProcess):
                        process.send_signal(signal.SIGSTOP)
                        if not stopped:
                            until = time.monotonic() + self.seconds
                        stopped[process.pid] = process
            self._done.wait(0.05)
        self.held += bool(stopped)
        for process in stopped.values():
            with contextlib.suppress(psutil.NoSuchProcess):
                process.send_signal(signal.SIGCONT)


class HubUser:
    """Shaped like the hub's ``jupyterhub.user.User`` as a spawner sees it: a name, ORM-like groups, and
    ``new_api_token``, which here lends the member's personal token of the team server (``tokens``)."""

    class Group:
        def __init__(self, name: str):
            self.name = name

    def __init__(self, name: str, groups: tuple[str, ...] = (), tokens: dict | None = None):
        self.name, self.id, self.url = name, 1, f"/user/{name}/"
        self.groups = [self.Group(group) for group in groups]
        self._token = next((token for token, entry in (tokens or {}).items()
                            if (entry if isinstance(entry, str) else entry["name"]) == name), "")
        self.tokens_asked: list[dict] = []

    def new_api_token(self, **options) -> str:
        self.tokens_asked.append(options)
        return self._token


def replay(answers: dict[tuple[str, ...], str | Exception]):
    """A vendor tool's Runner that answers each query (its argv after the tool) with a recorded output, or raises.

        run = replay({("discovery", "--json"): recorded("discovery-max1100.json")})
        intel.discover(run, installed)
    """
    def run(argv: list[str]) -> str:
        answer = answers[tuple(argv[1:])]
        if isinstance(answer, Exception):
            raise answer
        return answer
    return run


def installed(tool: str) -> str:
    """A Which for a machine where every vendor's tool is installed."""
    return f"/usr/bin/{tool}"


def recorded_tool(bin_dir: Path, name: str, answers: dict[str, Path], *, hang_s: float = 0.0) -> Path:
    """An executable ``bin_dir/name`` that prints the recorded output its arguments (joined by spaces) name,
    and fails as a vendor tool does (exit status 1, a message on stderr) for arguments it has no record of; with
    ``hang_s`` it first sleeps that long, as a tool stuck on a driver does. Put ``bin_dir`` on PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    tool = bin_dir / name
    table = json.dumps({argv: str(path) for argv, path in answers.items()})
    tool.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, sys, time\n"
        f"time.sleep({hang_s!r})\n"
        f"answer = {table}.get(' '.join(sys.argv[1:]))\n"
        "if answer is None:\n"
        "    sys.exit(f'{sys.argv[0]}: no record for {sys.argv[1:]}')\n"
        "sys.stdout.write(pathlib.Path(answer).read_text(encoding='utf-8'))\n",
        encoding="utf-8",
    )
    tool.chmod(0o755)
    return tool


def recorded_library(site_dir: Path, name: str, stand_in: str, recordings: dict[str, Path]) -> Path:
    """A module ``site_dir/name.py`` that is the vendor library ``stand_in`` (a module of this test suite with
    ``machine(**texts)``) builds from these recorded files, read when a process imports it: a vendor library
    answering from recordings inside a real server's own process. Put ``site_dir`` first on PYTHONPATH."""
    site_dir.mkdir(parents=True, exist_ok=True)
    module = site_dir / f"{name}.py"
    paths = {key: str(path) for key, path in recordings.items()}
    module.write_text(
        "import importlib, pathlib, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent.parent)!r})\n"
        f"_texts = {{key: pathlib.Path(path).read_text(encoding='utf-8') for key, path in {paths!r}.items()}}\n"
        f"_machine = importlib.import_module({stand_in!r}).machine(**_texts)\n"
        "globals().update({key: value for key, value in vars(_machine).items() if not key.startswith('__')})\n",
        encoding="utf-8",
    )
    return module
