"""What the scheduler asks of a backend: start replicas, tell whether they run, stop them.

A backend never decides anything; the workload service decides, records the decision, then
calls the backend. Handles are plain data so they can be stored and re-adopted after a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..capability import Accelerator, Held, NodeCapability
from ..engine.decisions import Blocker

__all__ = ["AdmissionWait", "Backend", "Exit", "Launch", "LaunchUnavailable", "NodesSeen", "Placed", "ProcessHandle", "Serving"]


class LaunchUnavailable(RuntimeError):
    """The backend could not reach what it launches on (an API server that answers 5xx or 429, times out or
    refuses connections): nothing of the workload's doing, so it waits and tries again without using a retry."""


@dataclass(frozen=True)
class NodesSeen:
    """The nodes a backend discovers, as they are now."""

    capabilities: list[NodeCapability]
    states: dict[str, str]  # state per node as the source reports it: ready, cordoned, lost
    held: dict[str, Held] = field(default_factory=dict)


@dataclass(frozen=True)
class Serving:
    """What a service's replica is for: the service, its revision, the port it listens on ($PORT) and the path
    that answers once it is ready."""

    service: str
    revision: int
    port: int
    readiness_path: str


@dataclass(frozen=True)
class Placed:
    """Whose replica it is and what it was given: what a backend that names, labels and sizes its
    units (pods) needs beyond a command line."""

    kind: str
    tenant: str
    user: str
    queue: str
    template: str
    flavor: str
    replicas: int
    image: str
    cpu_milli: int
    memory_mib: int
    devices: tuple[tuple[int, int], ...] = ()  # (milli, memory MiB) per device
    accelerator: Accelerator | None = None
    priority_class: str | None = None
    kueue_queue: str | None = None
    kueue_priority_class: str | None = None
    serving: Serving | None = None  # a service's replica


@dataclass(frozen=True)
class Launch:
    """One replica to start: what to run, where, with which environment and log file."""

    workload_id: int
    attempt: int
    replica: int
    node: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log_path: Path
    exit_path: Path
    devices: tuple[int, ...] = ()  # device indexes on the node
    measurable: bool = False  # a real node whose devices the backend can sample (not emulated)
    family: str = ""  # the devices' accelerator family, whose vendor tool samples them
    placed: Placed | None = None


@dataclass(frozen=True)
class ProcessHandle:
    """A started replica: a local process (``pid_started`` tells it from a reused pid) or a pod
    (``pod`` is its "namespace/name", ``pid`` 0)."""

    replica: int
    node: str
    pid: int
    pid_started: float
    exit_path: str = ""
    devices: tuple[int, ...] = ()
    measurable: bool = False
    pod: str = ""
    family: str = ""

    @property
    def label(self) -> str:
        """How people see it: ``pid 4242`` or ``pod hetero/job-7-1-0``."""
        return f"pod {self.pod}" if self.pod else f"pid {self.pid}"

    def to_json(self) -> dict:
        return {"replica": self.replica, "node": self.node, "pid": self.pid, "pid_started": self.pid_started,
                "exit_path": self.exit_path, "devices": list(self.devices), "measurable": self.measurable,
                **({"pod": self.pod} if self.pod else {}), **({"family": self.family} if self.family else {})}

    @classmethod
    def from_json(cls, data: dict) -> ProcessHandle:
        return cls(data["replica"], data["node"], data["pid"], data["pid_started"], data.get("exit_path", ""),
                   tuple(data.get("devices", ())), data.get("measurable", False), data.get("pod", ""),
                   # Handles stored before families were recorded were measured only on NVIDIA nodes.
                   data.get("family") or ("nvidia" if data.get("measurable") else ""))


@dataclass(frozen=True)
class AdmissionWait:
    """A launched replica that the cluster's own admission still holds (Kueue, until it admits the pod's Workload):
    who holds it, why (in the engine's blocker format), and its place in that admitter's queues, 1-based, when
    known: in the LocalQueue and in the ClusterQueue behind it."""

    by: str
    blockers: tuple[Blocker, ...]
    position: int | None = None
    cluster_queue_position: int | None = None


@dataclass(frozen=True)
class Exit:
    """How a replica ended, as far as the backend can tell."""

    code: int | None  # None: the process is gone and left no exit record (killed, or lost)
    metrics: dict = field(default_factory=dict)
    reason: str | None = None  # why it ended, when the backend knows more than the code (OOMKilled, evicted)


class Backend(Protocol):
    name: str
    # Replicas run on this machine: they inherit the passthrough part of its environment and see only their
    # devices through visibility variables. Elsewhere (pods) the image gives the environment and the device
    # plugin the devices.
    runs_here: bool

    def start(self, *, wake: Callable[[], None] | None = None) -> None:
        """Begin watching what the backend runs on; ``wake`` is called (from any thread) after changes."""
        ...
    def close(self) -> None: ...
    def poll_nodes(self, placed_servers: frozenset[int] = frozenset()) -> NodesSeen | None:
        """The nodes when they (or what others hold of them) changed since the last call; None when they did
        not, or when the backend does not discover nodes (the local one: its node is discovered at start).
        ``placed_servers``: hub servers' workloads holding a placement, whose pods are not others'."""
        ...
    def problem(self, handle: ProcessHandle) -> str | None:
        """Why a live replica cannot make progress (its image cannot be pulled ...), or None."""
        ...
    def admission_wait(self, handle: ProcessHandle) -> AdmissionWait | None:
        """What holds a live replica before it may run when another admitter decides (Kueue), or None."""
        ...
    def adopt(self, handles: list[ProcessHandle], log_path: Path) -> list[ProcessHandle]:
        """Take back an attempt's replicas after a restart (their log keeps being written to ``log_path``);
        the ones still alive."""
        ...
    def collect_orphans(self, keep: Iterable[str]) -> list[str]:
        """Stop what the backend runs for no live workload (``keep``: the units that are held)."""
        ...
    def stop_cut_off(self, attempt_dir: Path) -> int:
        """Stop every replica an attempt cut off mid-launch started (the server died before recording the launch
        whole), recorded or not: processes whose exit file lies in ``attempt_dir``. How many were stopped."""
        ...

    def stop_left_kernels(self, kernel_ids: Iterable[str]) -> int:
        """Stop the processes of kernels a previous run of the server started and left behind; how many."""
        ...

    def launch(self, launch: Launch) -> ProcessHandle: ...
    def service_port(self) -> int:
        """The port a service's next replica listens on (its $PORT)."""
        ...
    def address(self, handle: ProcessHandle) -> str | None:
        """Where a running replica is reached (an IP address); None while it has none yet."""
        ...
    def expose(self, services: frozenset[tuple[str, str]]) -> None:
        """Give each (tenant, service) with live replicas a stable network name inside the cluster, and take it
        from the others; the endpoint does not need it."""
        ...
    def running(self, handle: ProcessHandle) -> bool: ...
    def scan(self, handles: Iterable[ProcessHandle]) -> dict[ProcessHandle, dict]:
        """The live ones among ``handles``, each with its latest usage sample (as :meth:`sample` gives
        it); dead ones are left out. Asked every tick: liveness is exact each time, usage may be a few
        seconds old (measured in one look at the process table however many handles there are)."""
        ...
    def exit(self, handle: ProcessHandle) -> Exit: ...
    def signal_stop(self, handle: ProcessHandle) -> None: ...
    def kill(self, handle: ProcessHandle) -> None: ...
    def sample(self, handle: ProcessHandle) -> dict:
        """The handle's usage from the latest :meth:`scan` that found it alive, else measured now."""
        ...
    def node_utilisation(self, capability: NodeCapability) -> dict | None:
        """What a node is using now (CPU %, memory, device use where measurable); None when it
        cannot be measured, as for emulated nodes."""
        ...
