"""The names of a workload's metrics and their units: what the platform measures, and what a workload reports.

>>> unit_of("memory_rss"), is_measured("loss"), valid_reported_name("loss"), valid_reported_name("Loss!")
('MiB', False, True, False)

A MEASURED name is read from the machine (procfs, a vendor's tool, a cluster's exporter); any other name
that matches :data:`REPORTED_NAME` is the workload's own figure, sent through ``jupyter_hetero.report()``.
"""

from __future__ import annotations

import re

__all__ = [
    "MEASURED",
    "REPORTED_NAME",
    "REPORTED_UNITS",
    "SOURCES",
    "is_measured",
    "unit_of",
    "valid_reported_name",
]

# name -> unit. Byte counters are cumulative over the attempt; the rest are what the figure was when sampled.
MEASURED: dict[str, str] = {
    "cpu_seconds": "s",            # user + system CPU time of the workload's process tree, cumulative
    "cpu_util": "%",               # CPU time over wall time since the previous sample; 100 = one core
    "memory_rss": "MiB",           # resident set of the process tree now
    "memory_rss_peak": "MiB",      # the largest resident set seen in this attempt
    "io_read_bytes": "bytes",      # storage reads the kernel accounted to the tree (not page-cache hits)
    "io_write_bytes": "bytes",     # storage writes the kernel accounted to the tree (dirtied pages)
    "net_rx_bytes": "bytes",       # only where the workload has a network namespace of its own
    "net_tx_bytes": "bytes",
    "device_util": "%",            # the devices' busy share attributed to the workload's processes
    "device_memory": "MiB",        # device memory in use by the workload's own processes
    "device_memory_peak": "MiB",   # the most device memory they held in this attempt
}

# Units of reported names the shipped catalog declares; any other reported name has no unit.
REPORTED_UNITS: dict[str, str] = {
    "throughput_samples_per_s": "samples/s",
    "samples_per_s": "samples/s",
    "vectors_per_s": "vectors/s",
    "frames_per_s": "frames/s",
    "decoder_util": "%",
    "network_bandwidth": "bytes/s",
    "flops": "FLOP/s",
}

REPORTED_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")

# Where a sample came from: procfs, a vendor's tool, an exporter (as "exporter:<name>"), or the workload itself.
SOURCES = ("procfs", "nvidia-smi", "amd-smi", "npu-smi", "xpu-smi", "exporter", "reported")


def is_measured(name: str) -> bool:
    """Whether the platform measures ``name`` (rather than the workload reporting it)."""
    return name in MEASURED


def unit_of(name: str) -> str | None:
    """The unit ``name`` is stored in, or None for a reported figure with no known unit."""
    return MEASURED.get(name) or REPORTED_UNITS.get(name)


def valid_reported_name(name: object) -> bool:
    """Whether a workload may report a figure under ``name``: lower-case words, at most 63 characters."""
    return isinstance(name, str) and REPORTED_NAME.fullmatch(name) is not None
