"""IPython magics: submit cells, scripts and notebooks as jobs, and watch them, in one line.

    %load_ext jupyter_hetero
    %hetero_templates
    %%hetero_submit --template training --devices 2 --push data,cfg --pull metrics --wait
    metrics = train(data, cfg)

Every magic is a thin wrapper over :mod:`jupyter_hetero.notebook.client`; errors are shown in the cell as
one readable line, not a traceback. Arguments are declared with IPython's ``magic_arguments``, so
``%hetero_submit?`` shows them all, and a bad one is one ``UsageError`` that names it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from . import display as tables
from ..i18n import N_, session_language
from .client import HeteroClient, ServerNotFound, Workload, WorkloadFailed, parse_after, submit
from .magic_support import call as _server_call
from .magic_support import parse as _parse
from .magic_support import say as _say
from .magic_support import usage as _usage
from .schedule_magics import ScheduleMagics

__all__ = ["HeteroMagics", "load_ipython_extension"]

# The most workloads one GET /workloads answers (ListWorkloadsQuery.limit).
_MOST_LISTED = 5000


def _parse_submit(magic, line: str):
    """``%hetero_submit``'s arguments: a script's own arguments verbatim after it, a notebook's ``-p`` too.

        --template t job.py --lr 0.1          -> target ["job.py", "--lr", "0.1"]
        --template t report.ipynb -p rows=2   -> target ["report.ipynb"], param ["rows=2"]
    """
    args = _parse(magic, line)
    if args.target and args.target[0].endswith(".ipynb"):
        notebook, after = args.target[0], args.target[1:]
        tokens = shlex.split(line)  # it split once already
        # The target is the line's tail; after a notebook come the magic's own options (-p, --wait).
        args = _parse(magic, tokens[: len(tokens) - len(args.target)] + after)
        if args.target:
            raise _usage(magic.parser.prog, _say(N_("a notebook takes -p key=value, not {rest!r}"),
                                                       rest=" ".join(args.target)))
        args.target = [notebook]
    return args


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
        return _server_call(function, *args, **kwargs)

    # -- catalog ---------------------------------------------------------------------------------

    @magic_arguments()
    @argument("url", help="The Jupyter server's URL, e.g. http://127.0.0.1:8888/.")
    @argument("token", nargs="?", default="", help="A token of that server, or a workload's credential.")
    @line_magic
    def hetero_connect(self, line: str):
        """Use this jupyter-hetero server from now on."""
        args = _parse(self.hetero_connect, line)
        self._client = HeteroClient(args.url, args.token)
        version = self._call(self._client.version)
        print(_say(N_("connected to jupyter-hetero {version} at {url}"), version=version["version"],
                   url=self._client.url))

    @magic_arguments()
    @argument("lang", nargs="?", default=None, help="Language of the descriptions: en or zh (default: the session's).")
    @line_magic
    def hetero_templates(self, line: str):
        """The task templates: what each is for, its default request and queue."""
        args = _parse(self.hetero_templates, line)
        display(tables.templates_table(self._call(self.client.templates), args.lang or session_language()))

    @line_magic
    def hetero_queues(self, line: str):
        """The queues: priority, waiting work, preemption rules."""
        display(tables.queues_table(self._call(self.client.queues)))

    @line_magic
    def hetero_quota(self, line: str):
        """Your tenant's quota and what it uses."""
        display(tables.quota_table(self._call(self.client.tenant)))

    @line_magic
    def hetero_nodes(self, line: str):
        """The nodes: flavor, devices, what is free."""
        display(tables.nodes_table(self._call(self.client.nodes)))

    # -- submit ----------------------------------------------------------------------------------

    @magic_arguments()
    @argument("--template", help="Task template (see %%hetero_templates); required.")
    @argument("--queue", help="Queue to wait in; the template's by default.")
    @argument("--flavor", help="Pin one flavor; by default the scheduler picks among the template's.")
    @argument("--devices", type=int, help="Whole devices per replica.")
    @argument("--device-milli", type=int, help="A fraction of one device, in thousandths.")
    @argument("--cpus", type=float, help="CPU cores per replica.")
    @argument("--memory", help="Memory per replica, e.g. 16Gi.")
    @argument("--time-limit", help="Longest run, e.g. 2h.")
    @argument("--name", help="A name for the workload.")
    @argument("--push", default="", help="Notebook variables the cell needs, comma-separated.")
    @argument("--pull", default="", help="Variables to bring back into the notebook when it succeeds, comma-separated.")
    @argument("--files", default="", help="Local files to send along, comma-separated.")
    @argument("--wait", action="store_true", help="Wait for the end and show the outcome.")
    @argument("--runtime", help="Runtime to run in (see the template's variants).")
    @argument("--after", action="append", default=[], metavar="ID[:ok|:any|:failed]",
              help="Start only after workload ID succeeded (ok, the default), ended (any) or failed; an array's ID: "
                   "every task of it (failed: all ended, one failed); repeatable.")
    @argument("--array", metavar="INDICES[%N]",
              help="One job per index, as Slurm's --array: 0-99, 0-99:2, 1,3,7-9; %%N last runs at most N at once; "
                   "each reads its index as HETERO_ARRAY_INDEX.")
    @argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
              help="A notebook parameter; repeatable.")
    @argument("target", nargs=argparse.REMAINDER,
              help="A .py script and its own arguments, or an .ipynb notebook (then -p options).")
    @line_cell_magic
    def hetero_submit(self, line: str, cell: str | None = None):
        """Run the cell (%%hetero_submit), a script or a notebook (%hetero_submit FILE) as a job;
        with no arguments, a form."""
        if not line.strip() and cell is None:
            from .widgets import SubmitForm  # noqa: PLC0415

            form = SubmitForm(self.client, self.shell)
            display(form)
            return None
        args = _parse_submit(self.hetero_submit, line)
        if args.template is None:
            raise _usage("hetero_submit", _say(N_("needs --template, one of those %hetero_templates lists")))
        if args.array and args.wait:
            raise _usage("hetero_submit", _say(N_("--wait follows one workload: an array's tasks are listed by "
                                                  "%hetero_status")))
        fields = self._fields(args)
        fields["python"] = sys.executable  # the kernel's interpreter: `python` in the job is this one
        if cell is not None:
            if args.target:
                raise _usage("hetero_submit",
                             _say(N_("takes no file when it runs the cell: {target}"), target=args.target))
            missing = [name for name in _names(args.push) if name not in self.shell.user_ns]
            if missing:
                raise _usage("hetero_submit", _say(N_("--push: no variable named {names} in this notebook"),
                                                   names=", ".join(missing)))
            files = {}
            for name in _names(args.files):
                try:
                    with open(name, "rb") as handle:
                        files[name] = handle.read()
                except OSError as exc:
                    raise _usage("hetero_submit", _say(N_("--files: cannot read {name}: {error}"), name=name,
                                                       error=exc.strerror)) from None
            push = {name: self.shell.user_ns[name] for name in _names(args.push)}
            job = self._call(submit, client=self.client, code=cell, push=push, pull=_names(args.pull), files=files,
                             **fields)
        elif args.target and args.target[0].endswith(".ipynb"):
            parameters = {}
            for pair in args.param:
                key, sep, value = pair.partition("=")
                if not sep:
                    raise _usage("hetero_submit", _say(N_("-p expects key=value, got {pair!r}"), pair=pair))
                parameters[key] = _value(value)
            job = self._call(submit, client=self.client, notebook=_absolute(args.target[0]),
                             notebook_parameters=parameters, **fields)
        elif args.target and args.target[0].endswith(".py"):
            job = self._call(submit, client=self.client, script=_absolute(args.target[0]), args=args.target[1:],
                             **fields)
        else:
            raise _usage("hetero_submit",
                         _say(N_("give a .py script or an .ipynb notebook, or use %%hetero_submit on a cell")))
        if args.array:  # the handle of its first task, whose id is the array's
            array = self._call(job.status)["array"]
            print(_say(N_("submitted array {array} of {size} tasks"), array=array["id"], size=array["size"]))
            return job
        return self._follow(job, args.wait)

    def _fields(self, args) -> dict:
        parameters = {}
        for option, name in (("flavor", "flavor"), ("devices", "devices"), ("device_milli", "device_milli"),
                             ("cpus", "cpu"), ("memory", "memory"), ("time_limit", "time_limit")):
            if getattr(args, option) is not None:
                parameters[name] = getattr(args, option)
        after = []
        for text in args.after:
            try:
                after.append(parse_after(text))
            except ValueError:
                raise _usage("hetero_submit", _say(N_("--after expects ID, ID:ok, ID:any or ID:failed, got {value!r}"),
                                                   value=text)) from None
        return {"template": args.template, "queue": args.queue, "name": args.name, "runtime": args.runtime,
                "parameters": parameters or None, "after": after or None, "array": args.array}

    def _follow(self, job: Workload, wait: bool):
        from .widgets import StatusWidget, widgets_available  # noqa: PLC0415

        status = StatusWidget(job) if widgets_available() else None
        if status is not None:
            display(status)
        else:
            print(_say(N_("submitted workload {workload}"), workload=job.id))
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
            raise UsageError(_say(N_("workload {workload} {state}: {reason}"), workload=job.id,
                                  state=description["state"], reason=description.get("reason") or ""))
        try:
            pulled = self._call(job.result)
        except WorkloadFailed as exc:
            raise UsageError(str(exc)) from None
        self.shell.user_ns.update(pulled)
        if pulled:
            print(_say(N_("pulled {names} from workload {workload}"), names=", ".join(sorted(pulled)), workload=job.id))
        return None

    # -- watch -----------------------------------------------------------------------------------

    # -- serve -----------------------------------------------------------------------------------

    @magic_arguments()
    @argument("name", help="The service's name: its endpoint is /hetero/endpoints/<name>/.")
    @argument("--template", default="online-inference", help="A template that runs services.")
    @argument("--replicas", type=int, default=1, help="Replicas to start with.")
    @argument("--min-replicas", type=int, help="Never fewer (1 by default).")
    @argument("--max-replicas", type=int, help="Never more (replicas by default).")
    @argument("--target-in-flight", type=float, help="Scale by load: about this many requests in flight per replica.")
    @argument("--devices", type=int, help="Whole devices per replica.")
    @argument("--function", default="predict", help="The cell's function that answers requests (%%%%hetero_serve).")
    @argument("--env", action="append", default=[], metavar="KEY=VALUE", help="A variable of the replicas; repeatable.")
    @argument("--wait", action="store_true", help="Wait until every replica is ready.")
    @argument("file", nargs="?", help="A .py file that serves on $PORT; or, last, -- and a model server's command.")
    @line_cell_magic
    def hetero_serve(self, line: str, cell: str | None = None):
        """Start an online service: the cell's function (%%hetero_serve NAME), a .py file that listens on $PORT,
        or a command (%hetero_serve NAME -- python serve.py); print its endpoint."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise _usage("hetero_serve", str(exc)) from None
        # Everything after -- is the model server's command, whatever dashes it has.
        head, command = (words[:words.index("--")], words[words.index("--") + 1:]) if "--" in words else (words, [])
        try:
            args = self.hetero_serve.parser.parse_intermixed_args(head)
        except UsageError as exc:
            raise _usage("hetero_serve", str(exc)) from None
        target = [args.file] if args.file else command
        if cell is not None:
            if target:
                raise _usage("hetero_serve", _say(N_("takes no file when it runs the cell: {target}"),
                                                 target=" ".join(target)))
            code = f"{cell}\n\nfrom jupyter_hetero.notebook.serve import serve\nserve({args.function})\n"
        elif args.file and args.file.endswith(".py"):
            try:  # sent as code, run as a cell would be, wherever the replica is
                code = Path(args.file).read_text(encoding="utf-8")
            except OSError as exc:
                raise _usage("hetero_serve", str(exc)) from None
        elif command and not args.file:
            code = None
        else:
            raise _usage("hetero_serve", _say(N_("give a .py file, -- and a command, or use %%hetero_serve on a cell")))
        body = {"name": args.name, "template": args.template, "replicas": args.replicas,
                **({"code": code} if code is not None else {"command": command}),
                "min_replicas": args.min_replicas, "max_replicas": args.max_replicas,
                "target_in_flight": args.target_in_flight, "env": _pairs(args.env),
                "parameters": {"devices": args.devices} if args.devices else {}}
        service = self._call(self.client.serve, **{key: value for key, value in body.items() if value is not None})
        print(_say(N_("service {name}: {replicas} replica(s) asked for; endpoint {endpoint}"), name=service["name"],
                   replicas=service["replicas"], endpoint=self.client.url.rstrip("/") + service["endpoint"]))
        if args.wait:
            while (service := self._call(self.client.service, args.name))["ready_replicas"] < service["replicas"]:
                time.sleep(0.5)
            print(_say(N_("service {name}: {ready} replica(s) ready"), name=args.name, ready=service["ready_replicas"]))
        return service

    @magic_arguments()
    @argument("id", type=int, nargs="?", help="A workload id; without it, your workloads.")
    @line_magic
    def hetero_status(self, line: str):
        """Your workloads, or one workload with its attempts."""
        args = _parse(self.hetero_status, line)
        if args.id is None:
            display(tables.workloads_table(self._call(self.client.workloads, mine=True)))
            services = self._call(self.client.services)
            if services:  # a tenant's services, their replicas, traffic and rollout
                display(tables.services_table(services))
            return
        workload = self._call(self.client.workload, args.id)
        print(_say(N_("workload {workload} ({template}, queue {queue}): {status}"), workload=workload["id"],
                   template=workload["template"], queue=workload["queue"], status=tables.status_line(workload)))
        print(f"  {tables.attempts_line(workload)}")
        for attempt in workload.get("attempts", []):
            print("  " + _say(N_("attempt {number} on {node}: {outcome}"), number=attempt["number"],
                              node=attempt["node"], outcome=attempt["outcome"] or _say(N_("running"))))

    @magic_arguments()
    @argument("id", type=int, help="A workload id.")
    @argument("--follow", "-f", action="store_true", help="Keep printing until the attempt ends.")
    @argument("--attempt", type=int, help="An earlier attempt's log; the latest by default.")
    @line_magic
    def hetero_logs(self, line: str):
        """A workload's log."""
        args = _parse(self.hetero_logs, line)

        def stream() -> None:
            for chunk in self.client.logs(args.id, attempt=args.attempt, follow=args.follow):
                sys.stdout.write(chunk)
                sys.stdout.flush()

        self._call(stream)

    @magic_arguments()
    @argument("id", type=int, help="A workload id.")
    @argument("--array", action="store_true",
              help="Cancel every unfinished task of the array the workload is one of (its id: the array's).")
    @line_magic
    def hetero_cancel(self, line: str):
        """Cancel a workload, or with --array every unfinished task of its array; a running one stops within its
        queue's grace period."""
        args = _parse(self.hetero_cancel, line)
        workload = self._call(self.client.cancel, args.id, array=args.array)
        if args.array:  # as `jupyter hetero cancel ID --array`: the array's tasks' states counted
            array = workload["array"]
            tasks = self._call(self.client.workloads, array=array["id"], limit=min(array["size"], _MOST_LISTED))
            stopping = sum(1 for task in tasks if task.get("stopping") == "cancel")
            label, states = tables.array_label(array), tables.array_states(tasks)
            print(_say(N_("array {array}: {states} ({count} stopping within their queue's grace period)"),
                       array=label, states=states, count=stopping) if stopping
                  else _say(N_("array {array}: {states}"), array=label, states=states))
            return
        if workload.get("stopping"):
            print(_say(N_("workload {workload}: cancelling (it stops within its queue's grace period)"),
                       workload=workload["id"]))
        else:
            print(_say(N_("workload {workload}: {state}"), workload=workload["id"], state=workload["state"]))

    @magic_arguments()
    @argument("id", type=int, help="A workload id.")
    @argument("--preempt", action="store_true", help="Also show what preempting for it would stop (a dry run).")
    @argument("--lang", default=None, help="Language of the explanation: en or zh (default: the session's).")
    @line_magic
    def hetero_explain(self, line: str):
        """Why a workload waits, or where it runs and why there."""
        args = _parse(self.hetero_explain, line)
        explanation = self._call(self.client.explain, args.id, lang=args.lang or session_language())
        preview = self._call(self.client.preview_preemption, args.id) if args.preempt else None
        print("\n".join(tables.explanation_lines(explanation, preview)))


def _absolute(path: str) -> str:
    import os  # noqa: PLC0415

    return os.path.abspath(path)


def load_ipython_extension(ipython) -> None:
    hetero = HeteroMagics(ipython)
    ipython.register_magics(hetero)
    # One client for both: %hetero_connect points the schedule magics at the same server.
    ipython.register_magics(ScheduleMagics(ipython, lambda: hetero.client))


def _pairs(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _usage("hetero_serve", f"--env expects KEY=VALUE, got {item!r}")
        pairs[key] = value
    return pairs
