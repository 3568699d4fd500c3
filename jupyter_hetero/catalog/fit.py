"""Template defaults that fit this machine, when this machine is the whole inventory.

    catalog = fit_to_machine(catalog, discover_local_node())
    catalog.template("data-preprocessing").request.cpu_milli    # 1000 on a 2-core laptop

The shipped catalog is written for a fleet (a data-preprocessing job asks for 4 CPU and 16 GiB),
so on a laptop its defaults would wait forever. Here each template's default CPU and memory per
replica is capped at ``share`` of the machine (half by default, so a kernel and a job fit side by
side), rounded down to a quarter core and 256 MiB and never below them. A machine with
accelerators also caps the default device count at its own and the default device memory at its
devices' memory. Parameter defaults follow the request, and a parameter minimum above the new
default comes down to it, so the default stays within its bounds. A machine without accelerators
leaves device requests alone: no size of request makes them fit, and the workload says why.
"""

from __future__ import annotations

from ..capability import NodeCapability
from .models import AdvancedParameter, Catalog, ResourceRequest, Template

__all__ = ["DEFAULT_SHARE", "fit_to_machine"]

DEFAULT_SHARE = 0.5
_CPU_STEP = 250  # milli-cores
_MEMORY_STEP = 256  # MiB


def fit_to_machine(catalog: Catalog, machine: NodeCapability, share: float = DEFAULT_SHARE) -> Catalog:
    """The catalog with every template's default request capped to fit ``machine``."""
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], not {share}")
    caps = {
        "cpu_milli": _round_down(machine.cpu_milli * share, _CPU_STEP),
        "memory_mib": _round_down(machine.memory_mib * share, _MEMORY_STEP),
    }
    if machine.accelerator is not None:
        caps["devices"] = machine.accelerator.count
        caps["device_memory_mib"] = machine.accelerator.memory_mib
    templates = [_fit(template, caps) for template in catalog.templates]
    return Catalog.model_validate({**catalog.model_dump(), "templates": [t.model_dump() for t in templates]})


# Which advanced parameter carries each request field, and its unit per request unit.
_PARAMETERS = {"cpu_milli": ("cpu", 1000), "memory_mib": ("memory", 1), "devices": ("devices", 1),
               "device_memory_mib": ("device_memory", 1)}


def _fit(template: Template, caps: dict[str, int]) -> Template:
    request: ResourceRequest = template.request
    fitted = {
        field: cap for field, cap in caps.items()
        if getattr(request, field) is not None and getattr(request, field) > cap
    }
    if not fitted:
        return template
    parameters = list(template.parameters)
    for field, value in fitted.items():
        name, unit = _PARAMETERS[field]
        parameters = [_lower(p, value / unit) if p.name == name else p for p in parameters]
    return template.model_copy(update={"request": request.model_copy(update=fitted), "parameters": parameters})


def _lower(parameter: AdvancedParameter, default: float) -> AdvancedParameter:
    """The parameter with ``default`` as its default, its minimum lowered to it if needed."""
    if parameter.default is not None and parameter.default <= default:
        return parameter
    if parameter.type == "int":
        default = int(default)
    low = parameter.min if parameter.min is None or parameter.min <= default else default
    return parameter.model_copy(update={"default": default, "min": low})


def _round_down(value: float, step: int) -> int:
    return max(step, int(value) // step * step)
