"""A Node's device-plugin resources and vendor labels as one accelerator group, with findings.

The extended resources in ``status.allocatable`` say what pods can ask for; the labels of GPU
feature discovery, Node Feature Discovery and the vendors' labellers say what the devices are.
Where a vendor publishes no label for a fact, sites may set ours: ``hetero.jupyter.org/accelerator.model``,
``.memory`` (a quantity, per device), ``.driver`` and ``.runtime`` (``"cann 8.0"``); these win.
Nothing here raises on a strange node: a missing or contradictory fact becomes a finding.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ...capability import Accelerator, Interconnect, Sharing
from . import quantities

__all__ = ["DEVICE_RESOURCES", "read_accelerator"]

# The extended resources of each vendor's device plugin, by vendor (family_of's vendor names).
DEVICE_RESOURCES: dict[str, tuple[str, ...]] = {
    "nvidia": ("nvidia.com/gpu",),
    "amd": ("amd.com/gpu",),
    "intel": ("gpu.intel.com/i915", "gpu.intel.com/xe"),
    "ascend": ("huawei.com/Ascend910", "huawei.com/Ascend310P", "huawei.com/Ascend310"),
    "cambricon": ("cambricon.com/mlu",),
    "hygon": ("hygon.com/dcu",),
}
_MIG_PREFIX = "nvidia.com/mig-"
# PCI vendor ids of accelerator makers, as NFD writes them in `pci-<class>_<vendor>.present`.
_PCI_VENDORS = {"10de": "nvidia", "1002": "amd", "8086": "intel", "19e5": "ascend", "cabc": "cambricon", "1d94": "hygon"}
_NFD_PCI = re.compile(r"^feature\.node\.kubernetes\.io/pci-([0-9a-f]{4})_([0-9a-f]{4})\.present$")
_SITE = "hetero.jupyter.org/accelerator."
# Nominal device memory of Ascend chips (the plugin labels none); npu.chip.name prefixes, longest first.
_ASCEND_MEMORY_MIB = (("910B4", 32768), ("910B", 65536), ("910", 32768), ("310P", 24576), ("310", 8192))
_HAMI_REGISTER = "hami.io/node-nvidia-register"


@dataclass
class _Group:
    vendor: str
    model: str
    count: int
    memory_mib: int
    resource: str
    driver: str | None = None
    runtime: str | None = None
    interconnect: Interconnect = "pcie"
    sharing: Sharing = "whole"


def read_accelerator(name: str, labels: Mapping[str, str], annotations: Mapping[str, str],
                     allocatable: Mapping[str, object]) -> tuple[Accelerator | None, list[str]]:
    """The node's accelerator group (None for a CPU node) and the findings met on the way."""
    findings: list[str] = []
    offered: dict[str, dict[str, int]] = {}
    for vendor, resources in DEVICE_RESOURCES.items():
        for resource in resources:
            if resource in allocatable and (n := _count(name, resource, allocatable[resource], findings)):
                offered.setdefault(vendor, {})[resource] = n
    mig = {key: n for key in allocatable if key.startswith(_MIG_PREFIX)
           if (n := _count(name, key, allocatable[key], findings))}
    if mig:
        offered.setdefault("nvidia", {}).update(mig)
    _unplugged(name, labels, offered, findings)
    if not offered:
        return None, findings
    vendor = max(offered, key=lambda v: sum(offered[v].values()))
    if len(offered) > 1:
        others = ", ".join(f"{r}={n}" for v in offered if v != vendor for r, n in offered[v].items())
        findings.append(f"node {name} offers devices of more than one vendor; scheduling uses {vendor} and ignores {others}")
    group = _READERS[vendor](name, labels, annotations, allocatable, offered[vendor], findings)
    if group is None:
        return None, findings
    _site_labels(name, labels, group, findings)
    if group.runtime is None:
        findings.append(f"node {name}: no label gives its {group.vendor} runtime version, so templates that need a "
                        f"minimum runtime will not match it; set {_SITE}runtime (e.g. 'cann 8.0', 'rocm 6.1')")
    if group.count < 1:
        findings.append(f"node {name} offers no {group.resource} devices")
        return None, findings
    return Accelerator(vendor=group.vendor, model=group.model, count=group.count, memory_mib=group.memory_mib,
                       driver_version=group.driver, runtime=group.runtime, interconnect=group.interconnect,
                       sharing=group.sharing, resource=group.resource), findings


def _count(name: str, resource: str, value: object, findings: list[str]) -> int:
    try:
        return quantities.count(value)
    except ValueError as exc:
        findings.append(f"node {name} resource {resource}: {exc}")
        return 0


def _int_label(name: str, labels: Mapping[str, str], key: str, findings: list[str]) -> int | None:
    value = labels.get(key)
    if value is None:
        return None
    if str(value).isascii() and str(value).isdigit():
        return int(value)
    findings.append(f"node {name} label {key}={value!r} is not a whole number")
    return None


def _version(labels: Mapping[str, str], *keys: str) -> str | None:
    parts = [str(labels[key]) for key in keys if labels.get(key) not in (None, "")]
    return ".".join(parts) if parts and keys[0] in labels else None


def _unplugged(name: str, labels: Mapping[str, str], offered: dict, findings: list[str]) -> None:
    # Devices the labels show but no device plugin offers: the node runs CPU work only until it does.
    seen: set[str] = set()
    for key, value in labels.items():
        match = _NFD_PCI.match(key)
        if match and str(value) == "true":
            pci_class, vendor = match.groups()
            # Integrated Intel graphics (VGA class) is on many CPU servers and is not an accelerator.
            if not (vendor == "8086" and pci_class == "0300"):
                seen.add(_PCI_VENDORS.get(vendor, ""))
    if "nvidia.com/gpu.product" in labels:
        seen.add("nvidia")
    if "amd.com/gpu.product-name" in labels:
        seen.add("amd")
    if "accelerator" in labels and str(labels["accelerator"]).startswith("huawei-Ascend"):
        seen.add("ascend")
    for vendor in sorted(seen - {""} - offered.keys()):
        findings.append(f"node {name} has {vendor} devices in its labels but offers none of "
                        f"{', '.join(DEVICE_RESOURCES[vendor])}; is the device plugin running?")


def _nvidia(name, labels, annotations, allocatable, offered, findings) -> _Group | None:
    product = str(labels.get("nvidia.com/gpu.product", ""))
    hami = bool({"nvidia.com/gpumem", "nvidia.com/gpucores"} & allocatable.keys()) or _HAMI_REGISTER in annotations \
        or labels.get("gpu") == "on"
    registered = _hami_devices(annotations.get(_HAMI_REGISTER))
    if not product and registered:
        product = registered[0][0].replace(" ", "-")
    base, _, profile = product.removesuffix("-SHARED").partition("-MIG-")
    while base.startswith("NVIDIA-"):  # HAMi's device type repeats it: "NVIDIA-NVIDIA A10"
        base = base.removeprefix("NVIDIA-")
    base = "Tesla " + base.removeprefix("Tesla-") if base.startswith("Tesla-") else base
    if not base:
        base = "unknown"
        findings.append(f"node {name} offers {', '.join(offered)} but has no nvidia.com/gpu.product label")
    memory = _int_label(name, labels, "nvidia.com/gpu.memory", findings)
    if memory is None and registered:
        memory = registered[0][1]
    group = _Group(
        vendor="nvidia", model=base, count=0, memory_mib=memory or 0, resource="nvidia.com/gpu",
        driver=_version(labels, "nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver-version.minor",
                        "nvidia.com/cuda.driver-version.revision", "nvidia.com/cuda.driver-version.rev")
        or _version(labels, "nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev"),
        runtime=None,
        interconnect="nvlink" if _nvlinked(base, str(labels.get("nvidia.com/gpu.machine", ""))) else "pcie",
    )
    cuda = _version(labels, "nvidia.com/cuda.runtime-version.major", "nvidia.com/cuda.runtime-version.minor") \
        or _version(labels, "nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor")
    group.runtime = f"cuda {cuda}" if cuda else None
    labelled = _int_label(name, labels, "nvidia.com/gpu.count", findings)
    # Several kinds of device on one node (MIG mixed strategy): one group, the one with most devices.
    kinds = sorted(offered.items(), key=lambda item: (-item[1], item[0]))
    resource, count = kinds[0]
    if len(kinds) > 1:
        findings.append(f"node {name} offers several kinds of NVIDIA device; scheduling uses {resource}={count} "
                        f"and ignores {', '.join(f'{r}={n}' for r, n in kinds[1:])}")
    if resource.startswith(_MIG_PREFIX):
        slice_profile = resource.removeprefix(_MIG_PREFIX)
        slice_memory = _int_label(name, labels, f"nvidia.com/mig-{slice_profile}.memory", findings)
        if slice_memory is None:
            gigabytes = re.search(r"\.(\d+)gb", slice_profile)
            slice_memory = int(gigabytes.group(1)) * 1024 if gigabytes else 0
            findings.append(f"node {name} has no nvidia.com/mig-{slice_profile}.memory label; "
                            f"device memory taken from the profile name")
        group.model, group.count, group.memory_mib, group.resource = f"{base} MIG {slice_profile}", count, slice_memory, resource
        group.interconnect = "none"  # MIG instances have no peer-to-peer link
        return group
    if profile:  # MIG single strategy: every GPU cut alike, each slice offered as nvidia.com/gpu
        group.model, group.interconnect = f"{base} MIG {profile}", "none"
    if hami:
        physical = labelled or len(registered) or None
        if physical is None:
            findings.append(f"node {name} shares GPUs through HAMi but neither nvidia.com/gpu.count nor "
                            f"{_HAMI_REGISTER} says how many; counting {count}")
        group.count, group.sharing = physical or count, "milli"
        unhealthy = sum(1 for _type, _memory, healthy in registered if not healthy)
        if unhealthy:
            group.count = max(group.count - unhealthy, 0)
            findings.append(f"node {name}: HAMi registers {unhealthy} of its GPUs as unhealthy; "
                            f"scheduling counts {group.count}")
        return group
    replicas = _int_label(name, labels, "nvidia.com/gpu.replicas", findings) or 1
    strategy = labels.get("nvidia.com/gpu.sharing-strategy", "none")
    if replicas > 1 and strategy not in ("none", ""):
        physical = labelled or count // replicas
        findings.append(f"node {name} shares each GPU as {replicas} replicas ({strategy}); each device "
                        f"placed here is one shared replica, not a whole GPU")
        group.count = physical
        return group
    if labelled is not None and labelled != count:
        findings.append(f"node {name} label nvidia.com/gpu.count={labelled} but {resource}={count} is allocatable; "
                        f"using {count}")
    group.count = count
    return group


def _nvlinked(product: str, machine: str) -> bool:
    # SXM modules (and HBM3 parts, sold only as SXM) sit on an NVLink baseboard; so do DGX/HGX machines.
    return any(mark in product for mark in ("SXM", "HBM3")) or any(mark in machine for mark in ("DGX", "HGX"))


def _hami_devices(register: str | None) -> list[tuple[str, int, bool]]:
    """(type, memory MiB, healthy) per device from HAMi's register annotation
    (`uuid,split,mem,cores,type,numa,healthy:...`); a device without the flag counts as healthy."""
    devices = []
    for entry in str(register or "").split(":"):
        fields = entry.split(",")
        if len(fields) >= 5 and fields[2].isdigit():
            devices.append((fields[4], int(fields[2]), len(fields) < 7 or fields[6].strip().lower() != "false"))
    return devices


def _amd(name, labels, annotations, allocatable, offered, findings) -> _Group:
    model = str(labels.get("amd.com/gpu.product-name", "")).replace("_", " ").strip()
    if not model:
        model = "unknown"
        findings.append(f"node {name} offers amd.com/gpu but has no amd.com/gpu.product-name label")
    memory = 0
    vram = labels.get("amd.com/gpu.vram")
    if vram is not None:
        # The labeller writes whole GiB with a bare "G" ("192G" on an MI300X), not the SI gigabyte.
        gib = re.fullmatch(r"(\d+)G", str(vram))
        if gib:
            memory = int(gib.group(1)) * 1024
        else:
            findings.append(f"node {name} label amd.com/gpu.vram={vram!r} is not a size such as '192G'")
    else:
        findings.append(f"node {name} has no amd.com/gpu.vram label; device memory unknown")
    return _Group(vendor="amd", model=model, count=offered["amd.com/gpu"], memory_mib=memory, resource="amd.com/gpu",
                  driver=labels.get("amd.com/gpu.driver-version"),
                  interconnect="xgmi" if re.search(r"\bMI\d", model) else "pcie")


def _intel(name, labels, annotations, allocatable, offered, findings) -> _Group:
    resource, count = max(offered.items(), key=lambda item: item[1])
    model = str(labels.get("gpu.intel.com/product", "")).replace("_", " ")
    if not model:
        # gpu.intel.com/device-id.<pci class>-<device id>.present
        ids = sorted(key.removeprefix("gpu.intel.com/device-id.").removesuffix(".present").rpartition("-")[2]
                     for key in labels if key.startswith("gpu.intel.com/device-id.") and key.endswith(".present"))
        model = f"device {ids[0]}" if ids else "unknown"
        findings.append(f"node {name} has no gpu.intel.com/product label; model {model!r} from its PCI device id")
    physical = _int_label(name, labels, "gpu.intel.com/device.count", findings)
    if physical is not None and physical != count:
        # The plugin offers each GPU to several pods when `sharedDevNum` is set.
        findings.append(f"node {name} offers {resource}={count} for {physical} GPUs; each placed device is a share")
        count = physical
    memory = 0
    total = labels.get("gpu.intel.com/memory.max")
    if total is not None:
        try:
            memory = quantities.memory_mib(total) // max(count, 1)  # the label is the sum over the node's GPUs
        except ValueError as exc:
            findings.append(f"node {name} label gpu.intel.com/memory.max: {exc}")
    return _Group(vendor="intel", model=model, count=count, memory_mib=memory, resource=resource)


def _ascend(name, labels, annotations, allocatable, offered, findings) -> _Group:
    resource, count = max(offered.items(), key=lambda item: item[1])
    chip = str(labels.get("node.kubernetes.io/npu.chip.name", ""))
    if not chip:
        chip = resource.removeprefix("huawei.com/Ascend")
        findings.append(f"node {name} has no node.kubernetes.io/npu.chip.name label; model {chip!r} from {resource}")
    memory = next((mib for prefix, mib in _ASCEND_MEMORY_MIB if chip.upper().startswith(prefix)), 0)
    kind = str(labels.get("accelerator-type", ""))
    interconnect: Interconnect = "hccs" if kind.startswith("module") or (not kind and chip.startswith("910")) else "pcie"
    return _Group(vendor="ascend", model=chip, count=count, memory_mib=memory, resource=resource,
                  interconnect=interconnect)


def _plain(vendor: str, model_label: str) -> Callable:
    def read(name, labels, annotations, allocatable, offered, findings) -> _Group:
        resource, count = next(iter(offered.items()))
        model = str(labels.get(model_label) or labels.get(_SITE + "model") or "")
        if not model:
            findings.append(f"node {name} offers {resource} but no label names the model; set {_SITE}model")
        if _SITE + "memory" not in labels:
            findings.append(f"node {name} offers {resource} but no label gives device memory; set {_SITE}memory")
        return _Group(vendor=vendor, model=model or "unknown", count=count, memory_mib=0, resource=resource)
    return read


_READERS: dict[str, Callable[..., _Group | None]] = {
    "nvidia": _nvidia, "amd": _amd, "intel": _intel, "ascend": _ascend,
    "cambricon": _plain("cambricon", "cambricon.com/mlu.model"), "hygon": _plain("hygon", "hygon.com/dcu.model"),
}


def _site_labels(name: str, labels: Mapping[str, str], group: _Group, findings: list[str]) -> None:
    if model := labels.get(_SITE + "model"):
        group.model = str(model)
    if (memory := labels.get(_SITE + "memory")) is not None:
        try:
            group.memory_mib = quantities.memory_mib(memory)
        except ValueError as exc:
            findings.append(f"node {name} label {_SITE}memory: {exc}")
    if driver := labels.get(_SITE + "driver"):
        group.driver = str(driver)
    if runtime := labels.get(_SITE + "runtime"):
        group.runtime = str(runtime)
