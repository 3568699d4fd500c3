"""What a job runs and where, as the command line says it: ``submit``'s options, and a schedule's job's.

    add_job_options(parser)                       # --template --queue --name --param --env --runtime --cwd --python
                                                  # --array --notebook --script, and the command after --
    job_body(args)                                # the body of POST /workloads (a schedule's "job")
    job_body(args, changes=True)                  # only what was given: a schedule's edit

A job runs where it is submitted from (this directory, inside the root on the server, or the server refuses
naming cwd), with this Python, unless ``--cwd``/``--python`` say otherwise. A notebook or script is named by its
path here: it is sent as an absolute path, which the server accepts inside the submitter's root.
"""

from __future__ import annotations

import argparse
import os
import sys

from .client import parse_params

__all__ = ["add_job_options", "command_of", "job_body"]


def add_job_options(parser: argparse.ArgumentParser, *, template_required: bool = True) -> None:
    """The options of a job; the command goes last, after ``--`` (a positional argument, after any other)."""
    parser.add_argument("--template", required=template_required)
    parser.add_argument("--queue")
    parser.add_argument("--name", dest="job_name", metavar="NAME", help="the job's name (its workloads')")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="an advanced parameter of the template, e.g. devices=2 (repeatable)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a variable of the job's environment (repeatable)")
    parser.add_argument("--runtime", help="expected run time, e.g. 2h, for ETAs")
    parser.add_argument("--cwd", metavar="DIR", help="where the job runs (default: this directory); it must be "
                                                    "inside your root on the server, or the server refuses it")
    parser.add_argument("--python", metavar="PATH", help="the interpreter `python` means in the job "
                                                         "(default: the one running this command)")
    parser.add_argument("--array", metavar="INDICES[%N]",
                        help="one job per index, as Slurm's sbatch --array: 0-99, 0-99:2, 1,3,7-9; %%N last runs at "
                             "most N at once; each reads its index as HETERO_ARRAY_INDEX")
    payload = parser.add_mutually_exclusive_group()
    payload.add_argument("--notebook", metavar="PATH", help="run this notebook (instead of a command)")
    payload.add_argument("--script", metavar="PATH", help="run this Python script (instead of a command); its "
                                                          "arguments go after --")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")


def command_of(args: argparse.Namespace) -> list[str]:
    """What follows ``--``: the command, or a script's arguments."""
    return args.command[1:] if args.command[:1] == ["--"] else args.command


def job_body(args: argparse.Namespace, *, changes: bool = False) -> dict:
    """The job the options say, as ``POST /workloads`` takes it; with ``changes``, only what was given (a
    schedule's edit). A job without a payload ends the command (exit 2), naming what to give."""
    words = command_of(args)
    if args.notebook:
        payload = {"notebook": {"path": os.path.abspath(args.notebook)}}
        if words:
            _usage(f"a notebook takes no command; got {' '.join(words)!r} after --")
    elif args.script:
        payload = {"script": {"path": os.path.abspath(args.script), "args": words}}
    elif words:
        payload = {"command": words}
    elif changes:
        payload = {}
    else:
        _usage("give what the job runs: --notebook PATH, --script PATH or the command after --")
    body = {"template": args.template, "queue": args.queue, "name": args.job_name, "runtime": args.runtime,
            "array": args.array, "parameters": parse_params(args.param) or None,
            "env": parse_params(args.env) or None, **payload}
    if changes:
        body.update(cwd=os.path.abspath(args.cwd) if args.cwd else None, python=args.python)
    else:  # where and with what it runs: here (inside the root, or the server refuses naming cwd), with this Python
        body.update(cwd=os.path.abspath(args.cwd or os.getcwd()), python=args.python or sys.executable)
    return {key: value for key, value in body.items() if value is not None}


def _usage(problem: str) -> None:
    """A mistake in the command line: said on stderr, exit status 2, as argparse's own."""
    print(f"error: {problem}", file=sys.stderr)
    raise SystemExit(2)
