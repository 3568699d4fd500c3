"""``jupyter hetero k8s render``: the objects the Kubernetes backend would create for a template.

    jupyter hetero k8s render --template fine-tuning [--flavor a100-80g] [--kernel] [--catalog FILE]

The placement is made on a synthetic node of the flavor (the template's first eligible one by
default), and the objects come from the same factory the backend uses, so what is printed is what a
launch sends, but for the per-launch values (workload id, credential, the HETERO_* variables).
"""

from __future__ import annotations

import argparse
import sys

import yaml

from ..backends.base import Launch, Placed
from ..backends.kubernetes.config import KubernetesConfig
from ..backends.kubernetes.factory import KERNEL_PORTS, PodFactory
from ..catalog import Catalog, CatalogError, load_catalog
from ..catalog.synthetic import synthetic_node
from ..export.kueue import pod_admission
from ..platform.workloads.resolve import resolve

__all__ = ["add_k8s_parser", "render"]

_SAMPLE_PORTS = (52700, 52701, 52702, 52703, 52704)


def render(catalog: Catalog, template_name: str, *, flavor_name: str | None = None, kernel: bool = False,
           config: KubernetesConfig | None = None, tenant: str | None = None, user: str = "user") -> list[dict]:
    """The objects, as the API server would receive them (ValueError for an unknown or unfit name)."""
    template = catalog.template(template_name)
    if template is None:
        raise ValueError(f"unknown template {template_name!r}; known: {', '.join(t.name for t in catalog.templates)}")
    flavor_name = flavor_name or template.flavors[0]
    if flavor_name not in template.flavors:
        raise ValueError(f"flavor {flavor_name!r} is not eligible for template {template_name!r}; "
                         f"eligible: {', '.join(template.flavors)}")
    if kernel and not template.interactive:
        raise ValueError(f"template {template_name!r} does not run kernels")
    request = resolve(template, {}, catalog).request
    node = synthetic_node(catalog.flavor(flavor_name), shared=bool(request.device_milli))
    if (request.devices or request.device_milli) and node.accelerator is None:
        raise ValueError(f"template {template_name!r} asks for devices, and flavor {flavor_name!r} has none")
    if request.device_milli and node.accelerator is not None and node.accelerator.sharing == "whole":
        raise ValueError(f"template {template_name!r} asks for a share of a device, and pods can have a share only "
                         f"of HAMi-shared NVIDIA GPUs, not of flavor {flavor_name!r}'s")
    variant = template.variant_for(node.family)
    queue = catalog.queue(template.queue)
    kueue_queue, kueue_priority_class = pod_admission(queue)
    per_device = request.device_memory_mib or 0
    devices = ((1000, per_device),) * request.devices if request.devices else (
        ((request.device_milli, per_device),) if request.device_milli else ())
    placed = Placed(
        kind="kernel" if kernel else "job", tenant=tenant or catalog.default_tenant or catalog.tenants[0].name,
        user=user, queue=template.queue, template=template.name, flavor=flavor_name,
        replicas=1 if kernel else request.replicas, image=variant.image if variant else "",
        cpu_milli=request.cpu_milli, memory_mib=request.memory_mib, devices=devices, accelerator=node.accelerator,
        priority_class=queue.priority_class if queue else None, kueue_queue=kueue_queue,
        kueue_priority_class=kueue_priority_class,
    )
    factory = PodFactory(config or KubernetesConfig(), work_dir="/srv/hetero/work")
    env = dict(variant.env) if variant else {}
    if kernel:
        connection = {"transport": "tcp", "signature_scheme": "hmac-sha256", "key": "<generated at launch>",
                      **dict(zip(KERNEL_PORTS, _SAMPLE_PORTS))}
        objects = factory.kernel_objects(workload_id=0, attempt=1, node=node.name, placed=placed, env=env,
                                         connection=connection)
    else:
        objects = []
        for replica in range(placed.replicas):
            launch = Launch(workload_id=0, attempt=1, replica=replica, node=node.name, argv=["<the job's command>"],
                            env=env, cwd=factory.work_dir, log_path=None, exit_path=f"/srv/hetero/work/exit-{replica}.json",
                            placed=placed)
            pod, service = factory.job_objects(launch)
            objects += [service, pod] if service is not None else [pod]
    from kubernetes.client import ApiClient

    return [ApiClient().sanitize_for_serialization(obj) for obj in objects]


def add_k8s_parser(commands) -> None:
    k8s = commands.add_parser("k8s", help="show the Kubernetes objects the backend would create")
    actions = k8s.add_subparsers(dest="k8s_command", required=True)
    shown = actions.add_parser("render", help="print the pods (and secrets, services) of a template's placement")
    shown.add_argument("--template", required=True, help="the template to place")
    shown.add_argument("--flavor", help="the flavor of the synthetic node (default: the template's first eligible)")
    shown.add_argument("--kernel", action="store_true", help="render a kernel's objects instead of a job's")
    shown.add_argument("--catalog", help="catalog YAML (default: the shipped one)")
    shown.add_argument("--namespace", help="namespace (default: KubernetesConfig's, 'hetero')")
    shown.set_defaults(run=_render)


def _render(args: argparse.Namespace) -> int:
    from ..catalog import DEFAULT_CATALOG_PATH

    try:
        catalog = load_catalog(args.catalog or DEFAULT_CATALOG_PATH)
        config = KubernetesConfig(**({"namespace": args.namespace} if args.namespace else {}))
        objects = render(catalog, args.template, flavor_name=args.flavor, kernel=args.kernel, config=config)
    except (CatalogError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(yaml.safe_dump_all(objects, sort_keys=False, allow_unicode=True), end="")
    return 0
