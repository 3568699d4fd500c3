"""What ``GET /workloads/{id}/explain`` says of a workload, in the asked language whatever its state.

    explanation(workload, "zh")   # workload: what ``Workloads.describe`` answers, its blockers already in zh

Every sentence is a catalog message; the only text that is not is the reason the store recorded for the
workload's state: read back into the catalog's words where it is one of the reasons work most often ends with (an
exit code, a user's cancel, a dependency that can no longer hold) or itself a catalog message, quoted as recorded
otherwise.
"""

from __future__ import annotations

import re
from typing import Any

from ...engine.explain import STATE_WORDS
from ...i18n import N_, Message, translate
from ...store import INADMISSIBLE, PENDING_STATES

__all__ = ["explanation"]

# The states' words as the panel shows them (its catalog entries), so a summary reads the same in both.
_STATE_WORDS = STATE_WORDS
# The reasons the store records (in English, as every event's) for how work most often ends, as the monitor
# (``exit code 3``), a cancel (workloads/service.py) and a dependency (scheduling/dependencies.py) write them, each
# with its catalog message; a {state} is said in the reader's words.
_RECORDED = (
    (re.compile(r"exit code (?P<code>-?\d+)"), N_("exit code {code}")),
    (re.compile(r"cancelled by (?P<user>\S+) while waiting"), N_("cancelled by {user} while waiting")),
    (re.compile(r"cancelled by (?P<user>\S+)"), N_("cancelled by {user}")),
    (re.compile(r"dependency not met: workload (?P<workload>\d+) no longer exists"),
     N_("dependency not met: workload {workload} no longer exists")),
    (re.compile(r"dependency not met: workload (?P<workload>\d+) (?P<state>[a-z]+)"),
     N_("dependency not met: workload {workload} {state}")),
    (re.compile(r"dependency not met: array (?P<array>\d+): (?P<count>\d+) of its (?P<size>\d+) tasks "
                r"(?P<state>[a-z]+)"),
     N_("dependency not met: array {array}: {count} of its {size} tasks {state}")),
    (re.compile(r"dependency not met: array (?P<array>\d+): all of its (?P<size>\d+) tasks ended, none failed"),
     N_("dependency not met: array {array}: all of its {size} tasks ended, none failed")),
)


def explanation(workload: dict[str, Any], language: str = "en") -> dict[str, Any]:
    """Why ``workload`` waits, as numbered lines of its blockers, or what it is doing or how it ended."""
    if workload["state"] in PENDING_STATES or workload.get("held_by"):
        summary, lines = _waiting(workload), [f"{i}. {b['message']}" for i, b in
                                              enumerate(workload.get("blockers", []), 1)]
    else:
        summary, lines = _not_waiting(workload)
    return {
        "id": workload["id"], "state": workload["state"], "summary": summary.text(language),
        "lines": [line.text(language) if isinstance(line, Message) else line for line in lines],
        "position": workload.get("position"), "eta": workload.get("eta"), "eta_because": workload.get("eta_because"),
        "blockers": workload.get("blockers", []), "placement": workload["placement"],
    }


def _waiting(workload: dict[str, Any]) -> Message:
    if workload["state"] == INADMISSIBLE:
        return Message(_STATE_WORDS[INADMISSIBLE])  # the lines say why: every flavor, in the caller's language
    if workload.get("held_by"):
        return Message(N_("waiting for {admitter} to admit it"), admitter=workload["held_by"])
    return Message(N_("waiting") if workload.get("blockers") else N_("waiting for the next scheduling cycle"))


def _not_waiting(workload: dict[str, Any]) -> tuple[Message, list[Message]]:
    """Where it runs, or how it ended: from its latest attempt where it has one, its recorded reason quoted."""
    state = Message(_STATE_WORDS.get(workload["state"], workload["state"]))
    attempts = workload.get("attempts") or []
    last = attempts[-1] if attempts else None
    lines: list[Message] = []
    if workload.get("active"):
        node = workload.get("node") or (last or {}).get("node")
        summary = (Message(N_("{state} on {node}, attempt {attempt}"), state=state, node=node, attempt=last["number"])
                   if last and node else Message(N_("{state} on {node}"), state=state, node=node) if node else state)
    elif last is None:
        summary = Message(N_("{state} before it ever ran"), state=state)
    else:
        summary = Message(N_("{state}; its last attempt ({attempt} of {count}) ran on {node}"), state=state,
                          attempt=last["number"], count=len(attempts), node=last["node"])
        if last.get("exit_code") is not None:
            lines.append(Message(N_("attempt {attempt} exited with code {code}"), attempt=last["number"],
                                 code=last["exit_code"]))
    if workload.get("reason"):
        lines.append(Message(N_("recorded reason: {reason}"), reason=_Recorded(workload["reason"])))
    return summary, lines


class _Recorded(Message):
    """A reason as the store recorded it: in the reader's language where it is a catalog message or one of
    ``_RECORDED``'s, else as is."""

    def text(self, language: str = "en") -> str:
        for pattern, message in _RECORDED:
            if found := pattern.fullmatch(self.source):
                said = {name: Message(_STATE_WORDS[value]) if name == "state" and value in _STATE_WORDS else value
                        for name, value in found.groupdict().items()}
                return Message(message, **said).text(language)
        return translate(self.source, language)
