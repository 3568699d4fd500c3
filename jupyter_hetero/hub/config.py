"""What ``jupyter hetero hub-config`` prints: the hub's wiring of the hetero service and profiles.

    print(hub_config())             # a jupyterhub_config.py fragment
    print(hub_config(z2jh=True))    # a Zero-to-JupyterHub values.yaml snippet

Pure text: nothing of jupyterhub or kubespawner is imported to write it.
"""

from __future__ import annotations

import json

import yaml

__all__ = ["SERVER_ROLE_SCOPES", "SERVICE_PORT", "SERVICE_SCOPES", "USER_SCOPES", "hub_config"]

SERVICE_PORT = 10101
# What the service itself may do at the hub: read who users are and which groups (tenants) they are in, and
# stop a user's server the idle rules cull (the hub stops it as if its user had; its spawner releases it).
SERVICE_SCOPES = ["list:users", "read:users", "read:groups", "servers"]
# What a server's token carries when no config names its scopes (JupyterHub's `server` role).
SERVER_ROLE_SCOPES = ["users:activity!user", "access:servers!server"]
# What every user's server token also carries, so the extension in it finds and reaches the service.
USER_SCOPES = ["access:services!service=hetero", "read:services!service=hetero"]

_FRAGMENT = '''\
# jupyter-hetero: one shared scheduler service, tenant profiles on the spawn page.
# Appended to a hub's config: it adds to the services, roles, scopes and environment set above, never replaces them.
import os
import sys

import jupyter_hetero.hub

c = get_config()  # noqa: F821 (given by JupyterHub)

# The hetero service: the engine, the store and the REST API, managed by the hub and run by the hub's Python.
# A hub run as root runs it as root too, which jupyter_server refuses without --allow-root.
c.JupyterHub.services.append({{
    "name": "hetero",
    "url": "http://127.0.0.1:{port}",
    "command": [sys.executable, "-m", "jupyter_hetero.cli", "service", *(["--allow-root"] if os.geteuid() == 0 else [])],
    "oauth_no_confirm": True,
}})
c.JupyterHub.load_roles.append(
    {{"name": "hetero-service", "scopes": {service_scopes}, "services": ["hetero"]}},
)
# Users reach the service (panel, magics, kernels), and their servers' tokens may look it up. These two are
# set-or-list and list-or-unset settings: what the config above gave them (if anything) plus the hetero scopes.
c.JupyterHub.extra_user_scopes = {{*c.JupyterHub.get("extra_user_scopes", ()), {user_scope_items}}}
c.Spawner.server_token_scopes = [*c.Spawner.get("server_token_scopes", {server_role}), {user_scope_items}]
# Users' servers have no scheduler of their own: the extension passes every hetero call to the service.
c.Spawner.environment.update({{"JUPYTER_HETERO_SERVICE_URL": "{server_url}"}})

# Servers from the tenant's choices (live capacity and ETA), each placed by the service before it starts.
{spawner}c.Spawner.pre_spawn_hook = jupyter_hetero.hub.pre_spawn_hook  # refuses over-quota choices at once
c.HeteroHub.service_url = "http://127.0.0.1:{port}/services/hetero/"
# c.HeteroHub.catalog_file = "/etc/jupyter-hetero/catalog.yaml"  # the service's catalog
'''

_KUBE_SPAWNER = """c.JupyterHub.spawner_class = "jupyter_hetero.hub.HeteroKubeSpawner"
c.KubeSpawner.profile_list = jupyter_hetero.hub.profile_list
"""
# One machine: servers are local processes, each run as its user's Unix account (the hub runs as root), that see
# only their devices.
_LOCAL_SPAWNER = """c.JupyterHub.spawner_class = "jupyter_hetero.hub.HeteroLocalSpawner"
c.Spawner.options_form = jupyter_hetero.hub.options_form
c.Spawner.options_from_form = jupyter_hetero.hub.options_from_form
"""


def hub_config(*, z2jh: bool = False, local: bool = False, port: int = SERVICE_PORT) -> str:
    """The fragment (Python) or, with ``z2jh``, the Helm values (YAML) wiring jupyter-hetero into a hub;
    ``local``: a hub on one machine (local processes) rather than Kubernetes."""
    # Users' servers reach the service where the hub runs it: beside them, or in the hub's pod (Z2JH).
    server_url = f"http://{'hub' if z2jh else '127.0.0.1'}:{port}/services/hetero/"
    fragment = _FRAGMENT.format(port=port, service_scopes=json.dumps(SERVICE_SCOPES),
                                user_scope_items=", ".join(map(json.dumps, USER_SCOPES)), server_url=server_url,
                                server_role=json.dumps(SERVER_ROLE_SCOPES),
                                spawner=_LOCAL_SPAWNER if local and not z2jh else _KUBE_SPAWNER)
    if not z2jh:
        return fragment
    # The chart makes the service's token and proxy route from its values; the rest is Python config.
    values = {
        "hub": {
            "services": {"hetero": {"url": f"http://hub:{port}", "command": ["jupyter", "hetero", "service"],
                                    "oauth_no_confirm": True}},
            "loadRoles": {"hetero-service": {"scopes": SERVICE_SCOPES, "services": ["hetero"]}},
            "extraConfig": {"hetero": _python_only(fragment, port)},
            # The service runs in the hub's pod: the proxy reaches it through the hub's Service.
            "service": {"extraPorts": [{"name": "hetero", "port": port, "targetPort": port}]},
            "networkPolicy": {"ingress": [{"ports": [{"port": port}], "from": [{"podSelector": {
                "matchLabels": {"hub.jupyter.org/network-access-hub": "true"}}}]}]},
        },
    }
    return ("# Zero-to-JupyterHub values.yaml: jupyter-hetero (the hub image needs `pip install jupyter-hetero[hub]`)\n"
            + yaml.dump(values, Dumper=_LiteralDumper, sort_keys=False, allow_unicode=True, width=120))


class _LiteralDumper(yaml.SafeDumper):
    """Writes multi-line strings (the Python of extraConfig) as literal blocks, readable and editable."""


def _literal(dumper: yaml.SafeDumper, text: str):
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_LiteralDumper.add_representer(str, _literal)


def _python_only(fragment: str, port: int) -> str:
    """The fragment's lines the chart has no values for (services and roles are values there)."""
    lines, skipping = [], False
    for line in fragment.splitlines():
        if line.startswith(("c.JupyterHub.services", "c.JupyterHub.load_roles")):
            skipping = True
            continue
        if skipping:
            skipping = line not in (")", "})")  # each block's closing line, at the margin
            continue
        if line.startswith(("# The hetero service:", "# A hub run as root", "c = get_config()", "import os",
                            "import sys")):
            continue
        lines.append(line.replace(f"http://127.0.0.1:{port}", f"http://hub:{port}"))
    return "\n".join(lines) + "\n"
