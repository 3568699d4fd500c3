"""ipywidgets for the notebook: a submission form with live capacity per flavor, and a live status.

    SubmitForm(client, shell)   # template picker, per-flavor capacity and ETA, bounded parameters, what to run after
    StatusWidget(workload)      # state, queue position, ETA, progress through the states, log tail, Cancel
"""

from __future__ import annotations

import re
import threading
import time

from ..i18n import N_, session_language, translate
from . import display as tables
from .client import ApiError, HeteroClient, ServerNotFound, Workload, parse_after, submit

__all__ = ["StatusWidget", "SubmitForm", "widgets_available"]

STATES = ["queued", "admitted", "starting", "running", "succeeded"]
_FINAL = ("succeeded", "failed", "cancelled", "lost")
# Only a change of the inventory or of the quota can admit it: the widget stops waiting and says why.
_INADMISSIBLE = "inadmissible"


def widgets_available() -> bool:
    try:
        import ipywidgets  # noqa: F401, PLC0415
        from IPython import get_ipython  # noqa: PLC0415
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class StatusWidget:
    """A live view of one workload. ``show(description)`` redraws it; ``watch_in_background()`` polls."""

    def __init__(self, workload: Workload, poll_s: float = 1.0):
        import ipywidgets as w  # noqa: PLC0415

        self.workload = workload
        self.poll_s = poll_s
        self.header = w.HTML(f"<b>workload {workload.id}</b>: submitted")
        self.header.add_class("jp-hetero-status-header")
        self.progress = w.IntProgress(min=0, max=len(STATES) - 1, value=0, description="", bar_style="info")
        self.state = w.Label("queued")
        self.state.add_class("jp-hetero-status-state")
        self.log = w.Textarea(value="", layout=w.Layout(width="100%", height="8em"), disabled=True)
        self.cancel = w.Button(description="Cancel", button_style="warning", icon="stop")
        self.cancel.add_class("jp-hetero-status-cancel")
        self.cancel.on_click(lambda _button: self._cancel())
        self.box = w.VBox([self.header, w.HBox([self.progress, self.state, self.cancel]), self.log])
        self.box.add_class("jp-hetero-status")
        self._text = f"workload {workload.id}: submitted"

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.box._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self._text  # what a frontend without widgets shows
        return bundle

    def show(self, description: dict, logs: str | None = None) -> None:
        state = description["state"]
        line = tables.status_line(description)
        self._text = f"workload {description['id']}: {line}"
        self.header.value = f"<b>workload {description['id']}</b> ({description['template']}, {description['queue']}): {line}"
        self.state.value = state
        self.progress.value = STATES.index(state) if state in STATES else self.progress.value
        self.progress.bar_style = {"succeeded": "success", "failed": "danger", "cancelled": "warning",
                                   "lost": "danger", _INADMISSIBLE: "warning"}.get(state, "info")
        if state in _FINAL:
            self.cancel.disabled = True
        if logs is not None:
            self.log.value = logs

    def _cancel(self) -> None:
        try:
            self.show(self.workload.cancel())
        except ApiError as exc:
            self.header.value = f"<b>cannot cancel</b>: {exc.body.get('message', exc)}"

    def watch_in_background(self) -> threading.Thread:
        def poll() -> None:
            while True:
                try:
                    description = self.workload.status()
                    self.show(description, logs=self.workload.logs(tail=20) if description.get("attempt_count") else None)
                except (ApiError, ServerNotFound, OSError):  # refused, or the server went away: stop watching
                    return
                if description["state"] in (*_FINAL, _INADMISSIBLE):
                    return  # inadmissible: only an admin can change that; the header says why
                time.sleep(self.poll_s)

        thread = threading.Thread(target=poll, name=f"hetero-status-{self.workload.id}", daemon=True)
        thread.start()
        return thread


def parse_run_after(text: str) -> list[dict]:
    """The "Run after" field as the panel's Launch form reads it: ids, each ``ID[:ok|:any|:failed]``, separated by
    commas or spaces, as the API's ``after`` (``ValueError`` for a part that is not one).

        parse_run_after("12, 13:any")   # [{"workload": 12, "condition": "ok"}, {"workload": 13, "condition": "any"}]
    """
    return [parse_after(part) for part in re.split(r"[\s,]+", text) if part]


class SubmitForm:
    """Choose a template, see where it would run (free capacity and ETA per flavor), set bounded
    parameters and what it runs after, and submit a command or script; the form becomes the job's status view.
    ``language``: the words of the fields that the panel's Launch form shares (default: the session's)."""

    def __init__(self, client: HeteroClient, shell=None, language: str | None = None):
        import ipywidgets as w  # noqa: PLC0415

        self.client = client
        self.shell = shell
        self.language = language or session_language()
        # Only the templates the caller's tenant may use: the form never offers one the server would refuse.
        self.templates = {t["name"]: t for t in client.templates(kind="job", mine="true")}
        self.template = w.Dropdown(options=[(t["display"]["en"], name) for name, t in self.templates.items()],
                                   description="Template")
        self.template.add_class("jp-hetero-form-template")
        self.request = w.HTML()
        self.flavors = w.HTML()
        self.flavors.add_class("jp-hetero-form-flavors")
        self.command = w.Text(placeholder="python train.py --lr 0.1", description="Command")
        self.command.add_class("jp-hetero-form-command")
        # The panel's "Run after" field, in its words: the workloads this job waits for (Slurm's --dependency).
        self.after = w.Text(description=self._say(N_("Run after")),
                            placeholder=self._say(N_("e.g. 12 or 12:any, 13:failed")))
        self.after.add_class("jp-hetero-form-after")
        self.after_hint = w.HTML(self._say(N_("Optional: workloads this job waits for; :ok (succeeded, the default), "
                                               ":any (ended) or :failed.")))
        self.parameters: dict[str, w.Widget] = {}
        self.advanced = w.VBox()
        self.accordion = w.Accordion(children=[self.advanced], titles=("Advanced",))
        self.submit = w.Button(description="Submit", button_style="primary", icon="play")
        self.submit.add_class("jp-hetero-form-submit")
        self.message = w.HTML()
        self.message.add_class("jp-hetero-form-message")
        self.status_area = w.VBox()
        self.box = w.VBox([self.template, self.request, self.flavors, self.command, self.after, self.after_hint,
                           self.accordion, w.HBox([self.submit, self.message]), self.status_area])
        self.box.add_class("jp-hetero-form")
        self.template.observe(lambda _change: self._choose(), names="value")
        self.submit.on_click(lambda _button: self._submit())
        self._choose()

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.box._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = "jupyter-hetero submission form (needs a frontend that renders ipywidgets)"
        return bundle

    def _say(self, message: str) -> str:
        return translate(message, self.language)

    def _choose(self) -> None:
        import ipywidgets as w  # noqa: PLC0415

        template = self.templates[self.template.value]
        self.request.value = f"Default request: {tables._request(template['request'])}; queue {template['queue']}"
        self.parameters = {}
        for parameter in template["parameters"]:
            name, kind = parameter["name"], parameter["type"]
            if kind == "choice":
                widget = w.Dropdown(options=["(default)", *parameter["choices"]], description=name)
            elif kind == "int":
                widget = w.BoundedIntText(value=int(parameter.get("default") or parameter["min"]), min=int(parameter["min"]),
                                          max=int(parameter["max"]), description=name)
            else:
                widget = w.BoundedFloatText(value=float(parameter.get("default") or parameter["min"]),
                                            min=parameter["min"], max=parameter["max"],
                                            description=name + (" (MiB)" if kind == "memory" else " (s)" if kind == "duration" else ""))
            widget.observe(lambda _change: self._preview(), names="value")
            self.parameters[name] = widget
        self.advanced.children = list(self.parameters.values())
        self._preview()

    def _values(self) -> dict:
        values = {}
        template = self.templates[self.template.value]
        defaults = {p["name"]: p.get("default") for p in template["parameters"]}
        for name, widget in self.parameters.items():
            if widget.value == "(default)" or widget.value == defaults.get(name):
                continue
            values[name] = widget.value
        return values

    def _preview(self) -> None:
        try:
            answer = self.client.preview(template=self.template.value, parameters=self._values())
        except ApiError as exc:
            self.flavors.value = f"<span class='jp-hetero-form-error'>{exc.body.get('message', exc)}</span>"
            return
        rows = []
        for flavor in answer["flavors"]:
            if flavor["starts_now"]:
                verdict = "starts now"
            elif flavor.get("schedulable"):
                verdict = tables.eta_text(flavor["eta"])
            else:
                verdict = flavor["blockers"][0] if flavor["blockers"] else "not schedulable"
            style = "" if flavor["starts_now"] or flavor.get("schedulable") else " style='color:var(--jp-ui-font-color3)'"
            free = (f"{flavor['devices_free']:g}/{flavor['devices_total']:g} devices free" if flavor["devices_total"]
                    else f"{flavor['cpu_free']:g} CPU free")
            rows.append(f"<li{style}><b>{flavor['flavor']}</b>: {free} - {verdict}</li>")
        self.flavors.value = "Eligible flavors:<ul>" + "".join(rows) + "</ul>"

    def _submit(self) -> None:
        command = self.command.value.strip()
        if not command:
            self.message.value = "<span class='jp-hetero-form-error'>Enter a command to run.</span>"
            return
        import shlex  # noqa: PLC0415

        try:
            after = parse_run_after(self.after.value)
        except ValueError:
            self.message.value = ("<span class='jp-hetero-form-error'>"
                                  + self._say(N_("Give workload ids, each as ID, ID:ok, ID:any or ID:failed.")) + "</span>")
            return
        try:
            job = submit(client=self.client, template=self.template.value, command=shlex.split(command),
                         parameters=self._values() or None, after=after or None)
        except ApiError as exc:
            self.message.value = f"<span class='jp-hetero-form-error'>{exc.body.get('message', exc)}</span>"
            return
        self.message.value = f"submitted workload {job.id}"
        status = StatusWidget(job)
        self.status_area.children = [status.box]
        status.watch_in_background()
