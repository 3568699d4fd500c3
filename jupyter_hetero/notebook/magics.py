"""IPython magics: submit cells, scripts and notebooks as jobs, and watch them, in one line.

    %load_ext jupyter_hetero
    %hetero_templates
    %%hetero_submit --template training --gpus 2 --push data,cfg --pull metrics --wait
    metrics = train(data, cfg)

Every magic is a thin wrapper over :mod:`jupyter_hetero.client`; errors are shown in the cell as
one readable line, not a traceback.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.display import display

from . import display as tables
from .cellcode import PushError
from .client import ApiError, HeteroClient, ServerNotFound, Workload, WorkloadFailed, submit

__all__ = ["HeteroMagics", "load_ipython_extension"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}")


def _submit_parser() -> _Parser:
    parser = _Parser(prog="%hetero_submit", add_help=False)
    parser.add_argument("--template", default=None)
    parser.add_argument("--queue")
    parser.add_argument("--flavor")
    parser.add_argument("--gpus", type=int)
    parser.add_argument("--gpu-milli", type=int)
    parser.add_argument("--cpus", type=float)
    parser.add_argument("--memory")
    parser.add_argument("--time-limit")
    parser.add_argument("--name")
    parser.add_argument("--push", default="")
    parser.add_argument("--pull", default="")
    parser.add_argument("--files", default="")
    parser.add_argument("--wait", action="store_true")
    parser.add_argument("--runtime")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("target", nargs="*")
    return parser


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _value(text: str):
    """Notebook parameters as Python literals where they parse (``-p lr=0.1``), else as text."""
    import ast  # noqa: PLC0415

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


@magics_class
class HeteroMagics(Magics):
    """The ``%hetero_*`` magics."""

    def __init__(self, shell):
        super().__init__(shell)
        self._client: HeteroClient | None = None

    @property
    def client(self) -> HeteroClient:
        if self._client is None:
            try:
                self._client = HeteroClient.discover()
            except ServerNotFound as exc:
                raise UsageError(str(exc)) from None
        return self._client

    def _call(self, function, *args, **kwargs):
        """Run a client call, turning server refusals into one readable line."""
        try:
            return function(*args, **kwargs)
        except ApiError as exc:
            detail = exc.body.get("message", str(exc))
            known = exc.body.get("known")
            raise UsageError(f"{detail}" + (f" (valid: {', '.join(known)})" if known else "")) from None
        except (ServerNotFound, PushError) as exc:
            raise UsageError(str(exc)) from None

    # -- catalog ---------------------------------------------------------------------------------

    @line_magic
    def hetero_connect(self, line: str):
        """``%hetero_connect URL [TOKEN]``: use this server from now on."""
        parts = shlex.split(line)
        if not parts:
            raise UsageError("%hetero_connect URL [TOKEN]")
        self._client = HeteroClient(parts[0], parts[1] if len(parts) > 1 else "")
        version = self._call(self._client.version)
        print(f"connected to jupyter-hetero {version['version']} at {self._client.url}")

    @line_magic
    def hetero_templates(self, line: str):
        display(tables.templates_table(self._call(self.client.templates), line.strip() or "en"))

    @line_magic
    def hetero_queues(self, line: str):
        display(tables.queues_table(self._call(self.client.queues)))

    @line_magic
    def hetero_quota(self, line: str):
        display(tables.quota_table(self._call(self.client.tenant)))

    @line_magic
    def hetero_nodes(self, line: str):
        display(tables.nodes_table(self._call(self.client.nodes)))

    # -- submit ----------------------------------------------------------------------------------

    @line_cell_magic
    def hetero_submit(self, line: str, cell: str | None = None):
        """``%%hetero_submit [options]`` runs the cell as a job; ``%hetero_submit script.py [args]`` or
        ``%hetero_submit notebook.ipynb -p key=value`` runs a file; with no arguments, a form."""
        if not line.strip() and cell is None:
            from .widgets import SubmitForm  # noqa: PLC0415

            form = SubmitForm(self.client, self.shell)
            display(form)
            return None
        args = _submit_parser().parse_args(shlex.split(line))
        if args.template is None:
            raise UsageError("%hetero_submit needs --template (see %hetero_templates)")
        fields = self._fields(args)
        if cell is not None:
            if args.target:
                raise UsageError(f"%%hetero_submit takes no file when it runs the cell: {args.target}")
            missing = [name for name in _names(args.push) if name not in self.shell.user_ns]
            if missing:
                raise UsageError(f"--push: no variable named {', '.join(missing)} in this notebook")
            files = {}
            for name in _names(args.files):
                try:
                    with open(name, "rb") as handle:
                        files[name] = handle.read()
                except OSError as exc:
                    raise UsageError(f"--files: cannot read {name}: {exc.strerror}") from None
            push = {name: self.shell.user_ns[name] for name in _names(args.push)}
            job = self._call(submit, client=self.client, code=cell, push=push, pull=_names(args.pull), files=files,
                             **fields)
        elif args.target and args.target[0].endswith(".ipynb"):
            parameters = {}
            for pair in args.param:
                key, sep, value = pair.partition("=")
                if not sep:
                    raise UsageError(f"-p expects key=value, got {pair!r}")
                parameters[key] = _value(value)
            job = self._call(submit, client=self.client, notebook=_absolute(args.target[0]),
                             notebook_parameters=parameters, **fields)
        elif args.target and args.target[0].endswith(".py"):
            job = self._call(submit, client=self.client, script=_absolute(args.target[0]), args=args.target[1:],
                             **fields)
        else:
            raise UsageError("%hetero_submit: give a .py script or an .ipynb notebook, or use %%hetero_submit on a cell")
        return self._follow(job, args.wait)

    def _fields(self, args) -> dict:
        parameters = {}
        for option, name in (("flavor", "flavor"), ("gpus", "devices"), ("gpu_milli", "device_milli"),
                             ("cpus", "cpu"), ("memory", "memory"), ("time_limit", "time_limit")):
            if getattr(args, option) is not None:
                parameters[name] = getattr(args, option)
        return {"template": args.template, "queue": args.queue, "name": args.name, "runtime": args.runtime,
                "parameters": parameters or None}

    def _follow(self, job: Workload, wait: bool):
        from .widgets import StatusWidget, widgets_available  # noqa: PLC0415

        status = StatusWidget(job) if widgets_available() else None
        if status is not None:
            display(status)
        else:
            print(f"submitted workload {job.id}")
        if not wait:
            if status is not None:
                status.watch_in_background()
            return job
        last = [""]

        def changed(description):
            if status is not None:
                status.show(description)
            line = tables.status_line(description)
            if status is None and line != last[0]:
                print(f"[{job.id}] {line}", flush=True)
                last[0] = line

        description = self._call(job.wait, on_change=changed)
        if status is not None:
            status.show(description, logs=self._call(job.logs, tail=20))
            print(f"[{job.id}] {tables.status_line(description)}")  # also for frontends without widgets
        if description["state"] != "succeeded":
            tail = self._call(job.logs, tail=20)
            print(tail, file=sys.stderr)
            raise UsageError(f"workload {job.id} {description['state']}: {description.get('reason') or ''}")
        try:
            pulled = self._call(job.result)
        except WorkloadFailed as exc:
            raise UsageError(str(exc)) from None
        self.shell.user_ns.update(pulled)
        if pulled:
            print(f"pulled {', '.join(sorted(pulled))} from workload {job.id}")
        return None

    # -- watch -----------------------------------------------------------------------------------

    @line_magic
    def hetero_status(self, line: str):
        """``%hetero_status`` lists your workloads; ``%hetero_status ID`` shows one."""
        if not line.strip():
            display(tables.workloads_table(self._call(self.client.workloads, mine=True)))
            return
        workload = self._call(self.client.workload, _id(line))
        print(f"workload {workload['id']} ({workload['template']}, queue {workload['queue']}): "
              f"{tables.status_line(workload)}")
        print(f"  {tables.attempts_line(workload)}")
        for attempt in workload.get("attempts", []):
            print(f"  attempt {attempt['number']} on {attempt['node']}: {attempt['outcome'] or 'running'}")

    @line_magic
    def hetero_logs(self, line: str):
        """``%hetero_logs ID [--follow] [--attempt N]``."""
        parser = _Parser(prog="%hetero_logs", add_help=False)
        parser.add_argument("id", type=int)
        parser.add_argument("--follow", "-f", action="store_true")
        parser.add_argument("--attempt", type=int)
        args = parser.parse_args(shlex.split(line))

        def stream() -> None:
            for chunk in self.client.logs(args.id, attempt=args.attempt, follow=args.follow):
                sys.stdout.write(chunk)
                sys.stdout.flush()

        self._call(stream)

    @line_magic
    def hetero_cancel(self, line: str):
        workload = self._call(self.client.cancel, _id(line))
        if workload.get("stopping"):
            print(f"workload {workload['id']}: cancelling (it stops within its queue's grace period)")
        else:
            print(f"workload {workload['id']}: {workload['state']}")

    @line_magic
    def hetero_explain(self, line: str):
        """``%hetero_explain ID [--preempt] [--lang zh]``."""
        parser = _Parser(prog="%hetero_explain", add_help=False)
        parser.add_argument("id", type=int)
        parser.add_argument("--preempt", action="store_true")
        parser.add_argument("--lang", default="en")
        args = parser.parse_args(shlex.split(line))
        explanation = self._call(self.client.explain, args.id, lang=args.lang)
        preview = self._call(self.client.preview_preemption, args.id) if args.preempt else None
        print("\n".join(tables.explanation_lines(explanation, preview)))


def _id(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise UsageError(f"expected a workload id, got {text.strip()!r}") from None


def _absolute(path: str) -> str:
    import os  # noqa: PLC0415

    return os.path.abspath(path)


def load_ipython_extension(ipython) -> None:
    ipython.register_magics(HeteroMagics)
