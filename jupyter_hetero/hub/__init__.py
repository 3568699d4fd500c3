"""JupyterHub integration: tenant profiles for the spawn page and a KubeSpawner that honours them.

    c.JupyterHub.spawner_class = "jupyter_hetero.hub.HeteroKubeSpawner"
    c.KubeSpawner.profile_list = jupyter_hetero.hub.profile_list
    c.Spawner.pre_spawn_hook = jupyter_hetero.hub.pre_spawn_hook

    c.JupyterHub.spawner_class = "jupyter_hetero.hub.HeteroLocalSpawner"   # a single-machine hub

Only this package imports jupyterhub and kubespawner (the ``hub`` extra); the server extension and
the command line never import it.
"""

from __future__ import annotations

from .profiles import build_profiles
from .service import (
    HeteroHub,
    SpawnRefused,
    options_form,
    options_from_form,
    pre_spawn_hook,
    profile_list,
)

__all__ = ["HeteroHub", "HeteroKubeSpawner", "HeteroLocalSpawner", "SpawnRefused", "build_profiles", "options_form", "options_from_form",
           "pre_spawn_hook", "profile_list"]


def __getattr__(name: str):
    # KubeSpawner (and the Kubernetes client it loads) only for hubs that spawn pods.
    if name == "HeteroKubeSpawner":
        from .spawner import HeteroKubeSpawner

        return HeteroKubeSpawner
    if name == "HeteroLocalSpawner":
        from .placement import HeteroLocalSpawner

        return HeteroLocalSpawner
    raise AttributeError(name)
