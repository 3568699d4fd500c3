"""A node that a flavor's selector accepts, for showing what a placement on the flavor would be like.

    node = synthetic_node(catalog.flavor("a100-80g"))   # 8 A100-SXM4-80GB, 96 cores, 1 TiB

``jupyter hetero k8s render`` places on one; the hub's profiles size their pods with one.
"""

from __future__ import annotations

from ..capability import Accelerator, AcceleratorFamily, NodeCapability
from .models import Flavor

__all__ = ["synthetic_node"]

# What a synthetic node of a flavor has when the flavor's selector does not say.
_DEFAULT_MODEL = {
    AcceleratorFamily.NVIDIA: "A100-SXM4-80GB", AcceleratorFamily.AMD: "MI300X", AcceleratorFamily.ASCEND: "910B3",
    AcceleratorFamily.CAMBRICON: "MLU370-X8", AcceleratorFamily.HYGON: "K100", AcceleratorFamily.INTEL: "Max-1550",
}
_DEVICES = 8


def synthetic_node(flavor: Flavor, *, shared: bool = False) -> NodeCapability:
    """A node that the flavor's selector accepts: 8 devices of its first model, 96 cores, 1 TiB; with
    ``shared``, NVIDIA devices shared by HAMi (the only devices a pod can have a share of)."""
    selector = flavor.selector
    accelerator = None
    if selector.family != AcceleratorFamily.CPU:
        memory = selector.min_device_memory_mib or selector.max_device_memory_mib or 81920
        model = selector.models[0] if selector.models else _DEFAULT_MODEL.get(selector.family, "generic")
        hami = shared and selector.family == AcceleratorFamily.NVIDIA
        accelerator = Accelerator(vendor=selector.family.value, model=model, count=_DEVICES, memory_mib=memory,
                                  sharing="milli" if hami else "whole", resource="nvidia.com/gpu" if hami else None)
    labels = {requirement.key: (requirement.values or ["true"])[0] for requirement in selector.labels
              if requirement.operator in ("In", "Exists")}
    return NodeCapability(name=f"synthetic-{flavor.name}", cpu_milli=96_000, memory_mib=1024 * 1024,
                          arch=(selector.arch or ["x86_64"])[0], labels=labels, accelerator=accelerator,
                          source="synthetic")
