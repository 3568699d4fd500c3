"""A stand-in for NVIDIA's ``pynvml`` (the ``nvidia-ml-py`` package) that answers from recorded ``nvidia-smi``
outputs, for machines without an NVIDIA driver.

NVML is a C library, so it cannot be replayed at the wire the way a tool's text is; ``nvidia-smi`` is NVML's own
command-line face, and this module answers the calls ``vendors.nvidia`` makes with what ``nvidia-smi`` printed
of the same queries:

- ``nvidia-smi -q -x`` (its XML), or ``nvidia-smi -q`` (the same tree as indented text), gives the driver and
  CUDA versions, and per GPU its name, PCI bus, VBIOS, framebuffer total and used (MiB) and utilisation; ``N/A``
  (a GPU in MIG mode has no whole-GPU utilisation) is answered as NVML answers it, ``NVMLError_NotSupported``,
  and its MIG mode, current and pending;
- ``nvidia-smi topo -m`` gives each GPU's NUMA affinity (``nvmlDeviceGetMemoryAffinity``) and its NVLinks:
  ``NV#`` is a bond of # links to that peer. The matrix does not say which link goes where, so links are
  numbered peer by peer; where a GPU's bonds add up to more links than a GPU has, they cannot be direct, and it
  is answered as NVSwitch-attached: its # links each end at a switch.

A GPU without NVLink answers its first link's state with ``NVMLError_NotSupported``, as NVML does; a GPU
``nvidia-smi`` could not reach answers its handle with the error it printed.
"""

from __future__ import annotations

import re
import types
import xml.etree.ElementTree as ET
from types import SimpleNamespace

NVML_NVLINK_MAX_LINKS = 18
NVML_AFFINITY_SCOPE_NODE = 0
_GPU, _SWITCH = 0, 2
_MIB = 1024 * 1024


class NVMLError(Exception):
    def __init__(self, value: int, text: str):
        self.value = value
        super().__init__(text)


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - pynvml's name
    def __init__(self):
        super().__init__(3, "Not Supported")


# Where ``-q``'s text names a field otherwise than its XML does.
_XML_NAMES = {("utilization", "gpu"): "gpu_util", ("utilization", "memory"): "memory_util", ("pci", "bus_id"): "pci_bus_id",
              ("mig_mode", "current"): "current_mig", ("mig_mode", "pending"): "pending_mig"}


# What nvidia-smi prints in place of a GPU it cannot reach: NVML's error for the handle.
_UNREACHABLE = re.compile(r"Unable to determine the device handle for GPU ?(?P<bus>[\w:.]+): (?P<error>.+)")


def log_of(text: str) -> ET.Element:
    """``nvidia-smi -q``'s indented text as the tree ``-q -x`` prints: "Key : value" lines are leaves, a key
    alone opens a section, ``GPU <bus>`` a ``<gpu id=...>``, and the line printed for a GPU it cannot reach a
    ``<gpu error=...>`` (no XML of one was found)."""
    root = ET.Element("nvidia_smi_log")
    stack: list[tuple[int, ET.Element]] = [(-1, root)]
    for line in text.splitlines():
        if not line.strip() or line.startswith("="):
            continue
        indent = len(line) - len(line.lstrip())
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        key, colon, value = (part.strip() for part in line.partition(" : "))
        if unreachable := _UNREACHABLE.match(line):
            element = ET.SubElement(parent, "gpu", id=unreachable["bus"], error=unreachable["error"])
        elif indent == 0 and key.startswith("GPU ") and not colon:
            element = ET.SubElement(parent, "gpu", id=key.removeprefix("GPU "))
        else:
            tag = key.lower().replace(" ", "_")
            element = ET.SubElement(parent, _XML_NAMES.get((parent.tag, tag), tag))
            element.text = value if colon else None
        stack.append((indent, element))
    return root


def topology_of(text: str) -> dict[int, dict[str, str]]:
    """``nvidia-smi topo -m``'s GPU rows as {gpu: {column: cell}}; the header's names may hold one space
    ("CPU Affinity"), the cells none."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = next(line for line in lines if line.strip().startswith("GPU0"))
    columns = re.split(r"\t+|\s{2,}", header.strip())
    # A row may hold more cells than the header names (a published header cut short); those are not read.
    return {int(cells[0][3:]): dict(zip(columns, cells[1:], strict=False))
            for cells in map(str.split, lines) if re.fullmatch(r"GPU\d+", cells[0])}


def links_of(topology: dict[int, dict[str, str]]) -> dict[int, list[tuple[int, int | None]]]:
    """Each GPU's NVLinks as (remote type, remote GPU or None for a switch), by the rule in this module's text."""
    links = {}
    for gpu, row in topology.items():
        bonds = [(int(column[3:]), int(cell[2:])) for column, cell in row.items()
                 if column.startswith("GPU") and cell.startswith("NV")]
        if sum(width for _, width in bonds) > NVML_NVLINK_MAX_LINKS:
            links[gpu] = [(_SWITCH, None)] * max(width for _, width in bonds)
        else:
            links[gpu] = [(_GPU, peer) for peer, width in bonds for _ in range(width)]
    return links


def machine(*, xml: str = "", query: str = "", topology: str = "", init_fails: bool = False) -> types.ModuleType:
    """A ``pynvml`` module for one recorded machine: its ``-q -x`` (``xml``) or ``-q`` (``query``) output, and
    its ``topo -m``."""
    log = ET.fromstring(xml.strip()) if xml else log_of(query)
    gpus = log.findall("gpu")
    matrix = topology_of(topology) if topology else {}
    links = links_of(matrix)

    def text(handle: int, path: str) -> str:
        value = gpus[handle].findtext(path)
        if value is None or value.strip() == "N/A":
            raise NVMLError_NotSupported()
        return value.strip()

    def mib(handle: int, path: str) -> int:
        return int(text(handle, path).removesuffix(" MiB")) * _MIB

    def init() -> None:
        if init_fails:
            raise NVMLError(9, "Driver Not Loaded")

    def handle_by_index(index: int) -> int:
        if not 0 <= index < len(gpus):
            raise NVMLError(2, "Invalid Argument")
        if error := gpus[index].get("error"):
            raise NVMLError(15 if error.startswith("GPU is lost") else 999, error)
        return index

    def cuda_version() -> int:
        major, minor = log.findtext("cuda_version").split(".")
        return int(major) * 1000 + int(minor) * 10

    def utilisation(handle: int) -> SimpleNamespace:
        return SimpleNamespace(gpu=int(text(handle, "utilization/gpu_util").removesuffix(" %")),
                               memory=int(text(handle, "utilization/memory_util").removesuffix(" %")))

    def mig_mode(handle: int) -> list[int]:
        return [int(text(handle, f"mig_mode/{which}_mig") == "Enabled") for which in ("current", "pending")]

    def memory_affinity(handle: int, size: int, scope: int) -> list[int]:
        node = matrix.get(handle, {}).get("NUMA Affinity", "N/A")
        if not node.isdigit():
            raise NVMLError_NotSupported()
        return [1 << int(node)]

    def link(handle: int, number: int) -> tuple[int, int | None]:
        own = links.get(handle, [])
        if number >= len(own):
            raise NVMLError_NotSupported()
        return own[number]

    def remote_pci(handle: int, number: int) -> SimpleNamespace:
        _kind, peer = link(handle, number)
        if peer is None:  # a switch's bus: the recording does not say which
            raise NVMLError_NotSupported()
        return SimpleNamespace(busId=gpus[peer].findtext("pci/pci_bus_id"))

    module = types.ModuleType("pynvml")
    module.__dict__.update(
        NVMLError=NVMLError, NVMLError_NotSupported=NVMLError_NotSupported,
        NVML_NVLINK_MAX_LINKS=NVML_NVLINK_MAX_LINKS, NVML_AFFINITY_SCOPE_NODE=NVML_AFFINITY_SCOPE_NODE,
        nvmlInit=init, nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: log.findtext("driver_version"),
        nvmlSystemGetCudaDriverVersion_v2=cuda_version,
        nvmlDeviceGetCount=lambda: len(gpus), nvmlDeviceGetHandleByIndex=handle_by_index,
        nvmlDeviceGetName=lambda h: text(h, "product_name"),
        nvmlDeviceGetPciInfo=lambda h: SimpleNamespace(busId=text(h, "pci/pci_bus_id")),
        nvmlDeviceGetVbiosVersion=lambda h: text(h, "vbios_version"),
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total=mib(h, "fb_memory_usage/total"),
                                                          used=mib(h, "fb_memory_usage/used")),
        nvmlDeviceGetUtilizationRates=utilisation, nvmlDeviceGetMemoryAffinity=memory_affinity,
        nvmlDeviceGetMigMode=mig_mode,
        nvmlDeviceGetNvLinkState=lambda h, n: link(h, n) and 1,
        nvmlDeviceGetNvLinkRemoteDeviceType=lambda h, n: link(h, n)[0],
        nvmlDeviceGetNvLinkRemotePciInfo_v2=remote_pci,
    )
    return module
