"""What device exporters say of each device and the pod that holds it, read from their Prometheus text.

    readings = parse("dcgm", text)       # [DeviceReading(namespace="hetero", pod="hetero-job-7-a1-r0-ann",
                                         #                device="GPU-3bc2...", util_pct=87.0, memory_mib=15866.0), ...]
    by_pod(readings)["hetero/hetero-job-7-a1-r0-ann"]   # {"GPU-3bc2...": DeviceReading(...)}

One pure parser per exporter, each reading the utilisation and used-memory families of its vendor:

- NVIDIA DCGM exporter: ``DCGM_FI_DEV_GPU_UTIL`` (%), else ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (a ratio: the only
  one a MIG instance has), and ``DCGM_FI_DEV_FB_USED`` (MiB), per ``UUID`` (else ``gpu``) and MIG instance
  (``GPU_I_ID``);
- Huawei's Ascend npu-exporter: ``npu_chip_info_utilization`` (AI core %) and ``npu_chip_info_hbm_used_memory``
  (MB; ``npu_chip_info_used_memory`` on chips without HBM), per ``vdie_id`` (else ``id``), whose pod labels
  came with MindCluster 6; before that only ``container_npu_utilization`` and ``container_npu_used_memory`` name
  the pod, and are read the same way;
- AMD's device-metrics-exporter: ``gpu_gfx_activity`` (%) and ``gpu_used_vram`` (MB), per ``gpu_uuid`` (else
  ``gpu_id`` and ``gpu_partition_id``), with or without the ``amd_`` prefix a site may configure.

A device no pod holds reads with an empty pod. The pod is the one the exporter names; when Prometheus scraped the
exporter first (a ``/federate`` endpoint), the exporter's own ``pod`` and ``namespace`` labels were renamed
``exported_pod`` and ``exported_namespace`` (``pod`` then names the exporter's pod), and those are read first; a
device no pod holds then reads as held by the exporter's own pod, which is never one of ours.
Older DCGM exporters say ``pod_name``, ``pod_namespace``. A body cut short keeps the families read before the cut.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["KINDS", "DeviceReading", "by_pod", "parse"]

# Label names that carry a pod's name and namespace, in the order they are read.
_POD_LABELS = ("exported_pod", "exported_pod_name", "pod", "pod_name")
_NAMESPACE_LABELS = ("exported_namespace", "exported_pod_namespace", "namespace", "pod_namespace")


@dataclass(frozen=True)
class DeviceReading:
    """One device as an exporter saw it: the pod holding it ("" for none), its utilisation (%) and memory used
    (MiB), each None when the exporter did not say."""

    namespace: str
    pod: str
    device: str
    util_pct: float | None = None
    memory_mib: float | None = None

    @property
    def key(self) -> str:
        """The pod as ``namespace/name``, the backend's key for it; "" when no pod holds the device."""
        return f"{self.namespace}/{self.pod}" if self.pod and self.namespace else ""


@dataclass(frozen=True)
class _Families:
    """Which families of an exporter give utilisation (%) and memory (MiB), each with the factor to those units
    (the first present wins, per device), and which labels name a device. Names are matched in any case (old
    exporters wrote them in lower case)."""

    util: tuple[tuple[str, float], ...]
    memory: tuple[tuple[str, float], ...]
    device: Callable[[dict[str, str]], str]


def _first(*names: str) -> Callable[[dict[str, str]], str]:
    return lambda labels: next((labels[name] for name in names if labels.get(name)), "")


def _dcgm_device(labels: dict[str, str]) -> str:
    """A GPU, or one MIG instance of it."""
    device = _first("UUID", "uuid", "gpu")(labels)
    return f"{device}/{labels['GPU_I_ID']}" if device and labels.get("GPU_I_ID") else device


def _amd_device(labels: dict[str, str]) -> str:
    """A partitioned GPU (CPX) reports each partition: the partition is part of the device."""
    device = _first("gpu_uuid", "serial_number", "gpu_id")(labels)
    partition = labels.get("gpu_partition_id", "0")
    return f"{device}/{partition}" if device and partition not in ("", "0") else device


_EXPORTERS = {
    "dcgm": _Families((("dcgm_fi_dev_gpu_util", 1.0), ("dcgm_fi_prof_gr_engine_active", 100.0)),
                      (("dcgm_fi_dev_fb_used", 1.0),), _dcgm_device),
    "npu-exporter": _Families(
        (("npu_chip_info_utilization", 1.0), ("container_npu_utilization", 1.0)),
        (("npu_chip_info_hbm_used_memory", 1.0), ("npu_chip_info_used_memory", 1.0),
         ("container_npu_used_memory", 1.0)),
        _first("vdie_id", "id")),
    "amd-device-metrics": _Families(
        (("gpu_gfx_activity", 1.0), ("amd_gpu_gfx_activity", 1.0)),
        (("gpu_used_vram", 1.0), ("amd_gpu_used_vram", 1.0)), _amd_device),
}
KINDS = tuple(_EXPORTERS)


def parse(kind: str, text: str) -> list[DeviceReading]:
    """Each device the exporter ``kind`` reports, with its pod (ordered by pod, then device)."""
    families = _EXPORTERS[kind]
    util: dict[tuple[str, str, str], tuple[int, float]] = {}
    memory: dict[tuple[str, str, str], tuple[int, float]] = {}
    # family name -> (the table it fills, its rank there, its factor)
    wanted = {**{name: (util, rank, factor) for rank, (name, factor) in enumerate(families.util)},
              **{name: (memory, rank, factor) for rank, (name, factor) in enumerate(families.memory)}}
    for name, labels, value in _samples(text, wanted.keys()):
        device = families.device(labels)
        if not device or value != value:  # NaN: the exporter could not read it
            continue
        where = (_first(*_NAMESPACE_LABELS)(labels), _first(*_POD_LABELS)(labels), device)
        table, rank, factor = wanted[name]
        if where not in table or rank < table[where][0]:  # the preferred family wins over a fallback
            table[where] = (rank, round(value * factor, 3))
    readings = []
    for where in sorted(util.keys() | memory.keys()):
        namespace, pod, device = where
        readings.append(DeviceReading(namespace if pod else "", pod, device,
                                      util.get(where, (0, None))[1], memory.get(where, (0, None))[1]))
    return readings


def by_pod(readings: Iterable[DeviceReading]) -> dict[str, dict[str, DeviceReading]]:
    """The readings of devices some pod holds, by pod key and device."""
    pods: dict[str, dict[str, DeviceReading]] = {}
    for reading in readings:
        if reading.key:
            pods.setdefault(reading.key, {})[reading.device] = reading
    return pods


def _samples(text: str, names: set[str]) -> Iterator[tuple[str, dict[str, str], float]]:
    """(family in lower case, labels, value) of the samples of ``names``; what follows a malformed line is
    dropped, and so is an unfinished last line (a body cut short)."""
    if not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
    try:
        for family in text_string_to_metric_families(text):
            name = family.name.lower()
            if name in names:
                for sample in family.samples:
                    yield name, sample.labels, float(sample.value)
    except ValueError:
        return
