"""What the scheduler asks of a backend: start replicas, tell whether they run, stop them.

A backend never decides anything; the workload service decides, records the decision, then
calls the backend. Handles are plain data so they can be stored and re-adopted after a restart.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..capability import NodeCapability

__all__ = ["Backend", "Exit", "Launch", "ProcessHandle"]


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


@dataclass(frozen=True)
class ProcessHandle:
    """A started replica; ``pid_started`` tells a live process from a reused pid."""

    replica: int
    node: str
    pid: int
    pid_started: float
    exit_path: str = ""
    devices: tuple[int, ...] = ()
    measurable: bool = False

    def to_json(self) -> dict:
        return {"replica": self.replica, "node": self.node, "pid": self.pid, "pid_started": self.pid_started,
                "exit_path": self.exit_path, "devices": list(self.devices), "measurable": self.measurable}

    @classmethod
    def from_json(cls, data: dict) -> ProcessHandle:
        return cls(data["replica"], data["node"], data["pid"], data["pid_started"], data.get("exit_path", ""),
                   tuple(data.get("devices", ())), data.get("measurable", False))


@dataclass(frozen=True)
class Exit:
    """How a replica ended, as far as the backend can tell."""

    code: int | None  # None: the process is gone and left no exit record (killed, or lost)
    metrics: dict = field(default_factory=dict)


class Backend(Protocol):
    name: str

    def launch(self, launch: Launch) -> ProcessHandle: ...
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
