"""Job arrays, as Slurm's ``sbatch --array`` writes them: one job per index of a set, at most ``limit`` at once.

    parse_array("0-99:2%10", max_tasks=10_000)   # JobArray(indices=(0, 2, ..., 98), limit=10, text="0-99:2")
    task_of(row)                                  # {"id": 12, "index": 3, "size": 50, "limit": 10, ...} or None

Ranges ``A-B``, a step ``A-B:S``, lists ``1,3,7-9`` and a last ``%N``, how many tasks may be admitted or run at
once. Ranges of a list may overlap: the array is their union, as in Slurm. Each task is a workload of its own,
stored with the others in one transaction; the array's id is its first task's workload id (Slurm's array job id),
and every task's ``spec["array"]`` says which array it belongs to and its index there. Pure: no store, no clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidRequest
from ...i18n import N_, Message

__all__ = ["MAX_INDEX", "MAX_NAME", "JobArray", "parse_array", "task_of"]

# The largest index a task may have: what a 32-bit signed integer holds, as Slurm's task ids are.
MAX_INDEX = 2**31 - 1

# The longest name a workload may have (SubmitWorkload.name); a task's adds its index to its array's.
MAX_NAME = 253

# One element of the list: an index, or a range with an optional step (digits only: no signs, no spaces).
_ELEMENT = re.compile(r"(\d{1,10})(?:-(\d{1,10})(?::(\d{1,10}))?)?")
_FIELD = "array"


@dataclass(frozen=True)
class JobArray:
    """The indices of an array, ascending and each once; ``limit``: how many may run at once (None: no limit)."""

    indices: tuple[int, ...]
    limit: int | None
    text: str  # the indices as written, without the limit: the array's label

    def task(self, array_id: int, index: int) -> dict[str, Any]:
        """What a task's ``spec["array"]`` holds."""
        return {"id": array_id, "index": index, "size": len(self.indices), "limit": self.limit, "indices": self.text}


def parse_array(text: str, *, max_tasks: int, name: str | None = None) -> JobArray:
    """Slurm's array syntax read into its indices; a 400 naming ``array`` for anything malformed, empty, reversed,
    above ``max_tasks`` tasks, or with a limit below 1, or naming ``name`` (the array's) when its tasks' names,
    ``name[index]``, would be longer than a name may be."""
    written = text.strip()
    body, percent, limit_text = written.partition("%")
    limit = None
    if percent:
        if not re.fullmatch(r"-?\d{1,10}", limit_text):
            raise _malformed(written)
        limit = int(limit_text)
        if limit < 1:
            raise InvalidRequest(Message(N_("array: the limit after % must be at least 1, got {limit}"), limit=limit),
                                 field=_FIELD)
    indices: set[int] = set()
    for element in body.split(","):
        found = _ELEMENT.fullmatch(element)
        if found is None:
            raise _malformed(written)
        first, last, step = (int(group) if group is not None else None for group in found.groups())
        last = first if last is None else last
        if step is not None and step < 1:
            raise InvalidRequest(Message(N_("array: the step after : must be at least 1, got {step}"), step=step),
                                 field=_FIELD)
        if last < first:
            raise InvalidRequest(Message(N_("array: {range!r} runs backwards: {first} is above {last}"),
                                         range=element, first=first, last=last), field=_FIELD)
        if last > MAX_INDEX:
            raise InvalidRequest(Message(N_("array: index {index} is above the largest an array may have, {largest}"),
                                         index=last, largest=MAX_INDEX), field=_FIELD)
        count = (last - first) // (step or 1) + 1
        if count > max_tasks:  # refused before it is counted out: "0-4000000000" builds nothing
            raise _too_many(count, max_tasks)
        indices.update(range(first, last + 1, step or 1))
    if len(indices) > max_tasks:
        raise _too_many(len(indices), max_tasks)
    ordered = tuple(sorted(indices))
    if name and len(name) + len(f"[{ordered[-1]}]") > MAX_NAME:
        raise InvalidRequest(Message(N_("name: at most {most} characters for this array, whose tasks are named "
                                        "name[index]"), most=MAX_NAME - len(f"[{ordered[-1]}]")), field="name")
    return JobArray(ordered, limit, body)


def task_of(row: Any) -> dict[str, Any] | None:
    """A workload row's place in its array (``spec["array"]``), or None when it is no array's task."""
    found = (row.spec or {}).get("array")
    return found if isinstance(found, dict) else None


def _malformed(text: str) -> InvalidRequest:
    return InvalidRequest(Message(N_("array: {text!r} is not an array of indices such as 0-99, 0-99:2, 1,3,7-9 or "
                                     "0-99%10"), text=text), field=_FIELD)


def _too_many(count: int, most: int) -> InvalidRequest:
    return InvalidRequest(Message(N_("array: {count} tasks is more than the {most} an array may have here "
                                     "(c.HeteroApp.max_array_tasks)"), count=count, most=most), field=_FIELD)
