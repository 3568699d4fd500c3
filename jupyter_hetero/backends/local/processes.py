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
from ...i18n import N_
from ..base import Exit, Launch, ProcessHandle
from .isolation import WorkloadIsolation
from .telemetry import SOURCE_OF, ProcessDeviceSampler, sample_devices, sample_each, summarise

__all__ = ["LocalBackend", "tree_usage"]

_MIB = 1024 * 1024
# Seconds between passes over the process table for usage (memory of each replica's process tree,
# GPU use where measured). Liveness is checked on every scan, at the cost of a waitpid per replica.
USAGE_INTERVAL_S = 5.0
# A workload here shares the host's network namespace (sandbox.py keeps it, so kernels and services listen on
# loopback): the kernel counts its traffic with everyone else's, per interface, never per process.
NETWORK_NOT_ATTRIBUTABLE = N_("network bytes are not measured on this machine: workloads share the host's network "
                              "namespace, whose counters cannot be told apart per workload")
# What the runner's exit record measured of the whole run (see kernel/runner.py).
_EXIT_FIGURES = ("peak_rss_mib", "cpu_seconds", "io_read_bytes", "io_write_bytes", "ended_at")
# Service replicas listen here only: the endpoint, behind the server's authentication, is the way in.
LOOPBACK = "127.0.0.1"


class LocalBackend:
    """This machine. Emulated nodes run here too, with their device environment set."""

    name = "local"
    runs_here = True
    # Each replica's sandbox (isolation.py), set by the server; None runs replicas as the server's own processes.
    isolation: WorkloadIsolation | None = None
    # What is not measured of a workload here, and why (metric_names.MEASURED names; said once per attempt).
    unmeasured = {
        "net_rx_bytes": NETWORK_NOT_ATTRIBUTABLE,
        "net_tx_bytes": NETWORK_NOT_ATTRIBUTABLE,
    }

    def __init__(self, *, usage_interval_s: float = USAGE_INTERVAL_S) -> None:
        self._children: dict[int, subprocess.Popen] = {}
        self._scanned: dict[ProcessHandle, dict] = {}  # the latest scan's samples, for sample()
        self.usage_interval_s = usage_interval_s
        self._measured_at = float("-inf")  # monotonic time of the last pass over the process table
        # Per-process device use, read off the tick by its own thread (a vendor's tool may take a second).
        self.process_devices = ProcessDeviceSampler()
        psutil.cpu_percent(interval=None)  # the first reading only starts the measurement

    @property
    def measured_at(self) -> float:
        """When (``time.monotonic()``) usage was last measured over the process table; ``-inf`` before the first
        pass. A tick between passes reuses the last samples, so this tells the ticks that measured from the rest."""
        return self._measured_at

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
        return Exit(data.get("exit_code"), {name: data.get(name) for name in _EXIT_FIGURES})

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
        # What each process uses, per family, as the sampler's thread last read it: a workload's own figures,
        # matched by its tree's pids.
        self.process_devices.want(set(wanted))
        per_process = {family: _by_pid(self.process_devices.latest(family) or []) for family in wanted}
        measured: dict[ProcessHandle, dict] = {}
        for handle in handles:
            if not self._alive_in(handle, table.get(handle.pid)):
                continue
            tree, members = [handle.pid], []
            while tree:
                pid = tree.pop()
                tree.extend(children.get(pid, ()))
                if pid in table:
                    members.append(table[pid]["process"])
            sample = tree_usage(members)
            if handle.measurable:
                found = devices[handle.family]
                sample.update(summarise(found[index] for index in handle.devices if index in found))
                sample.update(_own_device_use(per_process[handle.family], {member.pid for member in members},
                                              SOURCE_OF.get(handle.family, handle.family)))
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
        try:
            members = [process, *process.children(recursive=True)]
        except psutil.Error:
            members = [process]
        sample = tree_usage(members)
        if handle.measurable:
            sample.update(sample_devices(handle.family, handle.devices))
        return sample


def tree_usage(members: Iterable[psutil.Process]) -> dict:
    """What a replica's process tree uses, summed over its live members: resident memory (MiB), CPU time (user +
    system, s) and storage reads and writes (bytes, ``/proc/<pid>/io``'s ``read_bytes``/``write_bytes``: what
    reached or left the block layer, not page-cache hits). Each member's counters include those of the children it
    has reaped, so work done by processes that came and went is still counted; a member gone since the pass over the
    process table adds nothing."""
    rss = cpu = read = write = 0.0
    io_known = False
    for member in members:
        try:
            with member.oneshot():
                rss += member.memory_info().rss
                times = member.cpu_times()
                cpu += times.user + times.system + times.children_user + times.children_system
        except psutil.Error:
            continue
        try:
            io = member.io_counters()
        except (psutil.Error, AttributeError, NotImplementedError):
            continue  # another account's process (a sandboxed one): its /proc/<pid>/io is not ours to read
        read, write, io_known = read + io.read_bytes, write + io.write_bytes, True
    usage = {"rss_mib": round(rss / _MIB, 1), "cpu_seconds": round(cpu, 3)}
    if io_known:
        usage.update(io_read_bytes=read, io_write_bytes=write)
    return usage


def _by_pid(uses) -> dict[int, list]:
    found: dict[int, list] = {}
    for use in uses:
        found.setdefault(use.pid, []).append(use)
    return found


def _own_device_use(by_pid: dict[int, list], pids: set[int], source: str) -> dict:
    """The device memory (MiB) and utilisation (%, summed over devices and processes) of these pids, as the vendor's
    tool attributed them; {} when it named none of them."""
    uses = [use for pid in pids & by_pid.keys() for use in by_pid[pid]]
    if not uses:
        return {}
    memory = [use.memory_mib for use in uses if use.memory_mib is not None]
    utils = [use.util_pct for use in uses if use.util_pct is not None]
    return {"device_source": source,
            **({"process_device_memory_mib": round(sum(memory), 1)} if memory else {}),
            **({"process_device_util_pct": round(sum(utils), 1)} if utils else {})}


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
