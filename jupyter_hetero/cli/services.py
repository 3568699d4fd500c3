"""``jupyter hetero services list|show|create|scale|rollout|rollback|delete``: online services on a running server.

    jupyter hetero services create --replicas 2 --param devices=1 resnet -- python serve.py
    jupyter hetero services list
    jupyter hetero services scale resnet 3
    jupyter hetero services rollout --env MODEL=v2 resnet
    jupyter hetero services rollback [--revision 1] resnet

Options go before the service's name; a command goes last, after ``--``.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..notebook.display import services_table
from .client import connect, guarded, parse_params, server_options

__all__ = ["add_services_command"]


def _print(services: list[dict] | dict, as_json: bool) -> int:
    """A list of services (``list``) or one (every other verb), as JSON or as a table."""
    if as_json:
        print(json.dumps(services, indent=2))
        return 0
    print(repr(services_table([services] if isinstance(services, dict) else services, title="")))
    return 0


def _list(args: argparse.Namespace) -> int:
    return _print(connect(args).services(), args.json)


def _show(args: argparse.Namespace) -> int:
    service = connect(args).service(args.name)
    if service["state"] == "deleted":  # the API still describes it (its history); `show` is for live services
        print(f"error: service {args.name} was deleted at {service['updated_at']}; `services list` shows the live ones",
              file=sys.stderr)
        return 1
    return _print(service, args.json)


def _command(args: argparse.Namespace) -> list[str]:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if command and command[0].startswith("-"):  # an option after the name, which argparse leaves here
        raise SystemExit(f"error: options go before the name {args.name!r}; a command goes last, after --")
    return command


def _create(args: argparse.Namespace) -> int:
    command = _command(args)
    if not command:
        raise SystemExit("error: give the model server's command after --")
    body = {"name": args.name, "template": args.template, "command": command, "replicas": args.replicas,
            "min_replicas": args.min_replicas, "max_replicas": args.max_replicas,
            "parameters": parse_params(args.param), "env": parse_params(args.env), "readiness_path": args.readiness_path}
    return _print(connect(args).serve(**{k: v for k, v in body.items() if v is not None}), args.json)


def _scale(args: argparse.Namespace) -> int:
    return _print(connect(args).scale(args.name, args.replicas), args.json)


def _rollout(args: argparse.Namespace) -> int:
    changes = {"env": parse_params(args.env) or None, "parameters": parse_params(args.param) or None}
    command = _command(args)
    if command:
        changes["command"] = command
    return _print(connect(args).roll_out(args.name, **{k: v for k, v in changes.items() if v}), args.json)


def _rollback(args: argparse.Namespace) -> int:
    return _print(connect(args).roll_back(args.name, args.revision), args.json)


def _delete(args: argparse.Namespace) -> int:
    client = connect(args)
    deleted = client.delete_service(args.name)
    if args.json:
        return _print(deleted, True)
    print(f"service {deleted['name']} deleted; its replicas are stopping")
    return _print(client.services(), False)  # the table as it is now, without the deleted one


def add_services_command(commands: argparse._SubParsersAction) -> None:
    server = server_options()
    services = commands.add_parser("services", help="online services: list, create, scale, roll out, roll back")
    verbs = services.add_subparsers(dest="verb", required=True)
    common = argparse.ArgumentParser(add_help=False, parents=[server])
    common.add_argument("--json", action="store_true")
    verbs.add_parser("list", parents=[common], help="your tenant's services").set_defaults(run=guarded(_list))
    named = argparse.ArgumentParser(add_help=False, parents=[common])
    named.add_argument("name")
    verbs.add_parser("show", parents=[named], help="one service").set_defaults(run=guarded(_show))
    create = verbs.add_parser("create", parents=[named], help="start a service: -- then the model server's command")
    create.add_argument("--template", default="online-inference")
    create.add_argument("--replicas", type=int)
    create.add_argument("--min-replicas", type=int)
    create.add_argument("--max-replicas", type=int)
    create.add_argument("--readiness-path")
    create.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    create.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    create.add_argument("command", nargs=argparse.REMAINDER, help="-- then the model server's command")
    create.set_defaults(run=guarded(_create))
    scale = verbs.add_parser("scale", parents=[named], help="run this many replicas")
    scale.add_argument("replicas", type=int)
    scale.set_defaults(run=guarded(_scale))
    rollout = verbs.add_parser("rollout", parents=[named], help="try a new revision as a canary")
    rollout.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    rollout.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    rollout.add_argument("command", nargs=argparse.REMAINDER, help="-- then a new command, if it changes")
    rollout.set_defaults(run=guarded(_rollout))
    rollback = verbs.add_parser("rollback", parents=[named], help="back to an earlier revision at once")
    rollback.add_argument("--revision", type=int, help="the revision to return to (default: the previous stable one)")
    rollback.set_defaults(run=guarded(_rollback))
    verbs.add_parser("delete", parents=[named], help="end the service").set_defaults(run=guarded(_delete))
