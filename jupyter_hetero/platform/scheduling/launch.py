"""The launch: what turns an admission into running processes or pods, and a placed workload's environment.

    launcher.start(row, now)               # every replica of an admitted job or service replica, or a failed attempt
    launcher.placed_environment(row)       # a kernel's or hub user's server's environment, once placed
    launcher.placed(row, flavor, slot, 1)  # what a backend that sizes and labels its units needs of one replica
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

from ...backends.base import Backend, Launch, LaunchUnavailable, Placed, Serving
from ...catalog import Catalog, Template
from ...engine_inputs import NodeView, engine_workload, placement_from_json
from ...export.kueue import pod_admission
from ...store import Repository
from ...store.tables import AttemptRow, WorkloadRow
from ..clock import SteadyTime
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..workloads.environment import array_environment, device_environment
from ..workloads.jobfiles import JobPaths, runner_argv
from .attempts import RunningAttempt
from .inventory import Inventory

__all__ = ["MAX_LABELS", "MAX_NODES_RECORDED", "Launcher", "node_facts"]

log = logging.getLogger(__name__)

# A `started` event says what each node of the placement was at that moment; bounded, since a gang may span many
# nodes and a node may carry many labels.
MAX_NODES_RECORDED = 16
MAX_LABELS = 48
_MAX_LABEL_CHARS = 256


class _Unread(Enum):
    """A node not yet looked up (None is a node the inventory no longer has)."""

    UNREAD = 0


_UNREAD = _Unread.UNREAD


def node_facts(view: NodeView | None) -> dict[str, Any]:
    """A node's facts at placement, for its `started` event: flavor, chip, driver, runtime and its labels."""
    if view is None:
        return {"known": False}
    capability = view.capability
    accelerator = capability.accelerator
    labels = sorted(capability.labels.items())
    return {
        "flavor": view.flavor, "emulated": capability.emulated, "arch": capability.arch,
        "vendor": accelerator.vendor if accelerator else None, "chip": accelerator.model if accelerator else None,
        "driver": accelerator.driver_version if accelerator else None,
        "runtime": accelerator.runtime if accelerator else None,
        "labels": {key[:_MAX_LABEL_CHARS]: str(value)[:_MAX_LABEL_CHARS] for key, value in labels[:MAX_LABELS]},
        **({"labels_left_out": len(labels) - MAX_LABELS} if len(labels) > MAX_LABELS else {}),
    }


class Launcher(ReadsLiveCatalog):
    """Starts an admitted workload's replicas through the backend; one per scheduler."""

    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, inventory: Inventory,
                 backend: Backend,
                 times: SteadyTime, wall: Callable[[], float], paths: Callable[[int], JobPaths],
                 running: dict[int, RunningAttempt],
                 seal_environment: Callable[[WorkloadRow, dict[str, str]], dict[str, str]],
                 finish: Callable[..., None]):
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self.inventory = inventory
        self.backend = backend
        self.times = times
        self.wall = wall
        self.paths = paths
        self._running = running  # the scheduler's: the monitor watches what a launch adds
        # A replica's full environment (a minimal base and its credential), never the server's.
        self.seal_environment = seal_environment
        # How a launch that went wrong ends: the attempt failed (or unlaunched) and the devices released.
        self.finish = finish

    def start(self, row: WorkloadRow, now: float) -> None:
        """Launch every replica; whatever goes wrong, the attempt ends failed and the devices are released."""
        try:
            self.launch(row, now)
        except Exception as exc:
            unavailable = isinstance(exc, LaunchUnavailable)
            log.warning("jupyter-hetero: workload %s could not start: %s", row.id, exc,
                        exc_info=not isinstance(exc, (OSError, LaunchUnavailable)))
            running = self._running.get(row.id)
            if running is not None:
                running.kill(self.backend)
            self.finish(row.id, now, "unlaunched" if unavailable else "failed", f"could not start: {exc}")

    def launch(self, row: WorkloadRow, now: float) -> None:
        # Resolved once for the whole launch: every replica's environment and unit read this one.
        template = self.catalog.template(row.template)
        placement = placement_from_json(row.placement)
        number = row.attempts + 1
        paths = self.paths(row.id)
        attempt_dir = paths.attempt(number)
        self.repository.update_workload(row.id, event="starting", reason=f"attempt {number}", state="starting",
                                        attempts=number)
        for folder in (attempt_dir, paths.checkpoints, paths.outputs):
            folder.mkdir(parents=True, exist_ok=True)
        queue = self.catalog.queue(row.queue)
        checkpoint = paths.newest_checkpoint() if queue and queue.failure.resume_from_checkpoint else None
        started = self.wall()
        attempt = self.repository.add_attempt(AttemptRow(
            workload_id=row.id, number=number, node=placement.slots[0].node, placement=row.placement, processes=[],
            started_at=started, log_path=str(attempt_dir / "log.txt"), metrics={},
        ))
        running = self._running[row.id] = RunningAttempt([], attempt.id)
        # Each node of the placement looked up once: every replica's environment and unit and the record read these.
        nodes = sorted({slot.node for slot in placement.slots})
        views = {name: self.inventory.node(name) for name in nodes}
        argv = runner_argv(row.spec, attempt_dir)
        # A service's replica listens where PORT says (serving platforms' convention); its endpoint finds it there.
        port = self.backend.service_port() if row.kind == "service" else None
        for replica, slot in enumerate(placement.slots):
            env, measured = self.replica_environment(row, placement.flavor, slot, replica, len(placement.slots),
                                                     template=template, attempt=number, checkpoint=checkpoint,
                                                     view=views[slot.node])
            if port is not None:
                env["PORT"] = str(port)
            running.handles.append(self.backend.launch(Launch(
                workload_id=row.id, attempt=number, replica=replica, node=slot.node, argv=argv,
                env=self.seal_environment(row, env), cwd=Path(row.spec.get("cwd") or attempt_dir),
                log_path=attempt_dir / "log.txt", exit_path=attempt_dir / f"exit-{replica}.json",
                devices=tuple(index for index, _milli, _mem in slot.devices), measurable=bool(measured), family=measured,
                placed=self.placed(row, placement.flavor, slot, len(placement.slots), template=template,
                                   port=port, view=views[slot.node]),
            )))
        # Recorded once every replica runs: a restart adopts only an attempt whose launch was recorded whole (the
        # `started` below); one cut off before that is found by its folder and stopped (see reconcile).
        handles = running.handles
        self.repository.update_attempt(attempt.id, processes=[h.to_json() for h in handles])
        first = views[placement.slots[0].node]
        image = template.variant_for(first.capability.family).image if template and first else None
        self.repository.update_workload(
            row.id, event="started",
            reason=f"attempt {number} running as {', '.join(h.label for h in handles)}"
            + (f", resuming from {checkpoint[0].name}" if checkpoint else ""),
            data={"attempt": number, "pids": [h.pid for h in handles], "image": image,
                  "runtime": self._runtime_of(template, views[nodes[0]]),
                  "nodes": {name: node_facts(views[name]) for name in nodes[:MAX_NODES_RECORDED]},
                  **({"pods": [h.pod for h in handles]} if any(h.pod for h in handles) else {}),
                  "resume_from": str(checkpoint[0]) if checkpoint else None,
                  **({"port": port} if port is not None else {})},
            state="running", started_at=started, **({"spec": {**row.spec, "port": port}} if port is not None else {}),
        )
        self.times.steady(row.id, "started_at", started)

    @staticmethod
    def _runtime_of(template: Template | None, view: NodeView | None) -> dict[str, Any] | None:
        """The runtime variant the replicas on the node ``view`` shows run: its image, family and frameworks."""
        variant = template.variant_for(view.capability.family) if (template and view) else None
        if variant is None:
            return None
        return {"family": view.capability.family.value, "image": variant.image,
                "frameworks": variant.frameworks[:MAX_LABELS]}

    def replica_environment(self, row: WorkloadRow, flavor: str, slot, replica: int, replicas: int, *,
                            template: Template | None, attempt: int,
                            checkpoint: tuple[Path, float] | None = None,
                            view: NodeView | None | _Unread = _UNREAD) -> tuple[dict[str, str], str]:
        """One replica's environment (variant env, the job's env, device pinning, HETERO_*), and the
        family whose vendor tool measures its devices ("" where none can: an emulated or CPU-only node);
        ``template``: the row's, as the catalog resolved it; ``view``: its node, where the caller looked it up."""
        view = self.inventory.node(slot.node) if view is _UNREAD else view
        family = view.capability.family if view else None
        variant = template.variant_for(family) if (template and family) else None
        paths = self.paths(row.id)
        env = {
            **(variant.env if variant else {}),
            **row.spec.get("env", {}),
            # A device plugin (the Kubernetes backend's) makes a replica's devices visible itself.
            **(device_environment(family.value if family else "cpu", slot.devices) if self.backend.runs_here
               else {}),
            **array_environment(row.spec),
            "HETERO_WORKLOAD_ID": str(row.id),
            "HETERO_TENANT": row.tenant,
            "HETERO_USER": row.user,
            "HETERO_QUEUE": row.queue,
            "HETERO_TEMPLATE": row.template,
            "HETERO_FLAVOR": flavor,
            "HETERO_NODE": slot.node,
            "HETERO_ATTEMPT": str(attempt),
            "HETERO_REPLICA": str(replica),
            "HETERO_REPLICAS": str(replicas),
            "HETERO_CHECKPOINT_DIR": str(paths.checkpoints),
            "HETERO_OUTPUT_DIR": str(paths.outputs),
            "HETERO_RESUME_FROM": str(checkpoint[0]) if checkpoint else "",
            "HETERO_EMULATED": "1" if view and view.capability.emulated else "0",
            "HETERO_FAMILY": family.value if family else "cpu",
            "HETERO_IMAGE": variant.image if variant else "",
            "PYTHONUNBUFFERED": "1",
        }
        measurable = view is not None and not view.capability.emulated and family is not None and family.value != "cpu"
        return env, family.value if measurable else ""

    def placed_environment(self, row: WorkloadRow) -> dict[str, str]:
        """The environment of a workload its caller starts once placed (a kernel, a hub user's server):
        its one replica's, and where it was placed."""
        placement = placement_from_json(row.placement)
        env, _measured = self.replica_environment(row, placement.flavor, placement.slots[0], 0, 1,
                                                    template=self.catalog.template(row.template),
                                                    attempt=row.attempts or 1)
        env["HETERO_PLACEMENT"] = f"{placement.flavor} x{len(placement.slots[0].devices) or 0}"
        return env

    def placed(self, row: WorkloadRow, flavor: str, slot, replicas: int, *, template: Template | None,
               port: int | None = None, view: NodeView | None | _Unread = _UNREAD) -> Placed:
        """What a backend that sizes and labels its units needs to know of one replica (``template``: the row's, as
        the catalog resolved it; ``port``: a service's; ``view``: its node, where the caller looked it up)."""
        view = self.inventory.node(slot.node) if view is _UNREAD else view
        accelerator = view.capability.accelerator if view else None
        variant = template.variant_for(view.capability.family) if (template and view) else None
        queue = self.catalog.queue(row.queue)
        request = engine_workload(row, None, 0).request
        kueue_queue, kueue_priority_class = pod_admission(queue)
        return Placed(
            kind=row.kind, tenant=row.tenant, user=row.user, queue=row.queue, template=row.template, flavor=flavor,
            replicas=replicas, image=variant.image if variant else "", cpu_milli=request.cpu, memory_mib=request.mem,
            devices=tuple((milli, mem) for _index, milli, mem in slot.devices), accelerator=accelerator,
            priority_class=queue.priority_class if queue else None, kueue_queue=kueue_queue,
            kueue_priority_class=kueue_priority_class,
            serving=Serving(row.spec["service"], row.spec.get("revision", 1), port, row.spec["readiness_path"])
            if port is not None else None,
        )
