"""Label and field selectors as the Kubernetes API parses them, over raw JSON objects.

```python
matches = label_selector("app in (a,b),!legacy")
assert matches({"metadata": {"labels": {"app": "a"}}})
```
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["SelectorError", "field_selector", "field_value", "label_selector"]

Predicate = Callable[[dict], bool]

_SET_REQUIREMENT = re.compile(r"^\s*([^\s!=()]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQUALITY = re.compile(r"^\s*([^\s!=]+)\s*(==|=|!=)\s*([^\s,]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=()]+)\s*$")


class SelectorError(ValueError):
    """A selector the API would answer with 400 BadRequest."""


def _requirements(selector: str) -> list[str]:
    """Split on the commas that are not inside an ``in (...)`` value list."""
    parts, depth, current = [], 0, []
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part.strip()]


def label_selector(selector: str | None) -> Predicate:
    """A predicate over objects for ``labelSelector`` (=, ==, !=, in, notin, exists, !exists)."""
    if not selector:
        return lambda _obj: True
    checks: list[Callable[[dict], bool]] = []
    for requirement in _requirements(selector):
        if match := _SET_REQUIREMENT.match(requirement):
            key, operator, values = match.group(1), match.group(2), match.group(3)
            allowed = {value.strip() for value in values.split(",") if value.strip()}
            if operator == "in":
                checks.append(lambda labels, k=key, a=allowed: labels.get(k) in a)
            else:
                checks.append(lambda labels, k=key, a=allowed: labels.get(k) not in a)
        elif match := _EQUALITY.match(requirement):
            key, operator, value = match.groups()
            if operator == "!=":
                checks.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                checks.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif match := _EXISTS.match(requirement):
            negated, key = match.groups()
            if negated:
                checks.append(lambda labels, k=key: k not in labels)
            else:
                checks.append(lambda labels, k=key: k in labels)
        else:
            raise SelectorError(f"unable to parse requirement: {requirement.strip()!r}")

    def predicate(obj: dict) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(check(labels) for check in checks)

    return predicate


def field_value(obj: dict, path: str) -> str:
    """The string value of a dotted field path (``spec.nodeName``); "" where it is missing, as the API does."""
    value: object = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_selector(selector: str | None) -> Predicate:
    """A predicate for ``fieldSelector`` (=, ==, != over dotted paths such as ``involvedObject.name``)."""
    if not selector:
        return lambda _obj: True
    checks = []
    for requirement in _requirements(selector):
        match = _EQUALITY.match(requirement)
        if not match:
            raise SelectorError(f"invalid field selector: {requirement.strip()!r}")
        path, operator, value = match.groups()
        checks.append((path, operator == "!=", value))

    def predicate(obj: dict) -> bool:
        return all((field_value(obj, path) == value) != negated for path, negated, value in checks)

    return predicate
