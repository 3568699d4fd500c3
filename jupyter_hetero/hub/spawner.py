"""``HeteroKubeSpawner``: KubeSpawner whose pod is the chosen tenant profile, pinned to its placement.

    c.JupyterHub.spawner_class = "jupyter_hetero.hub.HeteroKubeSpawner"
    c.KubeSpawner.profile_list = jupyter_hetero.hub.profile_list

The profile gives the image, CPU and memory, the device as an extended resource and its tolerations
(see ``profiles.py``). ``start()`` first has the hetero service place the server (``placement.py``);
once it names a node, the pod gets a required affinity to that node (kube-scheduler still binds it;
never ``nodeName``), as the backend's own pods do (``backends/kubernetes/objects.node_affinity``).
"""

from __future__ import annotations

import copy
from typing import Any

from kubespawner import KubeSpawner
from traitlets import Dict

from ..backends.kubernetes.pod_identity import server_labels
from .placement import HeteroPlacement

__all__ = ["HeteroKubeSpawner"]


class HeteroKubeSpawner(HeteroPlacement, KubeSpawner):
    """KubeSpawner over hetero profiles: ``hetero_profile`` is the chosen one's template, flavor, queue."""

    hetero_profile = Dict(help="The chosen profile's hetero identifiers (tenant, template, flavor, queue, request); "
                               "set when the user's options are loaded.")

    def _load_profile(self, slug, profile_list):
        # KubeSpawner applies the profile's overrides here; the hetero part of the profile is kept beside them.
        super()._load_profile(slug, profile_list)
        self.hetero_profile = copy.deepcopy(self._get_profile(slug, profile_list).get("hetero", {}))

    async def placement(self) -> dict[str, Any] | None:
        """Where the hetero service placed this server: ``{"node": ..., "devices": [...]}``, or None before
        ``start()`` has it placed (a manifest made outside a start, as in an offline render)."""
        workload = (self.hetero_started or {}).get("workload") or {}
        slots = (workload.get("placement") or {}).get("slots") or []
        if not slots:
            return None
        return {"node": slots[0]["node"], "devices": [share["index"] for share in slots[0]["devices"]]}

    async def hetero_choice(self) -> dict[str, Any]:
        # KubeSpawner has loaded the chosen profile already; its hetero part says what to ask for.
        return self.hetero_profile or await super().hetero_choice()

    async def start(self):
        return await self.hetero_start(super().start)

    async def stop(self, now: bool = False) -> None:
        await self.hetero_stop(super().stop, now)

    def apply_placement(self, placement: dict[str, Any]) -> None:
        """Pins the pod to the placed node (a required affinity by name, added to every term) and takes the
        placement's image and device resources where it names them."""
        node = placement.get("node")
        if node:
            pin = {"key": "metadata.name", "operator": "In", "values": [node]}
            terms = [copy.deepcopy(term) for term in self.node_affinity_required] or [{}]
            for term in terms:
                term["matchFields"] = [*term.get("matchFields", []), pin]
            self.node_affinity_required = terms
        if placement.get("image"):
            self.image = placement["image"]
        if placement.get("resources"):
            self.extra_resource_limits = dict(placement["resources"])
            self.extra_resource_guarantees = dict(placement["resources"])

    async def get_pod_manifest(self):
        placed = await self.placement()
        if placed:
            self.apply_placement(placed)
        workload = (self.hetero_started or {}).get("workload") or {}
        if workload.get("id") is not None:
            # Which server workload the pod is: the hetero service then counts it once, as that workload.
            self.extra_labels = {**self.extra_labels, **server_labels(workload["id"])}
        return await super().get_pod_manifest()
