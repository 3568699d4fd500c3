"""``jupyter hetero service``: the hub service, a JupyterHub's one shared scheduler, run by the hub as a managed service.

    c.JupyterHub.services = [{"name": "hetero", "url": "http://127.0.0.1:10101",
                              "command": ["jupyter", "hetero", "service", "--HeteroApp.db_url=..."]}]
    c.JupyterHub.load_roles = [{"name": "user", "scopes": ["self", "access:services!service=hetero"]}]

It is a Jupyter server with the extension in ``service`` mode behind JupyterHub's own single-user
authentication: people in a browser come through the hub's OAuth, servers and scripts with hub API
tokens; each request is the hub user it names, with the hub's groups, mapped to tenants and roles by
the catalog. The hub gives the service its URL, prefix, token and OAuth client in the environment.
Further arguments (``--HeteroApp.*``, ``--KubernetesConfig.*``) are passed to the server.
"""

from __future__ import annotations

import os
import sys

__all__ = ["add_service_parser", "main", "service_argv"]

# What the hub sets in a managed service's environment; without it there is no hub to authenticate with.
HUB_ENVIRONMENT = ("JUPYTERHUB_API_TOKEN", "JUPYTERHUB_SERVICE_URL")


def service_argv(extra: list[str]) -> list[str]:
    """The server the service runs: JupyterHub's single-user server with the extension in service mode."""
    return [sys.executable, "-m", "jupyterhub.singleuser", "--HeteroApp.mode=service",
            "--ServerApp.jpserver_extensions=jupyter_hetero=True", *extra]


def add_service_parser(commands) -> None:
    service = commands.add_parser(
        "service", help="run the shared scheduler as a JupyterHub-managed service",
        description=__doc__.split("\n\n")[1])
    service.add_argument("server_args", nargs="*", metavar="SERVER_ARG",
                         help="arguments for the server, e.g. --HeteroApp.db_url=postgresql+psycopg://...")
    service.set_defaults(run=lambda args: main(args.server_args))


def main(server_args: list[str]) -> int:
    """Replace this process with the service's server (``server_args`` passed on as they are)."""
    missing = [name for name in HUB_ENVIRONMENT if not os.environ.get(name)]
    if missing:
        print(f"error: {', '.join(missing)} not set: the service is started by JupyterHub, as a managed service "
              "(see docs/hub.md)", file=sys.stderr)
        return 2
    argv = service_argv(list(server_args))
    os.execv(argv[0], argv)
    return 0  # not reached
