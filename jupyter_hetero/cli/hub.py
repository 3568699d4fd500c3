"""``jupyter hetero hub-config [--z2jh]``: the hub's wiring of the hetero service, roles and profiles.

    jupyter hetero hub-config >> jupyterhub_config.py
    jupyter hetero hub-config --local >> jupyterhub_config.py    # one machine, local processes
    jupyter hetero hub-config --z2jh > hetero-values.yaml     # helm upgrade ... -f hetero-values.yaml
"""

from __future__ import annotations

import argparse

from ..hub.config import SERVICE_PORT, hub_config

__all__ = ["add_hub_config_parser"]


def add_hub_config_parser(commands) -> None:
    shown = commands.add_parser("hub-config", help="print the JupyterHub configuration for the hetero service and profiles")
    shown.add_argument("--z2jh", action="store_true", help="a Zero-to-JupyterHub values.yaml snippet instead of "
                       "a jupyterhub_config.py fragment")
    shown.add_argument("--local", action="store_true", help="a hub on one machine: servers as local processes "
                       "(HeteroLocalSpawner and its options form) instead of KubeSpawner")
    shown.add_argument("--port", type=int, default=SERVICE_PORT, help=f"the service's port (default {SERVICE_PORT})")
    shown.set_defaults(run=_hub_config)


def _hub_config(args: argparse.Namespace) -> int:
    print(hub_config(z2jh=args.z2jh, local=args.local, port=args.port), end="")
    return 0
