"""What every command that talks to a running server shares: its options, its client and how a refusal is printed.

    run = guarded(lambda args: connect(args).workloads())     # ApiError and ServerNotFound: one line, exit 1
    submit = commands.add_parser("submit", parents=[server_options()])
    parse_params(["devices=2", "memory=64Gi"])                 # {"devices": "2", "memory": "64Gi"}
"""

from __future__ import annotations

import argparse
import sys

from ..notebook.client import ApiError, HeteroClient, ServerNotFound

__all__ = ["connect", "guarded", "parse_params", "server_options"]


def connect(args: argparse.Namespace) -> HeteroClient:
    """The client of the server ``--url`` and ``--token`` name, else the one found."""
    return HeteroClient.discover(args.url, args.token)


def parse_params(pairs: list[str]) -> dict[str, str]:
    """``--param`` or ``--env`` values, ``NAME=VALUE`` each, as a dict; a value without its name ends the command."""
    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"error: --param expects name=value, got {pair!r}")
        params[name] = value
    return params


def guarded(run):
    """``run`` with the server's refusal, or no server found, printed as one line and exit status 1."""
    def call(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except ApiError as exc:
            # A refusal names the server: the one found by itself may not be the one meant.
            where = f" (server {exc.url})" if exc.status in (401, 403) and exc.url else ""
            print(f"error: {exc.body.get('message', exc)}{where}", file=sys.stderr)
            return 1
        except ServerNotFound as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    return call


def server_options() -> argparse.ArgumentParser:
    """The options of every command that talks to a running server."""
    server = argparse.ArgumentParser(add_help=False)
    server.add_argument("--url", help="server URL (default: JUPYTER_HETERO_URL, then the newest running server)")
    server.add_argument("--token", help="server token (default: JUPYTER_HETERO_TOKEN, then the server's own)")
    return server
