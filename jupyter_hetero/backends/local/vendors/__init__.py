"""What each vendor's tool says of its devices, in one shape.

A vendor module (``nvidia``, ``amd``, ``ascend``, ``intel``, ``cambricon``, ``hygon``) turns its tool's or
library's output into :class:`DeviceFacts` (what a device is) and :class:`DeviceUsage` (what it is doing now).
Each module offers ``discover(run, which) -> (list[DeviceFacts], notes)`` and
``sample(indexes, run, which) -> list[DeviceUsage]``, both soft: a missing tool is ``([], [])``, a failing or
hung one a note, never an exception. Its parsers are pure functions of the tool's text, tested against recorded outputs; running the tool, its
absence and its timeout are the discovery's business, not the parser's.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass

__all__ = ["DeviceFacts", "DeviceUsage", "Runner", "Which", "failure", "library_answer", "run_tool"]

# How a vendor module runs its tool: argv in, stdout out; raises OSError, subprocess.CalledProcessError or
# subprocess.TimeoutExpired. Tests pass their own to replay recorded outputs.
Runner = Callable[[list[str]], str]
# Where a tool is on PATH, or None (shutil.which).
Which = Callable[[str], "str | None"]

TOOL_TIMEOUT_S = 10.0


def run_tool(argv: list[str], timeout: float | None = None) -> str:
    """Run a vendor's tool with a bounded wait (``TOOL_TIMEOUT_S`` unless given): a hung driver must not hang
    discovery or sampling."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout or TOOL_TIMEOUT_S, check=True).stdout


def failure(exc: BaseException) -> str:
    """What a note says of a tool that failed: its timeout, its exit status and message, or the OS error."""
    if isinstance(exc, subprocess.TimeoutExpired):
        return f"no answer within {exc.timeout:g} s"
    if isinstance(exc, subprocess.CalledProcessError):
        said = (exc.stderr or exc.stdout or "").strip()
        return f"exit status {exc.returncode}" + (f": {said[:200]}" if said else "")
    return str(exc)


def library_answer(call: Callable[..., Any] | None, *args: Any) -> Any:
    """What a vendor library's call (NVML, amdsmi) answers, bytes as text; None where the library lacks the call or
    raises, as it does for a query the part or driver does not support: that one fact is unknown, nothing more."""
    if call is None:
        return None
    try:
        value = call(*args)
    except Exception:  # noqa: BLE001 - NVMLError_NotSupported, AmdSmiLibraryException and the like
        return None
    return value.decode() if isinstance(value, bytes) else value


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    """One device as discovered; ``link_domain`` names the fast-link island it shares with its peers."""

    index: int
    vendor: str
    model: str
    memory_mib: int
    driver_version: str | None = None
    runtime: str | None = None  # "cuda 12.4", "rocm 6.1", "cann 8.0", "level-zero 1.3", "neuware 3.9"
    firmware_version: str | None = None
    interconnect: str = "pcie"  # nvlink | hccs | xgmi | xelink | mlulink | pcie
    link_domain: str | None = None
    numa_node: int | None = None
    pci_bus: str | None = None
    health: str | None = None  # None when healthy; the tool's words otherwise


@dataclass(frozen=True, slots=True)
class DeviceUsage:
    """One device's utilisation and memory in use at one moment; None where the tool does not say."""

    index: int
    util_pct: float | None = None
    memory_used_mib: float | None = None
