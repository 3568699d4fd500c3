"""KubeSpawner profiles for one tenant, built from the catalog and the hetero API's live numbers.

    live = Live.from_api(tenant_me=me_json, previews=[preview_json, ...])
    profiles = build_profiles(catalog, tenant, live, language="zh")

One profile per interactive template and flavor the tenant may use (a quota on the flavor, the
template and its queue allowed). A profile over the tenant's quota stays in the list, last, its name
and description saying so, and ``hetero.over_quota`` set: KubeSpawner has no disabled profile, and
hiding it would leave the user guessing why a GPU they had yesterday is gone; ``pre_spawn_hook``
refuses it. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..backends.kubernetes.config import DEFAULT_TOLERATIONS
from ..backends.kubernetes.devices import device_resources
from ..capability import AcceleratorFamily
from ..catalog import Catalog, Flavor, Localized, ResourceRequest, Template, Tenant
from ..catalog.synthetic import synthetic_node
from ..errors import HeteroError
from ..platform.workloads.resolve import resolve

__all__ = ["LABEL_PREFIX", "UNAVAILABLE", "FlavorLive", "Live", "build_profiles", "flavor_affinity", "profile_parameters",
           "texts"]

LABEL_PREFIX = "hetero.jupyter.org/"

# The sentences of the spawn page, in both languages the product speaks.
_TEXTS = {
    "free": Localized(en="{free} of {total} devices free", zh="{free}/{total} 个设备空闲"),
    "cpu_free": Localized(en="{free} cores free", zh="{free} 核空闲"),
    "now": Localized(en="starts now", zh="可立即启动"),
    "eta": Localized(en="expected start in {minutes} min", zh="预计 {minutes} 分钟后启动"),
    "never": Localized(en="no node can run it now", zh="当前没有节点能运行"),
    "unknown": Localized(en="live capacity unavailable", zh="实时容量不可用"),
    "over": Localized(en="over your tenant's quota: cannot start now", zh="超出租户配额：暂不能启动"),
    "over_tag": Localized(en="over quota", zh="超出配额"),
    "request": Localized(en="{cpu} CPU, {memory} GiB", zh="{cpu} 核 CPU，{memory} GiB 内存"),
    "devices": Localized(en="{devices} × {flavor}", zh="{devices} 个 {flavor}"),
}


def texts(key: str, language: str = "en", **values: Any) -> str:
    return _TEXTS[key].text(language).format(**values)


@dataclass(frozen=True)
class FlavorLive:
    """One flavor's live numbers for one profile's request, as ``POST /previews`` reports them."""

    devices_total: float
    devices_free: float
    cpu_free: float
    starts_now: bool
    eta_s: float | None
    schedulable: bool | None = None


@dataclass(frozen=True)
class Live:
    """What the hetero service says now: per (template, flavor) a preview, and the tenant's quota use."""

    flavors: Mapping[tuple[str, str], FlavorLive] = field(default_factory=dict)
    quota: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # flavor -> QuotaUse JSON
    available: bool = True

    @classmethod
    def from_api(cls, *, tenant_me: Mapping[str, Any] | None, previews: Iterable[Mapping[str, Any]]) -> Live:
        """From ``GET /tenants/me`` and ``POST /previews`` answers (kind ``kernel``)."""
        flavors: dict[tuple[str, str], FlavorLive] = {}
        for preview in previews:
            for entry in preview["flavors"]:
                flavors[(preview["template"], entry["flavor"])] = FlavorLive(
                    devices_total=entry["devices_total"], devices_free=entry["devices_free"],
                    cpu_free=entry["cpu_free"], starts_now=entry["starts_now"], eta_s=entry["eta_s"],
                    schedulable=entry.get("schedulable"),
                )
        quota = {use["flavor"]: use for use in (tenant_me or {}).get("quota", [])}
        return cls(flavors=flavors, quota=quota, available=tenant_me is not None)


UNAVAILABLE = Live(available=False)


def profile_parameters(template: Template, flavor: Flavor) -> dict[str, Any] | None:
    """The template's advanced parameters for a pod on ``flavor``, or None when it has no such profile.

    A pod asks whole devices (a share of one exists only on HAMi nodes), so on an accelerator flavor a
    template asking none or a fraction asks one device, where its ``devices`` parameter allows it."""
    request = template.request
    if flavor.family == AcceleratorFamily.CPU:
        return {} if not request.uses_devices else None
    if request.devices:
        return {}
    devices = template.parameter("devices")
    if devices is None or (devices.max or 0) < 1:
        return None
    return {"devices": max(1, int(devices.min or 0))}


def build_profiles(catalog: Catalog, tenant: Tenant, live: Live = UNAVAILABLE, *,
                   language: str = "en") -> list[dict[str, Any]]:
    """KubeSpawner ``profile_list`` entries for ``tenant``, the ones it may start first."""
    startable, over = [], []
    for template in catalog.templates:
        if not (template.interactive and tenant.allows_template(template.name) and tenant.allows_queue(template.queue)):
            continue
        for flavor_name in template.flavors:
            if flavor_name not in tenant.quotas:
                continue  # hidden: the tenant may not use it
            profile = _profile(catalog, tenant, template, catalog.flavor(flavor_name), live, language)
            if profile is not None:
                (over if profile["hetero"]["over_quota"] else startable).append(profile)
    if startable:
        startable[0]["default"] = True
    return startable + over


def _profile(catalog: Catalog, tenant: Tenant, template: Template, flavor: Flavor, live: Live,
             language: str) -> dict[str, Any] | None:
    parameters = profile_parameters(template, flavor)
    variant = template.variant_for(flavor.family)
    if parameters is None or variant is None:
        return None
    try:
        request = resolve(template, parameters, catalog).request
    except HeteroError:
        return None
    node = synthetic_node(flavor)
    devices = device_resources(node.accelerator, [(1000, 0)] * request.devices)
    over = _over_quota(request, live.quota.get(flavor.name))
    name = f"{template.display.text(language)} · {flavor.display.text(language)}"
    if over:
        name = f"{name} ({texts('over_tag', language)})"
    override: dict[str, Any] = {
        "image": variant.image,
        "cpu_guarantee": request.cpu_milli / 1000, "cpu_limit": request.cpu_milli / 1000,
        "mem_guarantee": request.memory_mib * 2**20, "mem_limit": request.memory_mib * 2**20,
        "extra_labels": {f"{LABEL_PREFIX}{key}": value for key, value in (
            ("tenant", tenant.name), ("template", template.name), ("flavor", flavor.name), ("queue", template.queue))},
    }
    if variant.env:
        override["environment"] = dict(variant.env)
    if devices:
        override["extra_resource_limits"] = dict(devices)
        override["extra_resource_guarantees"] = dict(devices)
        domains = {resource.split("/")[0] for resource in devices}
        override["tolerations"] = [t for t in DEFAULT_TOLERATIONS if t["key"].split("/")[0] in domains]
    affinity = flavor_affinity(flavor)
    if affinity:
        override["node_affinity_required"] = [{"matchExpressions": affinity}]
    return {
        "display_name": name,
        "slug": f"{template.name}--{flavor.name}",
        "description": _description(template, flavor, request, live, over, language),
        "kubespawner_override": override,
        "hetero": {"tenant": tenant.name, "template": template.name, "flavor": flavor.name, "queue": template.queue,
                   "parameters": parameters, "request": request.model_dump(), "over_quota": over},
    }


def flavor_affinity(flavor: Flavor) -> list[dict[str, Any]]:
    """The flavor's node label requirements (and architecture) as node selector match expressions."""
    selector = flavor.selector
    expressions = [{"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
                   for r in selector.labels]
    if selector.arch:
        arch = ["amd64" if a == "x86_64" else "arm64" if a == "aarch64" else a for a in selector.arch]
        expressions.append({"key": "kubernetes.io/arch", "operator": "In", "values": arch})
    return expressions


def _over_quota(request: ResourceRequest, use: Mapping[str, Any] | None) -> bool:
    """Whether starting ``request`` would pass the tenant's nominal quota plus its borrowing limit.

    Without a borrowing limit the tenant may borrow what the cohort lends, which only the engine knows:
    such a profile is never shown as over quota; the admission decides."""
    if use is None or use.get("borrowing_limit") is None:
        return False
    asked = {"cpu_milli": request.cpu_milli, "memory_mib": request.memory_mib,
             "device_milli": request.device_milli_total}
    nominal, borrowing, used = use["nominal"], use["borrowing_limit"], use["used"]
    return any(amount and used[key] + amount > nominal[key] + borrowing[key] for key, amount in asked.items())


def _description(template: Template, flavor: Flavor, request: ResourceRequest, live: Live, over: bool,
                 language: str) -> str:
    parts = [texts("request", language, cpu=_number(request.cpu_milli / 1000), memory=_number(request.memory_mib / 1024))]
    if request.devices:
        parts[0] += ", " + texts("devices", language, devices=request.devices, flavor=flavor.display.text(language))
    numbers = live.flavors.get((template.name, flavor.name))
    if over:
        parts.append(texts("over", language))
    elif not live.available or numbers is None:
        parts.append(texts("unknown", language))
    else:
        if flavor.family == AcceleratorFamily.CPU:
            parts.append(texts("cpu_free", language, free=_number(numbers.cpu_free)))
        else:
            parts.append(texts("free", language, free=_number(numbers.devices_free), total=_number(numbers.devices_total)))
        if numbers.starts_now:
            parts.append(texts("now", language))
        elif numbers.eta_s is not None:
            parts.append(texts("eta", language, minutes=max(1, round(numbers.eta_s / 60))))
        elif numbers.schedulable is False:
            parts.append(texts("never", language))
    return " · ".join(parts)


def _number(value: float) -> str:
    return f"{value:g}"
