"""Run replicas as local processes: own process group, log file, exit record, usage samples."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import psutil

from ...capability import NodeCapability
from ..base import Exit, Launch, ProcessHandle
from .isolation import WorkloadIsolation
from .telemetry import sample_devices, sample_each, summarise

__all__ = ["LocalBackend"]

_MIB = 1024 * 1024
# Seconds between passes over the process table for usage (memory of each replica's process tree,
# GPU use where measured). Liveness is checked on every scan, at the cost of a waitpid per replica.
USAGE_INTERVAL_S = 5.0
# Service replicas listen here only: the endpoint, behind the server's authentication, is the way in.
LOOPBACK = "127.0.0.1"


class LocalBackend:
    """This machine. Emulated nodes run here too, with their device environment set."""

    name = "local"
    runs_here = True
    # Each replica's sandbox (isolation.py), set by the server; None runs replicas as the server's own processes.
    isolation: WorkloadIsolation | None = None

    def __init__(self, *, usage_interval_s: float = USAGE_INTERVAL_S) -> None:
        self._children: dict[int, subprocess.Popen] = {}
        self._scanned: dict[ProcessHandle, dict] = {}  # the latest scan's samples, for sample()
        self.usage_interval_s = usage_interval_s
        self._measured_at = float("-inf")  # monotonic time of the last pass over the process table
        psutil.cpu_percent(interval=None)  # the first reading only starts the measurement

    def start(self, *, wake=None) -> None:
        pass  # its node was discovered when the server started; its processes are its own children

    def close(self) -> None:
        pass

    def poll_nodes(self, placed_servers: frozenset[int] = frozenset()) -> None:
        return None

    def problem(self, handle: ProcessHandle) -> str | None:
        return None  # a process that started runs; how it ends is its exit code

    def admission_wait(self, handle: ProcessHandle) -> None:
        return None  # this engine alone admits work on this machine

    def adopt(self, handles: list[ProcessHandle], log_path) -> list[ProcessHandle]:
        return [handle for handle in handles if self.running(handle)]  # they write their log file themselves

    def collect_orphans(self, keep: Iterable[str]) -> list[str]:
        return []  # what a recorded attempt runs is adopted; what a cut-off one runs, see stop_cut_off

    def stop_cut_off(self, attempt_dir: Path) -> int:
        stopped = 0
        for process in psutil.process_iter(["pid", "cmdline"]):
            line = process.info["cmdline"] or []
            exit_file = line[line.index("--exit-file") + 1] if "--exit-file" in line[:-1] else ""
            if "jupyter_hetero.kernel.runner" in line and Path(exit_file).parent == attempt_dir:
                stopped += _signal_group(process.info["pid"], signal.SIGKILL)  # the runner and its command
        return stopped

    def stop_left_kernels(self, kernel_ids: Iterable[str]) -> int:
        """Stop kernels an earlier server started and left running: a sandbox ends with its server, except when
        the server died in the moment between starting the sandbox and the sandbox watching it. Found by their
        connection files on their command lines, in one pass; how many process groups were stopped."""
        connections = tuple(f"kernel-{kernel_id}.json" for kernel_id in kernel_ids)
        ours = os.getpgid(0)
        groups = set()
        for process in psutil.process_iter(["pid", "cmdline"]):
            if any(part.endswith(connections) for part in process.info["cmdline"] or []):
                try:
                    groups.add(os.getpgid(process.info["pid"]))
                except ProcessLookupError:
                    pass
        return sum(_signal_group(group, signal.SIGKILL) for group in groups - {ours})

    def node_utilisation(self, capability: NodeCapability) -> dict | None:
        """This machine's CPU and memory use, and its devices' where their vendor's tool measures them.
        Emulated nodes use nothing real: None."""
        if capability.emulated:
            return None
        memory = psutil.virtual_memory()
        return {
            "cpu_pct": psutil.cpu_percent(interval=None),
            "memory_used_mib": (memory.total - memory.available) // _MIB,
            **_sample_node(capability),
        }

    def launch(self, launch: Launch) -> ProcessHandle:
        launch.log_path.parent.mkdir(parents=True, exist_ok=True)
        launch.cwd.mkdir(parents=True, exist_ok=True)
        serving = launch.placed is not None and launch.placed.serving is not None
        command = [sys.executable, "-m", "jupyter_hetero.kernel.runner", "--exit-file", str(launch.exit_path), *launch.argv]
        if self.isolation is not None:
            command = self.isolation.job_argv(launch, command)
        with open(launch.log_path, "ab") as log:
            child = subprocess.Popen(
                command, cwd=launch.cwd, env={**launch.env, "HOST": LOOPBACK} if serving else launch.env, stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: signals reach the whole job, not us
            )
        self._children[child.pid] = child
        try:
            started = psutil.Process(child.pid).create_time()
        except psutil.NoSuchProcess:
            started = 0.0
        return ProcessHandle(launch.replica, launch.node, child.pid, started, str(launch.exit_path), launch.devices,
                             launch.measurable, family=launch.family)

    def service_port(self) -> int:
        """A port nothing on this machine listens on now."""
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((LOOPBACK, 0))
            return probe.getsockname()[1]

    def address(self, handle: ProcessHandle) -> str:
        return LOOPBACK

    def expose(self, services: frozenset[tuple[str, str]]) -> None:
        pass  # one machine: the endpoint is the only way in

    def _process(self, handle: ProcessHandle) -> psutil.Process | None:
        try:
            process = psutil.Process(handle.pid)
            if abs(process.create_time() - handle.pid_started) > 0.01:
                return None  # the pid was reused by an unrelated process
            if process.status() == psutil.STATUS_ZOMBIE:
                return None
            return process
        except psutil.NoSuchProcess:
            return None

    def running(self, handle: ProcessHandle) -> bool:
        child = self._children.get(handle.pid)
        if child is not None:
            return child.poll() is None
        return self._process(handle) is not None

    def exit(self, handle: ProcessHandle) -> Exit:
        child = self._children.pop(handle.pid, None)
        if child is not None:
            child.poll()
        # What the replica left in its group ends with it, as in a container: a runner killed from outside (the
        # OOM killer, a SIGKILL) would leave its command running, orphaned, a service's still on its port. The
        # group's id is not given to a new process while any member lives.
        _signal_group(handle.pid, signal.SIGKILL)
        try:
            with open(handle.exit_path, encoding="utf-8") as record:
                data = json.load(record)
        except (OSError, ValueError):
            return Exit(None)
        return Exit(data.get("exit_code"), {"peak_rss_mib": data.get("peak_rss_mib")})

    def signal_stop(self, handle: ProcessHandle) -> None:
        self._signal(handle, signal.SIGTERM)

    def kill(self, handle: ProcessHandle) -> None:
        self._signal(handle, signal.SIGKILL)

    def _signal(self, handle: ProcessHandle, signum: int) -> None:
        if self._process(handle) is None and handle.pid not in self._children:
            return
        _signal_group(handle.pid, signum)

    def scan(self, handles: Iterable[ProcessHandle]) -> dict[ProcessHandle, dict]:
        """The live ones among ``handles``, each with its latest usage sample.

        A scheduler tick asks this of every running replica, so it costs what changed, not the
        machine: liveness is ``Popen.poll()`` for our own children (a waitpid) and one read of
        ``/proc/<pid>/stat`` for a replica adopted after a restart (its pid and start time). Usage
        needs every process (a replica's work may run in grandchildren), so it is measured in one
        pass over the process table, into a parent -> children map, at most every
        ``usage_interval_s``; between passes a replica keeps its last sample (``{}`` before its first)."""
        handles = list(handles)
        live = [handle for handle in handles if self._alive(handle)]
        now = time.monotonic()
        if live and now - self._measured_at >= self.usage_interval_s:
            self._measured_at = now
            measured = self._measure(live)
            live = [handle for handle in live if handle in measured]  # gone since: seen in the pass
            self._scanned = measured
        else:
            self._scanned = {handle: self._scanned.get(handle, {}) for handle in live}
        return dict(self._scanned)

    def _alive(self, handle: ProcessHandle) -> bool:
        child = self._children.get(handle.pid)
        if child is not None:
            return child.poll() is None  # our own child: its exit status is exact (and reaps it)
        return self._process(handle) is not None

    def _measure(self, handles: list[ProcessHandle]) -> dict[ProcessHandle, dict]:
        """Each live replica's tree summed from one pass over the process table."""
        table: dict[int, dict] = {}
        children: dict[int, list[int]] = {}
        for process in psutil.process_iter(["ppid", "create_time", "status"]):
            table[process.pid] = {**process.info, "process": process}
            children.setdefault(process.info["ppid"], []).append(process.pid)
        # One ask of each family's tool for every device measured in this pass, not one per replica.
        wanted: dict[str, set[int]] = {}
        for handle in handles:
            if handle.measurable:
                wanted.setdefault(handle.family, set()).update(handle.devices)
        devices = {family: sample_each(family, sorted(indexes)) for family, indexes in wanted.items()}
        measured: dict[ProcessHandle, dict] = {}
        for handle in handles:
            if not self._alive_in(handle, table.get(handle.pid)):
                continue
            rss, tree = 0, [handle.pid]
            while tree:
                pid = tree.pop()
                tree.extend(children.get(pid, ()))
                try:
                    rss += table[pid]["process"].memory_info().rss
                except (KeyError, psutil.Error):
                    pass  # gone since the pass over the table: it holds no memory now
            sample = {"rss_mib": round(rss / _MIB, 1)}
            if handle.measurable:
                found = devices[handle.family]
                sample.update(summarise(found[index] for index in handle.devices if index in found))
            measured[handle] = sample
        return measured

    def _alive_in(self, handle: ProcessHandle, entry: dict | None) -> bool:
        child = self._children.get(handle.pid)
        if child is not None:
            return child.poll() is None  # our own child: its exit status is exact (and reaps it)
        return (entry is not None and abs((entry["create_time"] or 0) - handle.pid_started) <= 0.01
                and entry["status"] != psutil.STATUS_ZOMBIE)

    def sample(self, handle: ProcessHandle) -> dict:
        """Resident memory of the replica's process tree, in MiB, and its devices' use where their
        vendor's tool measures it: the latest :meth:`scan`'s when that found the replica alive, else measured now."""
        if handle in self._scanned:
            return self._scanned[handle]
        process = self._process(handle)
        if process is None:
            return {}
        rss = 0
        try:
            for member in [process, *process.children(recursive=True)]:
                rss += member.memory_info().rss
        except psutil.Error:
            pass
        sample = {"rss_mib": round(rss / _MIB, 1)}
        if handle.measurable:
            sample.update(sample_devices(handle.family, handle.devices))
        return sample


def _sample_node(capability: NodeCapability) -> dict[str, float]:
    accelerator = capability.accelerator
    if accelerator is None:
        return {}
    indexes = [device.index for device in accelerator.devices] or list(range(accelerator.count))
    return sample_devices(capability.family.value, indexes)


def _signal_group(pid: int, signum: int) -> bool:
    """Signal the process group ``pid`` leads (each runner leads its own); False when it is gone or not ours."""
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True
