"""The catalog as Kueue objects: one ResourceFlavor per flavor, a Cohort per tenant cohort, a ClusterQueue
per tenant, a LocalQueue per tenant namespace and queue, and a WorkloadPriorityClass per queue.

>>> from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
>>> objects = kueue_objects(load_catalog(DEFAULT_CATALOG_PATH))
>>> sorted({o["kind"] for o in objects})
['ClusterQueue', 'Cohort', 'LocalQueue', 'ResourceFlavor', 'WorkloadPriorityClass']

Pure: the same catalog gives the same objects, in the same order (by kind, then namespace and name).
The catalog's quota model is Kueue's, so quotas carry over by value: a tenant's nominal quota, borrowing
and lending limits per flavor become its ClusterQueue's, resource by resource (``cpu``, ``memory`` and
the flavor's device resource). What has no Kueue equivalent is said where it is dropped:

- Flavor selectors. A ResourceFlavor selects nodes by exact labels (``nodeLabels``), so only these
  parts of a selector carry over: an Ascend chip (the device plugin's ``accelerator=huawei-Ascend910``
  or ``huawei-Ascend310P``), a single architecture (``kubernetes.io/arch``) and label requirements
  ``In`` with one value. Model prefixes (``nvidia.com/gpu.product`` holds a full product name such as
  ``NVIDIA-A100-SXM4-80GB``, the catalog matches prefixes such as ``A100``), device memory bounds and
  the other label operators cannot; they are listed in the flavor's ``hetero.jupyter.org/unexpressed``
  annotation, and flavors told apart only by them overlap for Kueue. To make them exact, label the
  nodes (say ``hetero.jupyter.org/flavor=a100-80g``) and add that ``In`` requirement to the selector.
- Queue rules. One ClusterQueue holds all of a tenant's queues, so per-queue rules fold into one:
  preemption within the tenant is ``LowerPriority`` when any queue may preempt (Kueue cannot limit
  it to the queues in ``may_preempt``, nor spare a queue that is not ``preemptible``, nor only idle
  kernels); quota lent to the cohort is reclaimed from lower-priority borrowers (the engine also
  reclaims at equal priority). Escalation after ``max_wait_s``, ``borrowing: false``, reserved
  capacity and failure policies have no equivalent and stay with this engine.
- Lending limits above the nominal quota. Kueue refuses them; the engine lends the whole nominal
  quota then, so that is what is exported.

Each of these is also returned as an ``Unexpressed(rule, object, why)`` by ``kueue_export``, which
``jupyter hetero export kueue`` writes as a YAML comment above the object it concerns and as a warning:

>>> export = kueue_export(load_catalog(DEFAULT_CATALOG_PATH))
>>> any(u.rule.startswith("queue inference reserves") for u in export.unexpressed)
True
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..backends.kubernetes.accelerators import DEVICE_RESOURCES
from ..backends.kubernetes.config import DEFAULT_TOLERATIONS
from ..backends.kubernetes.pod_identity import MANAGED_BY
from ..backends.kubernetes.kueue_names import DEFAULT_PREFIX, dns_name
from ..catalog import Catalog, Flavor, Queue, Resources, Tenant

__all__ = [
    "API_VERSION",
    "DEFAULT_NAMESPACE",
    "DEFAULT_PREFIX",
    "KINDS",
    "UNEXPRESSED_ANNOTATION",
    "KueueExport",
    "Unexpressed",
    "cohort_name",
    "device_resource",
    "kueue_export",
    "kueue_objects",
    "local_queue_name",
    "pod_admission",
    "priority_class_name",
]

# What Kueue v0.16 and later store (v0.17.0 is tested against a running controller): v1beta1 is still served
# there, but only through Kueue's conversion webhook, and it is deprecated.
API_VERSION = "kueue.x-k8s.io/v1beta2"
DEFAULT_NAMESPACE = "hetero-{tenant}"  # as c.KubernetesConfig.namespace with one namespace per tenant
UNEXPRESSED_ANNOTATION = "hetero.jupyter.org/unexpressed"
# Output order: what an object refers to comes before it, so `kubectl apply -f` of the stream succeeds.
KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass")

_CPU, _MEMORY = "cpu", "memory"
# kubernetes.io/arch speaks Go's names; capability records, the kernel's.
_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le",
         "s390x": "s390x"}
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_NODE_LABELS = 8  # ResourceFlavor.spec.nodeLabels maxProperties


class Unexpressed(NamedTuple):
    """A catalog rule no Kueue object can say, the object (``Kind/name``) it concerns, and why."""

    rule: str
    object: str
    why: str

    def __str__(self) -> str:
        return f"not expressed in Kueue: {self.rule} ({self.why})"


class KueueExport(NamedTuple):
    """The Kueue objects of a catalog and the catalog's rules they leave out."""

    objects: list[dict]
    unexpressed: list[Unexpressed]


def kueue_export(catalog: Catalog, *, namespace: str = DEFAULT_NAMESPACE, prefix: str = DEFAULT_PREFIX) -> KueueExport:
    """The catalog's Kueue objects with what they leave out, each rule once, in the objects' order."""
    objects = kueue_objects(catalog, namespace=namespace, prefix=prefix)
    unexpressed = [*_flavor_gaps(catalog, prefix), *_quota_gaps(catalog, prefix), *_queue_gaps(catalog, prefix)]
    order = {f"{o['kind']}/{o['metadata']['name']}": index for index, o in enumerate(objects)}
    return KueueExport(objects, sorted(unexpressed, key=lambda u: order.get(u.object, len(order))))


def kueue_objects(catalog: Catalog, *, namespace: str = DEFAULT_NAMESPACE, prefix: str = DEFAULT_PREFIX) -> list[dict]:
    """Every Kueue object of the catalog, as the API server would receive them (ValueError when one cannot be)."""
    tenants = sorted(catalog.tenants, key=lambda tenant: tenant.name)
    if "{tenant}" not in namespace and len(tenants) > 1:
        # The pods' queue label names a LocalQueue by the queue alone, so two tenants cannot share a namespace.
        raise ValueError(f"namespace {namespace!r} has no '{{tenant}}': each tenant needs a namespace of its own")
    objects = [_resource_flavor(flavor, prefix) for flavor in catalog.flavors]
    objects += [_cohort(cohort_name(name, prefix)) for name in sorted({tenant.cohort for tenant in tenants})]
    for tenant in tenants:
        tenant_namespace = _namespace(namespace, tenant.name)
        objects.append(_cluster_queue(catalog, tenant, tenant_namespace, prefix))
        names = sorted({local_queue_name(queue) for queue in catalog.queues if tenant.allows_queue(queue.name)})
        objects += [_local_queue(name, tenant_namespace, dns_name(prefix + tenant.name)) for name in names]
    objects += [_priority_class(queue, prefix) for queue in catalog.queues]
    return sorted(objects, key=lambda o: (KINDS.index(o["kind"]), o["metadata"].get("namespace", ""),
                                          o["metadata"]["name"]))


def local_queue_name(queue: Queue) -> str:
    """The LocalQueue of a catalog queue: its ``kueue_queue``, or the queue's name when it has none yet."""
    return dns_name(queue.kueue_queue or queue.name)


def cohort_name(cohort: str, prefix: str = DEFAULT_PREFIX) -> str:
    # Apart from the tenants' ClusterQueues: the shipped catalog's tenant and cohort are both "default".
    return dns_name(f"{prefix}cohort-{cohort}")


def priority_class_name(queue: Queue, prefix: str = DEFAULT_PREFIX) -> str:
    return dns_name(prefix + queue.name)


def pod_admission(queue: Queue | None) -> tuple[str | None, str | None]:
    """The LocalQueue and WorkloadPriorityClass a queue's pods name when Kueue admits them (its
    ``kueue_queue`` is set), as this export makes them; (None, None) when this engine alone admits."""
    if queue is None or not queue.kueue_queue:
        return None, None
    return local_queue_name(queue), priority_class_name(queue)


def device_resource(flavor: Flavor) -> str | None:
    """The device plugin's extended resource of a flavor's devices; None for a CPU flavor."""
    family = flavor.family.value
    if family == "cpu":
        return None
    resources = DEVICE_RESOURCES[family]
    return (_ascend_chip(flavor) if family == "ascend" else None) or resources[0]


def _ascend_chip(flavor: Flavor) -> str | None:
    """The resource of the one Ascend chip all the selector's models are ("910B" -> huawei.com/Ascend910), if one."""
    # One device plugin, a resource per chip; 310P is listed before 310, so the longer name wins.
    chips = set()
    for model in flavor.selector.models:
        chip = re.sub(r"[\s_-]", "", model).upper().removeprefix("ASCEND")
        chips.add(next((r for r in DEVICE_RESOURCES["ascend"]
                        if chip.startswith(r.removeprefix("huawei.com/Ascend").upper())), None))
    return chips.pop() if len(chips) == 1 and None not in chips else None


def _resource_flavor(flavor: Flavor, prefix: str) -> dict:
    labels, unexpressed = _node_labels(flavor)
    resource = device_resource(flavor)
    spec: dict = {}
    if labels:
        spec["nodeLabels"] = labels
    tolerations = [dict(toleration) for toleration in DEFAULT_TOLERATIONS if toleration["key"] == resource]
    if tolerations:
        spec["tolerations"] = tolerations
    metadata = _metadata(dns_name(prefix + flavor.name), {"hetero.jupyter.org/flavor": flavor.name})
    if unexpressed:
        metadata["annotations"] = {UNEXPRESSED_ANNOTATION: "; ".join(unexpressed)}
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": metadata, "spec": spec}


def _node_labels(flavor: Flavor) -> tuple[dict[str, str], list[str]]:
    """The selector's parts that exact node labels express, and the others in words."""
    selector = flavor.selector
    labels: dict[str, str] = {}
    unexpressed: list[str] = []
    if selector.family.value == "ascend":
        if chip := _ascend_chip(flavor):
            labels["accelerator"] = "huawei-" + chip.removeprefix("huawei.com/")  # the Ascend device plugin's
            name = chip.removeprefix("huawei.com/Ascend").upper()
            if any(re.sub(r"[\s_-]", "", m).upper().removeprefix("ASCEND") != name for m in selector.models):
                unexpressed.append(f"models {', '.join(selector.models)} (the label names the chip only)")
        elif selector.models:
            unexpressed.append(f"models {', '.join(selector.models)} (more than one Ascend chip)")
    elif selector.models:
        unexpressed.append(f"models {', '.join(selector.models)} (prefixes of the product name)")
    if selector.min_device_memory_mib is not None:
        unexpressed.append(f"device memory >= {_mebibytes(selector.min_device_memory_mib)}")
    if selector.max_device_memory_mib is not None:
        unexpressed.append(f"device memory <= {_mebibytes(selector.max_device_memory_mib)}")
    arches = sorted({_ARCH.get(arch, arch) for arch in selector.arch})
    if len(arches) == 1:
        labels["kubernetes.io/arch"] = arches[0]
    elif arches:
        unexpressed.append(f"arch in {', '.join(arches)}")
    for requirement in selector.labels:
        if requirement.operator == "In" and len(requirement.values) == 1:
            labels[requirement.key] = requirement.values[0]
        else:
            unexpressed.append(f"label {requirement.key} {requirement.operator} {', '.join(requirement.values)}".rstrip())
    if len(labels) > _MAX_NODE_LABELS:
        raise ValueError(f"flavor {flavor.name!r} selects nodes by {len(labels)} labels; a ResourceFlavor takes "
                         f"at most {_MAX_NODE_LABELS}")
    return dict(sorted(labels.items())), unexpressed


def _cohort(name: str) -> dict:
    return {"apiVersion": API_VERSION, "kind": "Cohort", "metadata": _metadata(name), "spec": {}}


def _cluster_queue(catalog: Catalog, tenant: Tenant, namespace: str, prefix: str) -> dict:
    flavors = [flavor for flavor in catalog.flavors if flavor.name in tenant.quotas]  # catalog order: preference
    devices = sorted({r for flavor in flavors if (r := device_resource(flavor)) is not None})
    covered = [_CPU, _MEMORY, *devices]
    spec: dict = {
        "cohortName": cohort_name(tenant.cohort, prefix),
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        # The engine serves queues by priority and lets smaller work start past a blocked head.
        "queueingStrategy": "BestEffortFIFO",
        "preemption": _preemption(catalog.queues),
    }
    if flavors:
        spec["resourceGroups"] = [{
            "coveredResources": covered,
            "flavors": [{"name": dns_name(prefix + flavor.name),
                         "resources": _flavor_resources(flavor, tenant, covered)} for flavor in flavors],
        }]
    metadata = _metadata(dns_name(prefix + tenant.name), {"hetero.jupyter.org/tenant": tenant.name})
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": metadata, "spec": spec}


def _flavor_resources(flavor: Flavor, tenant: Tenant, covered: list[str]) -> list[dict]:
    # All resources of a group must be listed for every flavor in it, in its order; another vendor's device is zero.
    quota = tenant.quotas[flavor.name]
    own = device_resource(flavor)
    rows = []
    for name in covered:
        if name not in (_CPU, _MEMORY, own):
            rows.append({"name": name, "nominalQuota": "0"})
            continue
        nominal = _amount(quota.nominal, name)
        row = {"name": name, "nominalQuota": _quantity(nominal, name)}
        if quota.borrowing_limit is not None:
            row["borrowingLimit"] = _quantity(_amount(quota.borrowing_limit, name), name)
        if quota.lending_limit is not None:
            # Kueue refuses a lending limit above the nominal quota; the engine lends all of it then, as here.
            row["lendingLimit"] = _quantity(min(_amount(quota.lending_limit, name), nominal), name)
        rows.append(row)
    return rows


def _amount(resources: Resources, name: str) -> int:
    """Milli-cores, MiB or milli-devices of one resource."""
    return {_CPU: resources.cpu_milli, _MEMORY: resources.memory_mib}.get(name, resources.device_milli)


def _quantity(amount: int, name: str) -> str:
    return _mebibytes(amount) if name == _MEMORY else _milli(amount)


def _milli(value: int) -> str:
    return str(value // 1000) if value % 1000 == 0 else f"{value}m"


def _mebibytes(mib: int) -> str:
    for unit, size in (("Ti", 1024**2), ("Gi", 1024)):
        if mib and mib % size == 0:
            return f"{mib // size}{unit}"
    return f"{mib}Mi" if mib else "0"


def _preemption(queues: list[Queue]) -> dict:
    return {
        "withinClusterQueue": "LowerPriority" if any(queue.preemption.may_preempt for queue in queues) else "Never",
        "reclaimWithinCohort": "LowerPriority",
        # The engine never evicts another tenant's work to borrow for its own.
        "borrowWithinCohort": {"policy": "Never"},
    }


def _local_queue(name: str, namespace: str, cluster_queue: str) -> dict:
    return {"apiVersion": API_VERSION, "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace, **_metadata(name)}, "spec": {"clusterQueue": cluster_queue}}


def _priority_class(queue: Queue, prefix: str) -> dict:
    metadata = _metadata(priority_class_name(queue, prefix), {"hetero.jupyter.org/queue": queue.name})
    return {"apiVersion": API_VERSION, "kind": "WorkloadPriorityClass", "metadata": metadata,
            "value": queue.priority, "description": queue.description.en}


def _metadata(name: str, labels: dict[str, str] | None = None) -> dict:
    return {"name": name, "labels": {"app.kubernetes.io/managed-by": MANAGED_BY, **(labels or {})}}


def _namespace(pattern: str, tenant: str) -> str:
    name = pattern.replace("{tenant}", tenant)
    if not _DNS_LABEL.match(name) or len(name) > 63:
        raise ValueError(f"namespace {name!r} (from {pattern!r}) is not a DNS label: lowercase letters, digits "
                         f"and '-', at most 63")
    return name


# -- what the objects leave out ------------------------------------------------------------------

_ENFORCED = "hetero enforces it"


def _flavor_gaps(catalog: Catalog, prefix: str):
    for flavor in catalog.flavors:
        _, unexpressed = _node_labels(flavor)
        for part in unexpressed:
            yield Unexpressed(f"flavor {flavor.name} selects nodes by {part}",
                              f"ResourceFlavor/{dns_name(prefix + flavor.name)}",
                              "a ResourceFlavor selects by exact node labels; hetero matches it")


def _quota_gaps(catalog: Catalog, prefix: str):
    for tenant in sorted(catalog.tenants, key=lambda tenant: tenant.name):
        for flavor_name, quota in sorted(tenant.quotas.items()):
            lent, nominal = quota.lending_limit, quota.nominal
            if lent is None:
                continue
            over = [name for name, amount, limit in (
                ("cpu", nominal.cpu_milli, lent.cpu_milli), ("memory", nominal.memory_mib, lent.memory_mib),
                ("devices", nominal.device_milli, lent.device_milli)) if limit > amount]
            if over:
                yield Unexpressed(f"tenant {tenant.name} lends more {', '.join(over)} of {flavor_name} than its "
                                  f"nominal quota", f"ClusterQueue/{dns_name(prefix + tenant.name)}",
                                  "Kueue refuses a lending limit above the nominal quota; the nominal quota is exported")


def _queue_gaps(catalog: Catalog, prefix: str):
    for queue in catalog.queues:
        where = f"WorkloadPriorityClass/{priority_class_name(queue, prefix)}"
        name = queue.name
        if queue.reserved:
            devices = ", ".join(f"{count} {flavor}" for flavor, count in sorted(queue.reserved.items()))
            lends = "lent while idle" if queue.lend_reserved else "never lent"
            yield Unexpressed(f"queue {name} reserves {devices} devices ({lends})", where,
                              f"Kueue has no capacity reserved for one queue; {_ENFORCED}")
        action = queue.escalation.action.value
        boost = f" +{queue.escalation.priority_boost}" if queue.escalation.priority_boost else ""
        yield Unexpressed(f"queue {name} escalates after a max wait of {queue.max_wait_s:g} s ({action}{boost})",
                          where, f"Kueue has no wait bound; {_ENFORCED}")
        if not queue.borrowing:
            yield Unexpressed(f"queue {name} does not borrow from the cohort", where,
                              f"borrowing is set per ClusterQueue, which holds all of a tenant's queues; {_ENFORCED}")
        failure = queue.failure
        if failure.retries:
            yield Unexpressed(f"queue {name} retries failed work {failure.retries} time(s), backoff "
                              f"{failure.backoff_s:g} s x {failure.backoff_factor:g}", where,
                              f"Kueue does not retry a failed workload; {_ENFORCED}")
        if failure.resume_from_checkpoint:
            yield Unexpressed(f"queue {name} resumes retried work from its checkpoint", where,
                              f"Kueue knows no checkpoints; {_ENFORCED}")
        preemption = queue.preemption
        if preemption.may_preempt:
            yield Unexpressed(f"queue {name} may preempt only {', '.join(preemption.may_preempt)}", where,
                              f"a ClusterQueue preempts any lower priority; {_ENFORCED}")
        if preemption.idle_kernels_only:
            yield Unexpressed(f"queue {name}'s kernels are preempted only when idle", where,
                              f"Kueue does not see a kernel's activity; {_ENFORCED}")
