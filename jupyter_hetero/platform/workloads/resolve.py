"""Turn a template plus advanced parameters into a concrete, bounded request.

>>> from jupyter_hetero.catalog import load_catalog, DEFAULT_CATALOG_PATH
>>> catalog = load_catalog(DEFAULT_CATALOG_PATH)
>>> resolved = resolve(catalog.template("fine-tuning"), {"devices": 2, "memory": "128Gi"}, catalog)
>>> resolved.request.devices, resolved.request.memory_mib, resolved.flavors[0]
(2, 131072, 'a100-80g')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...catalog import AdvancedParameter, Catalog, ResourceRequest, Template
from ...errors import InvalidRequest, NotFound
from ...i18n import N_, Message
from ...units import parse_cpu_milli, parse_duration_s, parse_memory_mib

__all__ = ["Resolved", "known_template", "resolve"]


def known_template(catalog: Catalog, name: str) -> Template:
    """The catalog's template of that name; a 404 naming the field and the known ones otherwise."""
    template = catalog.template(name)
    if template is None:
        raise NotFound(Message(N_("template {template!r} does not exist"), template=name), field="template",
                       known=[t.name for t in catalog.templates])
    return template


@dataclass(frozen=True)
class Resolved:
    """What a submission asks for once the template's defaults and the user's parameters meet."""

    request: ResourceRequest
    flavors: tuple[str, ...]
    variant_families: tuple[str, ...]
    time_limit_s: int | None
    parameters: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "request": self.request.model_dump(),
            "flavors": list(self.flavors),
            "variant_families": list(self.variant_families),
            "time_limit_s": self.time_limit_s,
            "parameters": self.parameters,
        }


def _value(parameter: AdvancedParameter, raw: Any, template: str) -> Any:
    """The parameter's value in its unit, checked against its bounds; 400 naming it otherwise."""
    field = f"parameters.{parameter.name}"
    try:
        if parameter.type == "choice":
            value = str(raw)
            if value not in parameter.choices:
                raise ValueError(Message(N_("must be one of {choices}"), choices=", ".join(parameter.choices)))
            return value
        if parameter.type == "memory":
            value = parse_memory_mib(raw)
        elif parameter.type == "duration":
            value = parse_duration_s(raw)
        elif parameter.type == "int":
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError(Message(N_("must be a whole number")))
            value = int(raw)
        else:
            if isinstance(raw, bool):
                raise ValueError(Message(N_("must be a number")))
            value = float(raw)
    except (TypeError, ValueError) as exc:
        # Our own reasons are Messages (translated with the sentence); a unit parser's are English.
        problem = exc.args[0] if exc.args and isinstance(exc.args[0], Message) else exc
        raise InvalidRequest(Message(N_("{field}: {problem}"), field=field, problem=problem), field=field) from None
    if (parameter.min is not None and value < parameter.min) or (parameter.max is not None and value > parameter.max):
        raise InvalidRequest(
            Message(N_("{field}: {value} is outside template {template}'s bounds [{low}, {high}]"), field=field,
                    value=raw, template=template, low=_show(parameter, parameter.min), high=_show(parameter, parameter.max)),
            field=field, min=parameter.min, max=parameter.max,
        )
    return value


def _show(parameter: AdvancedParameter, bound: float | None) -> str:
    if bound is None:
        return "-"
    if parameter.type == "memory":
        return f"{bound / 1024:g}Gi"
    if parameter.type == "duration":
        return f"{bound:g}s"
    return f"{bound:g}"


def resolve(template: Template, parameters: dict[str, Any] | None, catalog: Catalog) -> Resolved:
    """Apply ``parameters`` to ``template``; unknown or out-of-bound parameters are a 400 naming them."""
    parameters = dict(parameters or {})
    adjustable = {p.name: p for p in template.parameters}
    values: dict[str, Any] = {}
    for name, raw in parameters.items():
        parameter = adjustable.get(name)
        if parameter is None:
            refusal = (N_("parameters.{name}: template {template} does not let you set {name!r}; adjustable: {adjustable}")
                       if adjustable else
                       N_("parameters.{name}: template {template} does not let you set {name!r}; adjustable: nothing"))
            raise InvalidRequest(Message(refusal, name=name, template=template.name, adjustable=", ".join(adjustable)),
                                 field=f"parameters.{name}")
        values[name] = _value(parameter, raw, template.name)

    fields = template.request.model_dump()
    if "cpu" in values:
        fields["cpu_milli"] = parse_cpu_milli(values["cpu"])
    if "memory" in values:
        fields["memory_mib"] = values["memory"]
    if "device_memory" in values:
        fields["device_memory_mib"] = values["device_memory"]
    if "replicas" in values:
        fields["replicas"] = values["replicas"]
    devices, fraction = values.get("devices"), values.get("device_milli")
    if devices and fraction is not None:
        raise InvalidRequest(Message(N_("parameters: ask for whole devices or a device fraction, not both")),
                             field="parameters.device_milli")
    if devices:
        fields["devices"], fields["device_milli"] = devices, None
    elif fraction is not None:
        fields["devices"], fields["device_milli"] = 0, fraction
    elif devices == 0:
        fields["devices"], fields["device_milli"], fields["device_memory_mib"] = 0, None, None
    request = ResourceRequest.model_validate(fields)

    flavors = list(template.flavors)
    families = [variant.family.value for variant in template.variants]
    if "variant" in values:
        families = [values["variant"]]
        flavors = [f for f in flavors if catalog.flavor(f).family.value == values["variant"]]
    if "flavor" in values:
        flavors = [values["flavor"]]
    if not request.uses_devices:
        # CPU-only requests go to CPU flavors first; accelerator nodes stay for accelerator work.
        flavors.sort(key=lambda f: catalog.flavor(f).family.value != "cpu")
    elif any(catalog.flavor(f).family.value == "cpu" for f in flavors):
        flavors = [f for f in flavors if catalog.flavor(f).family.value != "cpu"]
    if not flavors:
        raise InvalidRequest(Message(N_("parameters: no eligible flavor is left for these parameters")), field="parameters")
    return Resolved(
        request=request,
        flavors=tuple(flavors),
        variant_families=tuple(families),
        time_limit_s=values.get("time_limit", template.time_limit_s),
        parameters=parameters,
    )
